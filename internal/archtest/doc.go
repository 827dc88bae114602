// Package archtest holds the test that keeps the module's import rules
// (see its test file): the orchestrator (runner) sits on top of the
// workloads, the store, the reports and the parsers, and nothing below it
// imports it. It has no code of its own.
package archtest
