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
