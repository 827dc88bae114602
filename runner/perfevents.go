package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/scenarios"
)

// checkPerfEvents refuses, as bad input, a perf stat event of cells that
// this host's perf cannot parse (a typo: task-clok). The run booted the
// guest and failed its first cell, exit 1, with perf's usage text. Each
// event is tried alone on `true`; only perf's parser error counts: an
// unknown tracepoint or PMU may appear once the run has loaded its
// modules, and any other failure is left to the run.
func checkPerfEvents(ctx context.Context, cells []scenarios.Cell, ex proc.Executor) error {
	if ex == nil {
		return nil
	}
	var events []string
	for i := range cells {
		if st := cells[i].Perf.Stat; st != nil {
			for _, e := range st.Events {
				if !slices.Contains(events, e) {
					events = append(events, e)
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, e := range events {
		// No -o: perf writes a parser error there, not to stderr, whose
		// tail the error keeps (its message shows the last lines only,
		// the usage text).
		_, err := ex.Run(ctx, proc.Cmd{Argv: []string{"perf", "stat", "-x,", "-e", e, "--", "true"}})
		var xe *proc.ExitError
		if errors.As(err, &xe) && strings.Contains(xe.Tail, "event syntax error") && strings.Contains(xe.Tail, "parser error") {
			return fault.Input("perf.stat.events: this host's perf cannot parse event %q (perf stat: event syntax error); correct the name ('perf list' shows the events here)", e)
		}
	}
	return nil
}
