package store

import (
	"testing"

	"github.com/vnetbench/vnetbench/internal/history"
)

// A CSV column's direction from its name: a rate of drops, losses or
// errors is lower-is-better although it ends like a rate ("drop_pps",
// "errors_per_s", and "rx_drops", which ends in "ops"); before, the rate
// suffix won and a doubling of drops read as an improvement.
func TestGuessBetter(t *testing.T) {
	for _, tc := range []struct {
		name string
		want history.Better
	}{
		{"ops_per_s", history.HigherIsBetter},
		{"throughput_mbps", history.HigherIsBetter},
		{"iops", history.HigherIsBetter},
		{"rx_drops", history.LowerIsBetter},
		{"drop_pps", history.LowerIsBetter},
		{"errors_per_s", history.LowerIsBetter},
		{"packet_loss_bps", history.LowerIsBetter},
		{"udp_lost_frac", history.LowerIsBetter},  // iperf3_lost_frac in another tool's CSV
		{"lost_datagrams", history.LowerIsBetter}, // was neutral
		{"latency_ms", history.LowerIsBetter},
		{"run_s", history.LowerIsBetter},
		{"jitter", history.LowerIsBetter},
		{"widgets", history.Neutral},
		{"lost_pps", history.LowerIsBetter}, // the catalogue's
		{"tx_pps", history.HigherIsBetter},
	} {
		if got := GuessBetter(tc.name); got != tc.want {
			t.Errorf("GuessBetter(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
