// Package archtest holds the tests that keep the module's shape: its
// import rules (imports_test.go: the orchestrator, runner, sits on top of
// the workloads, the store, the reports and the parsers, and nothing below
// it imports it) and its size limits (size_test.go: files and functions
// short enough to read). It has no code of its own.
package archtest
