package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdValidate loads each scenario (file or built-in name), checks it
// against this machine's CPUs and prints "ok NAME: N cells, R runs". The
// first bad scenario stops it with that error (exit 2).
func cmdValidate(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", "FILE|NAME... [--set KEY=VALUE]...", stderr)
	sets := addSetFlag(fs)
	cpus := fs.Int("cpus", runtime.NumCPU(), "check CPU lists against this many CPUs (0 = skip the check)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("validate: give one or more scenario files or built-in names (vnetbench list shows the built-ins)")
	}
	for _, arg := range pos {
		s, err := scenarios.Resolve(arg, *sets...)
		if err != nil {
			return err
		}
		if err := s.CheckHost(scenarios.Host{NumCPU: *cpus}); err != nil {
			return err
		}
		for _, w := range s.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		cells, notes := runner.Distinct(s.Expand())
		for _, n := range append(s.Notes, notes...) {
			fmt.Fprintf(stderr, "note: %s\n", n)
		}
		runs := 0
		for _, c := range cells {
			runs += c.Repetitions
		}
		fmt.Fprintf(stdout, "ok %s: %s, %s\n", s.Name, units.Plural(len(cells), "cell"), units.Plural(runs, "run"))
	}
	return nil
}
