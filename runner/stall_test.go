package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The CI case (TestLabPktgenE2E under load 10-24): in the patched lab the
// nested guest did not read its virtio queue for seconds, the tap's
// queue stayed stopped, and pktgen (1 thread, 3 s) sent 0 packets. The
// sample stays, with the reason: a stalled receiver. A reader that took
// half a ring or more gave a stopped queue room to wake (tun's
// backpressure wakes it at half): no stall, and the warning says so. A
// generator that sent packets, or never ran (no run time of its own),
// gets no such warning.
func TestStalledReceiverWarning(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "pktgen"}}
	zero := &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 0, "tx_run_s": 3}, Elapsed: 3 * time.Second}
	idle := &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 0}, Elapsed: 3 * time.Second}
	sent := &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 1000, "tx_run_s": 3}, Packets: 3000, Elapsed: 3 * time.Second}
	cases := []struct {
		name       string
		res        *workload.Result
		read, ring uint64
		want       string // "" = no warning from the check
	}{
		{"stalled", zero, 12, 500, "stalled receiver: pktgen sent no packets in the 4.0 s window (its own run 3.0 s) while the tap's reader took 12 (less than half its 500-packet ring) and the guest received 10: the guest did not drain the tap (starved of CPU?), and a full ring holds the generator at 0; Transmitted 0 here measures the receiver, not the datapath"},
		{"ring unknown", zero, 0, 0, "stalled receiver: pktgen sent no packets in the 4.0 s window (its own run 3.0 s) while the tap's reader took 0 (less than half its 500-packet ring)"},
		{"reader took half a ring", zero, 250, 500, "pktgen sent no packets in the 4.0 s window (its own run 3.0 s) although the tap's reader took 250 (half its 500-packet ring or more): not a stalled receiver; was the tap's tx queue left stopped?"},
		{"just under half", zero, 249, 500, "stalled receiver: pktgen sent no packets in the 4.0 s window (its own run 3.0 s) while the tap's reader took 249 (less than half"},
		{"sent", sent, 3000, 500, ""},
		{"never ran", idle, 0, 500, ""},
	}
	for _, tc := range cases {
		before := Counters{Tap: hostnet.LinkStats{TxPackets: 100, TxQLen: int(tc.ring)}, Guest: GuestStats{RxPackets: 50}}
		after := Counters{Tap: hostnet.LinkStats{TxPackets: 100 + tc.read, TxQLen: int(tc.ring)}, Guest: GuestStats{RxPackets: 60}}
		s := &results.Sample{Metrics: map[metric.Key]float64{}, WindowS: 4}
		sampleMetrics(s, c, tc.res, before, after, 4*time.Second)
		var got string
		for _, w := range s.Warnings {
			if strings.Contains(w, "sent no packets in the") {
				got = w
			}
		}
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: warning %q, want %q", tc.name, got, tc.want)
		}
		if s.Metrics["tx_pps"] != tc.res.Metrics["tx_pps"] {
			t.Errorf("%s: tx_pps %v: the sample is kept as measured", tc.name, s.Metrics["tx_pps"])
		}
	}
}
