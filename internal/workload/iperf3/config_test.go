package iperf3

import (
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// seenOf is a Seen of runs that measured keys, each positive.
func seenOf(keys ...metric.Key) workload.Seen {
	has := func(k metric.Key) bool { return slices.Contains(keys, k) }
	return workload.Seen{Positive: has, Measured: has}
}

// A UDP table has Jitter and Datagrams lost rows, each defined by a
// footnote that names the receiver; a TCP table has Retransmits and
// neither (its runs have no jitter or loss metric).
func TestTableUDPRows(t *testing.T) {
	tab := Workload{}.Table()
	labels := func(seen workload.Seen) (out []string) {
		for _, r := range tab.Rows(1, seen) {
			out = append(out, r.Label)
		}
		return out
	}
	udp := seenOf(metric.ThroughputBPS, metric.Iperf3JitterS, metric.Iperf3LostFrac)
	tcp := seenOf(metric.ThroughputBPS, metric.Retransmits, metric.Iperf3SRTTS)
	if got := labels(udp); !slices.Equal(got, []string{"Throughput", "Jitter", "Datagrams lost"}) {
		t.Errorf("UDP rows %q", got)
	}
	if got := labels(tcp); !slices.Equal(got, []string{"Throughput", "Retransmits"}) {
		t.Errorf("TCP rows %q", got)
	}
	udpNotes := strings.Join(tab.Notes(1, udp), "\n")
	for _, want := range []string{"Jitter = the receiver's RFC 3550 interarrival jitter", "Datagrams lost = datagrams the receiver never saw",
		"the receiver is the guest's iperf3 server, with reverse the host's client"} {
		if !strings.Contains(udpNotes, want) {
			t.Errorf("UDP notes lack %q:\n%s", want, udpNotes)
		}
	}
	if n := strings.Join(tab.Notes(1, tcp), "\n"); strings.Contains(n, "Jitter") || strings.Contains(n, "Datagrams lost") {
		t.Errorf("TCP notes define UDP rows:\n%s", n)
	}
	// A table that shows Jitter alone (a per-metric view) defines it alone.
	udp.Shown = func(k metric.Key) bool { return k == metric.Iperf3JitterS }
	if n := udpNote(udp); !strings.HasPrefix(n, "Jitter =") || strings.Contains(n, "Datagrams lost") {
		t.Errorf("note of Jitter alone: %s", n)
	}
	ms := Workload{}.Metrics()
	for k, unit := range map[metric.Key]string{metric.Iperf3JitterS: "s", metric.Iperf3LostFrac: "fraction"} {
		i := slices.IndexFunc(ms, func(m metric.Metric) bool { return m.Key == k })
		if i < 0 || ms[i].Better != metric.LowerIsBetter || ms[i].Diagnostic || ms[i].Unit != unit {
			t.Errorf("%s: not a lower-is-better result metric in %s: %+v", k, unit, ms)
		}
	}
}
