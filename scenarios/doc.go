// Package scenarios decodes and validates vnetbench scenario YAML and expands
// a scenario into named, ordered cells. It is pure: bytes in, a validated
// value out; it never executes programs or probes the host (facts about the
// host come in through Host).
//
// Every section lists its keys in a Fields method (internal/schema): the
// kind of each value is its constructor (Duration, SizeMiB, CPUs, Enum,
// Int with a range, ...), and doc, unit, default and axis are methods on
// the key. Decoding is strict and happens once: every key, every value,
// every element of an axis list and every generator kind is checked, and
// the first problem is an *Error ("file:line:col: what is wrong; how to fix
// it", exit code 2). The same lists generate docs/scenarios.md's scenario
// reference (Reference) and the plan's parameters (Cell.Params).
//
// The generator: section belongs to the workloads: each registered
// workload (internal/workload) contributes its key, its Fields and its
// Resolve rules; this package names no workload. A program that loads
// scenarios imports internal/workload/all (or registers its own).
//
// Load/LoadFile/Resolve give a *Scenario; Expand gives its cells (the
// cartesian product of every axis written as a YAML list, once per kernel);
// Order gives the seeded, interleaved run order; CheckHost checks CPU lists
// against the machine. What a cell means on the host (devices, commands,
// measurements) is the runner's business, not this package's.
package scenarios
