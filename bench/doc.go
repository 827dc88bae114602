// Package bench holds benchmarks of the vnetbench binary as a whole, run
// as a program rather than as a library: BenchmarkStartup measures what
// the Go runtime and the package inits cost before main, the part of a
// guest's boot between the kernel running /init (this binary) and the
// agent's first line. It has no code of its own.
package bench
