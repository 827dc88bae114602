package report

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// trafgen sends a frame the tap refused again (it stays in its TX ring),
// so its tap drops are no packets lost: the packet table calls them
// Refused and says they are attempts. pktgen's stay Lost; a table of both
// keeps Lost and says whose are attempts. (The real quickstart run's
// golden shows trafgen's: Transmitted 11.9 Kpps, Refused 83.3 Kpps.)
func TestPacketTableRefusedForResenders(t *testing.T) {
	seen := func(gens ...string) workload.Seen {
		return workload.Seen{Positive: func(metric.Key) bool { return false }, Measured: func(metric.Key) bool { return true }, Generators: gens}
	}
	for _, tc := range []struct {
		gens      []string
		threads   int
		label     string
		note, not string
	}{
		{[]string{"trafgen"}, 1, "Refused", "Refused = sends the tap refused", "Lost ="},
		{[]string{"trafgen"}, 2, "Refused total", "Refused total = sends the tap refused", "Lost total ="},
		{[]string{"pktgen"}, 1, "Lost", "Lost = packets dropped", "Refused"},
		{[]string{"pktgen", "trafgen"}, 1, "Lost", "trafgen send a packet the tap refused again: on their rows Lost counts attempts", "Refused ="},
		{nil, 1, "Lost", "Lost = packets dropped", "Refused"},
	} {
		s := seen(tc.gens...)
		label := ""
		for _, r := range workload.PacketTable.Rows(tc.threads, s) {
			if r.Key == metric.LostPPS {
				label = r.Label
			}
		}
		notes := strings.Join(workload.PacketTable.Notes(tc.threads, s), "\n")
		if label != tc.label || !strings.Contains(notes, tc.note) || strings.Contains(notes, tc.not) {
			t.Errorf("%v, %d threads: lost_pps row %q, notes %q; want %q with %q and without %q", tc.gens, tc.threads, label, notes, tc.label, tc.note, tc.not)
		}
	}
}

// A Versus table shows one column (a kernel, or under --by backend a
// backend): its context names that column's own axes, not the others'.
// Real lab run: under --by backend the tap table said "vhost pinned to
// CPU 0 (tap+vhost)" and lost its "unpinned".
func TestVersusContextNamesOnlyItsColumn(t *testing.T) {
	r, err := Build(loadSet(t, "lab-pktgen-tcg"), Options{By: "backend"})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, tb := range r.Tables {
		if tb.Kind != KindVersus {
			continue
		}
		found++
		tap := strings.HasSuffix(tb.Context, "kernel tap")
		if tap && (strings.Contains(tb.Context, "(tap+vhost)") || !strings.Contains(tb.Context, "unpinned")) {
			t.Errorf("the tap column's table names another column's axes: %q", tb.Context)
		}
		if !tap && !strings.Contains(tb.Context, "vhost pinned to CPU 0 (tap+vhost)") {
			t.Errorf("the tap+vhost column's table lacks its own pin: %q", tb.Context)
		}
	}
	if found < 2 {
		t.Errorf("%d Versus tables, want one per backend", found)
	}
}
