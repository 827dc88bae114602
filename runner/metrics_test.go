package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/hostnet"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The lab case: pktgen (queue_xmit through fq_codel) reports 56 kpps, the
// tap carried 176 pps and dropped none; the rest died in the qdisc.
func TestFillMetricsQdiscDrops(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "pktgen"}, Qdisc: "fq_codel"}
	before := Counters{Tap: hostnet.LinkStats{TxPackets: 100, TxDropped: 7},
		Qdisc: hostnet.QdiscStats{Kind: "fq_codel", Drops: 1000}, Guest: GuestStats{RxPackets: 100}}
	after := Counters{Tap: hostnet.LinkStats{TxPackets: 100 + 2*176, TxDropped: 7},
		Qdisc: hostnet.QdiscStats{Kind: "fq_codel", Drops: 1000 + 2*55824}, Guest: GuestStats{RxPackets: 100 + 2*176}}
	s := &results.Sample{Metrics: map[string]float64{}}
	fillMetrics(s, c, &workload.Result{Metrics: map[string]float64{"tx_pps": 56000}, Threads: []workload.Thread{{I: 0, TxPPS: 56000}}}, before, after, 2*time.Second)
	want := map[string]float64{"tx_pps": 56000, "tap_tx_pps": 176, "lost_pps": 0, "qdisc_drops": 2 * 55824, "qdisc_drop_pps": 55824, "rx_pps": 176}
	for k, v := range want {
		if got, ok := s.Metrics[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if len(s.Warnings) != 1 {
		t.Fatalf("warnings %q, want one about the tx_pps / tap gap", s.Warnings)
	}
	const w = "pktgen reports 56000 pps but the tap's tx_packets grew at 176 pps (dropped 0 pps at the tap, 55824 pps in the qdisc)"
	if s.Warnings[0] != w {
		t.Errorf("warning\n got %q\nwant %q", s.Warnings[0], w)
	}
}

// Without qdisc drops the warning keeps its old text and qdisc_drop_pps
// is 0; without a comparable qdisc (none, or replaced during the window)
// neither qdisc metric is recorded.
func TestFillMetricsQdiscAbsent(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "pktgen"}}
	tap0 := hostnet.LinkStats{TxPackets: 0, TxDropped: 0}
	tap1 := hostnet.LinkStats{TxPackets: 1000, TxDropped: 4000}
	cases := []struct {
		name   string
		q0, q1 hostnet.QdiscStats
		want   bool
	}{
		{"same kind, no drops", hostnet.QdiscStats{Kind: "pfifo_fast", Drops: 5}, hostnet.QdiscStats{Kind: "pfifo_fast", Drops: 5}, true},
		{"no qdisc", hostnet.QdiscStats{}, hostnet.QdiscStats{}, false},
		{"replaced", hostnet.QdiscStats{Kind: "fq_codel", Drops: 900}, hostnet.QdiscStats{Kind: "pfifo_fast", Drops: 3}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &results.Sample{Metrics: map[string]float64{}}
			fillMetrics(s, c, &workload.Result{Metrics: map[string]float64{"tx_pps": 5000}}, Counters{Tap: tap0, Qdisc: tc.q0}, Counters{Tap: tap1, Qdisc: tc.q1}, time.Second)
			v, ok := s.Metrics["qdisc_drop_pps"]
			if ok != tc.want || v != 0 {
				t.Errorf("qdisc_drop_pps = %v (present %v), want 0 present=%v", v, ok, tc.want)
			}
			if _, ok := s.Metrics["qdisc_drops"]; ok != tc.want {
				t.Errorf("qdisc_drops present %v, want %v", ok, tc.want)
			}
			if len(s.Warnings) != 1 || !strings.HasSuffix(s.Warnings[0], "(dropped 4000 pps)") {
				t.Errorf("warnings %q, want one ending (dropped 4000 pps)", s.Warnings)
			}
		})
	}
}
