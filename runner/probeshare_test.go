package runner

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// probe_share_frac is the probe's requests per second over the load's
// packet rate, tx_pps before rx_pps, with a warning past 0.1%.
func TestProbeShare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		metrics map[metric.Key]float64
		sent    int
		want    float64 // -1: no metric
		warns   bool
	}{
		{"pktgen under TCG", map[metric.Key]float64{"tx_pps": 2000, "rx_pps": 1800}, 1000, 0.1, true},
		{"Mpps load", map[metric.Key]float64{"tx_pps": 2e6}, 1000, 1e-4, false},
		{"iperf3: rx only", map[metric.Key]float64{"rx_pps": 500000}, 1000, 4e-4, false},
		{"no load rate", map[metric.Key]float64{}, 1000, -1, false},
		{"no probe", map[metric.Key]float64{"tx_pps": 2000}, 0, -1, false},
	} {
		s := &results.Sample{WindowS: 5, Metrics: tc.metrics}
		probeShare(s, tc.sent)
		got, ok := s.Metrics["probe_share_frac"]
		if tc.want < 0 {
			if ok {
				t.Errorf("%s: probe_share_frac %g, want none", tc.name, got)
			}
			continue
		}
		if !ok || got < tc.want*0.999 || got > tc.want*1.001 {
			t.Errorf("%s: probe_share_frac %g (present %v), want %g", tc.name, got, ok, tc.want)
		}
		warned := len(s.Warnings) == 1 && strings.Contains(s.Warnings[0], "the probe is part of the load")
		if warned != tc.warns {
			t.Errorf("%s: warnings %q, want a warning %v", tc.name, s.Warnings, tc.warns)
		}
	}
}
