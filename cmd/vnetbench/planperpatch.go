package main

import (
	"fmt"
	"io"

	"github.com/vnetbench/vnetbench/internal/session"
)

// writePerPatch prints the columns of a per-patch plan.
func writePerPatch(w io.Writer, cols []session.PlanColumn) {
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "per patch: %d columns, one more patch each:\n", len(cols))
	for _, c := range cols {
		what := "the base"
		if c.Patch != "" {
			what = "+ " + c.Patch
			if c.Subject != "" {
				what += " (" + c.Subject + ")"
			}
		}
		fmt.Fprintf(w, "  %-6s %s\n         build: %s\n", c.Kernel, what, c.Build)
	}
}
