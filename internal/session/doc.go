// Package session runs a scenario as the CLI does, as one library call:
// Run loads it with the command line's changes (Spec), orders and shards
// its cells, estimates the run (refusing one past Options.MaxTime), runs
// the cells of other kernels in lab VMs (runner/lab) and those of the
// running kernel on this host (runner), records the rates it measured
// and prints the table. UntilDecided runs it in rounds until the gated
// comparisons are decided. `vnetbench run`, `run --until-decided` and
// `bisect` call these; the flags stay in cmd/vnetbench, which turns them
// into an Options value.
//
// It writes what the CLI prints to Options.Stdout and Options.Stderr; it
// parses no flags and maps no error to an exit code (internal/fault's
// classes say what kind each is). The estimates that plan and doctor
// print come from here too (EstimateCells, ShorterForm).
package session
