package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
)

// iperf3Tables returns set's iperf3 tables, each with its Retransmits
// cells' texts (nil: no such row) and whether its notes define
// Retransmits.
func iperf3Tables(t *testing.T, set *results.Set) map[string][]string {
	t.Helper()
	r, err := Build(set, Options{Kinds: []string{KindThread}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, tab := range r.Tables {
		if !strings.HasPrefix(tab.Context, "iperf3") {
			continue
		}
		var cells []string
		for _, row := range tab.Rows {
			if row.Labels[len(row.Labels)-1] == "Retransmits" {
				for _, c := range row.Cells {
					cells = append(cells, c.Text)
				}
			}
		}
		if strings.Contains(strings.Join(tab.Notes, "\n"), "Retransmits =") {
			cells = append(cells, "legend")
		}
		out[tab.Context] = cells
	}
	return out
}

// A UDP stream has no retransmits (iperf3 reports none, so its samples
// have no retransmits metric): its table has no Retransmits row and no
// legend of one. A TCP table has both, also where every run counted 0
// (0 retransmits is a measurement): a row tied to "some run positive"
// once lost it. Real runs: iperf3-udp-tcp-tcg (quickstart with
// protocol [tcp, udp]; TCP had 6 and 3 retransmits), and noise-tcg's
// two TCP runs that had 0.
func TestIperf3RetransmitsWhereMeasured(t *testing.T) {
	set := loadSet(t, "iperf3-udp-tcp-tcg")
	tabs := iperf3Tables(t, set)
	var udp, tcp int
	for ctx, cells := range tabs {
		switch {
		case strings.Contains(ctx, "protocol udp"):
			udp++
			if len(cells) > 0 {
				t.Errorf("UDP table %q: Retransmits %v, want neither a row nor a legend", ctx, cells)
			}
		case strings.Contains(ctx, "protocol tcp"):
			tcp++
			if !slices.Equal(cells, []string{"4.50", "legend"}) {
				t.Errorf("TCP table %q: Retransmits %v, want the median of 6 and 3 and the legend", ctx, cells)
			}
		}
	}
	if udp != 1 || tcp != 1 {
		t.Fatalf("iperf3 tables %v, want one UDP and one TCP", tabs)
	}

	noise, err := results.Load(noiseRun)
	if err != nil {
		t.Fatal(err)
	}
	noise.Samples = slices.DeleteFunc(noise.Samples, func(s results.Sample) bool {
		v, ok := s.Metrics["retransmits"]
		return !ok || v != 0
	})
	if len(noise.Samples) != 2 {
		t.Fatalf("noise-tcg: %d TCP runs with 0 retransmits, want 2", len(noise.Samples))
	}
	zero := iperf3Tables(t, noise)
	if len(zero) != 1 {
		t.Fatalf("noise-tcg's runs with 0 retransmits: iperf3 tables %v, want one", zero)
	}
	for ctx, cells := range zero {
		if !slices.Equal(cells, []string{"0", "legend"}) {
			t.Errorf("TCP table %q of runs with 0 retransmits: Retransmits %v, want a row of 0 and the legend", ctx, cells)
		}
	}
}
