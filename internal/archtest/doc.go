// Package archtest holds the tests that keep the module's shape: its
// import rules (imports_test.go: the orchestrator, runner, sits on top of
// the workloads, the store, the reports and the parsers, and nothing below
// it imports it), its size limits (size_test.go: files and functions
// short enough to read; methods_test.go: no type with more than 20
// methods), its metric keys (metrickeys_test.go: named by
// internal/metric's constants) and its one VM stack (vmstack_test.go: QEMU
// argv from runner/qemu's devices, every VM started by qemu.Start, modules
// loaded by vmimages/vminit, shared names written once). It has no code of
// its own.
package archtest
