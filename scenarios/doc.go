// Package scenarios decodes and validates vnetbench scenario YAML and expands
// a scenario into named, ordered cells. It is pure: bytes in, a validated
// value out; it never executes programs or probes the host (facts about the
// host come in through Host).
//
// Decoding is strict. A schema walker driven by the struct tags in types.go
// checks every key and value and reports the first problem as an *Error
// ("file:line:col: what is wrong; how to fix it", exit code 2); yaml.v3 with
// KnownFields(true) decodes the same file as an independent backstop. The
// same tags generate the README's scenario reference (Reference).
//
// Load/LoadFile/Resolve give a *Scenario; Expand gives its cells (the
// cartesian product of every axis written as a YAML list, once per kernel);
// Order gives the seeded, interleaved run order; CheckHost checks CPU lists
// against the machine. What a cell means on the host (devices, commands,
// measurements) is the runner's business, not this package's.
package scenarios
