package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/proc"
	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdDoctor reports what this host can run and what is missing.
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("doctor", "", stderr)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("doctor: takes no arguments")
	}
	d := runner.RunDoctor(ctx, proc.Real{})
	writeDoctor(stdout, d)
	return nil
}

func writeDoctor(w io.Writer, d *runner.Doctor) {
	fmt.Fprintln(w, "host:")
	for _, c := range d.Checks {
		mark := "ok  "
		switch {
		case !c.OK && c.Warn:
			mark = "warn"
		case !c.OK:
			mark = "MISS"
		}
		fmt.Fprintf(w, "  %s %-18s %s\n", mark, c.Name, c.Detail)
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(w, "       %-18s -> %s\n", "", c.Fix)
		}
	}
	fmt.Fprintln(w, "\nbuilt-in scenarios:")
	for _, b := range scenarios.Builtins() {
		s, err := scenarios.Resolve(b.Name)
		if err != nil {
			fmt.Fprintf(w, "  %-30s broken: %v\n", b.Name, err)
			continue
		}
		cells := s.Expand()
		miss := d.Missing(cells)
		if len(miss) == 0 {
			if labs := runner.LabKernels(cells); len(labs) > 0 {
				fmt.Fprintf(w, "  %-30s can run here, kernels %s in lab VMs (slow under TCG)\n", b.Name, strings.Join(labs, ", "))
			} else {
				fmt.Fprintf(w, "  %-30s can run here\n", b.Name)
			}
			continue
		}
		fmt.Fprintf(w, "  %-30s cannot run here: %s\n", b.Name, strings.Join(miss, "; "))
	}
}
