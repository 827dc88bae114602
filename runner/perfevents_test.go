package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/scenarios"
)

// A perf stat event this host's perf cannot parse (task-clok) is bad
// input before anything is set up: the run booted the guest and failed
// its first cell, exit 1, with perf's usage text. An unknown tracepoint
// is not refused (its module may load during the run), nor is a known
// event this host cannot count (cycles in a VM).
func TestPreflightRefusesUnparsablePerfEvent(t *testing.T) {
	testenv.NeedRoot(t, "preflight probes qdiscs in a network namespace")
	for _, c := range []struct{ name, pkg string }{{"perf", "linux-perf"}, {"trafgen", "netsniff-ng"}, {"qemu-system-x86_64", "qemu-system-x86"}} {
		testenv.NeedCommand(t, c.name, c.pkg)
	}
	for _, tc := range []struct {
		events string
		bad    string // "" = accepted
	}{
		{"[task-clock, task-clok, cycles]", "task-clok"},
		{"[task-clock, cycles, 'sched:vnb_no_such_tracepoint']", ""},
	} {
		s, err := scenarios.Load("p.yaml", []byte(`name: p
backend: tap
qdisc: pfifo_fast
generator: {trafgen: {}}
perf: {stat: {targets: [qemu], events: `+tc.events+`}}
repetitions: 1
`))
		if err != nil {
			t.Fatal(err)
		}
		err = Preflight(t.Context(), s.Expand(), proc.Real{})
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("events %s: %v, want none refused", tc.events, err)
		case tc.bad != "" && (!errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), `"`+tc.bad+`"`)):
			t.Errorf("events %s: %v, want bad input naming %q", tc.events, err, tc.bad)
		}
	}
}
