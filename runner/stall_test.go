package runner

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/internal/workload/pktgen"
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

// A stopped queue wakes on room in its own ring: pktgen's 4 threads on
// a 4-queue tap (QUEUE_MAP_CPU, a queue each) stall only while each
// queue's reader takes less than half of its ring, so the bar is half a
// ring per queue they send on, 1000 here, not one queue's 250. Threads
// that share queue 0 (simple, sample01) or whose queue the tap picks
// (queue_xmit) keep one queue's bar.
func TestStalledReceiverPerQueue(t *testing.T) {
	zero := &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 0, "tx_run_s": 3}, Elapsed: 3 * time.Second}
	mq := func(mode, xmit string, threads, queues int) *scenarios.Cell {
		return &scenarios.Cell{Queues: queues, Generator: scenarios.Generator{Kind: "pktgen",
			Config: &pktgen.Config{Mode: mode, Threads: threads, XmitMode: xmit}}}
	}
	for _, tc := range []struct {
		name  string
		c     *scenarios.Cell
		read  uint64
		stall bool
	}{
		{"4 threads, 4 queues, 600 read", mq(pktgen.ModeMultiqueue, "", 4, 4), 600, true},
		{"4 threads, 4 queues, 1000 read", mq(pktgen.ModeMultiqueue, "", 4, 4), 1000, false},
		{"4 threads, 2 queues, 600 read", mq(pktgen.ModeMultiqueue, "", 4, 2), 600, false},
		{"2 threads, 4 queues, 400 read", mq(pktgen.ModeMultiqueue, "", 2, 4), 400, true},
		{"4 threads, 1 queue, 300 read", mq(pktgen.ModeMultiqueue, "", 4, 1), 300, false},
		{"queue_xmit, 4 queues, 300 read", mq(pktgen.ModeMultiqueue, "queue_xmit", 4, 4), 300, false},
		{"simple, 4 queues, 300 read", mq(pktgen.ModeSimple, "", 1, 4), 300, false},
	} {
		before := Counters{Tap: hostnet.LinkStats{TxPackets: 100, TxQLen: 500}}
		after := Counters{Tap: hostnet.LinkStats{TxPackets: 100 + tc.read, TxQLen: 500}}
		s := &results.Sample{Metrics: map[metric.Key]float64{}, WindowS: 4}
		sampleMetrics(s, tc.c, zero, before, after, 4*time.Second)
		if got := slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, StalledReceiver+": ") }); got != tc.stall {
			t.Errorf("%s: stalled receiver %v, want %v: %q", tc.name, got, tc.stall, s.Warnings)
		}
	}
}

// The warning reads the window's counts from NetMetrics (tx_packets, and
// rx_pps over the window) instead of the counters again, so both agree
// at their edges. A counter that went back (a device made anew) measured
// nothing: its metrics are left out (not 2^64 less a little, nor a
// made-up 0) and the sample says which counter; without the tap's count
// there is no stall warning, without the guest's the warning says its
// count is unknown. With the xdp-drop sink the guest received
// what its program counted, as rx_pps says; a window of 3.7 s gives the
// count back exactly. A sample without the tap's count, or without a
// window, cannot tell a stall from a lost wake: no warning.
func TestStalledReceiverCountsFromNetMetrics(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "pktgen"}}
	zero := &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 0, "tx_run_s": 3}, Elapsed: 3 * time.Second}
	at := func(tap, rx, xdp uint64, sink string) Counters {
		return Counters{Tap: hostnet.LinkStats{TxPackets: tap, TxQLen: 500}, Guest: GuestStats{RxPackets: rx, XDPDrops: xdp, Sink: sink},
			Qdisc: hostnet.QdiscStats{Kind: "fq_codel", Drops: tap}}
	}
	for _, tc := range []struct {
		name          string
		before, after Counters
		window        time.Duration
		want          string
	}{
		{"guest counter went back", at(100, 900, 0, ""), at(112, 5, 0, ""), 4 * time.Second, "reader took 12 (less than half its 500-packet ring) and the guest received an unknown number (its counter went back):"},
		{"xdp-drop sink", at(100, 50, 20, "xdp-drop"), at(112, 60, 27, "xdp-drop"), 4 * time.Second, "reader took 12 (less than half its 500-packet ring) and the guest received 7:"},
		{"3.7 s window", at(100, 50, 0, ""), at(349, 60, 0, ""), 3700 * time.Millisecond, "pktgen sent no packets in the 3.7 s window (its own run 3.0 s) while the tap's reader took 249 (less than half its 500-packet ring) and the guest received 10:"},
		{"quiet counters", at(100, 50, 0, ""), at(100, 50, 0, ""), 4 * time.Second, "reader took 0 (less than half its 500-packet ring) and the guest received 0:"},
	} {
		s := &results.Sample{Metrics: map[metric.Key]float64{}, WindowS: tc.window.Seconds()}
		sampleMetrics(s, c, zero, tc.before, tc.after, tc.window)
		for _, k := range []metric.Key{metric.TxPackets, metric.TapTxPPS, metric.RxPPS, metric.QdiscDrops} {
			if v := s.Metrics[k]; v > 1e6 {
				t.Errorf("%s: %s = %v from a counter that went back", tc.name, k, v)
			}
		}
		if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, StalledReceiver+": ") && strings.Contains(w, tc.want) }) {
			t.Errorf("%s: warnings %q, want a stalled receiver with %q", tc.name, s.Warnings, tc.want)
		}
	}
	s := &results.Sample{Metrics: map[metric.Key]float64{}, WindowS: 4}
	sampleMetrics(s, c, zero, at(900, 50, 0, ""), at(30, 60, 0, ""), 4*time.Second)
	_, tx := s.Metrics[metric.TxPackets]
	_, tap := s.Metrics[metric.TapTxPPS]
	want := []string{"the tap's tx_packets went back from 900 to 30 in the window (a device made anew?): what it counts was not measured",
		"the root qdisc's drops went back from 900 to 30 in the window (a device made anew?): what it counts was not measured"}
	if tx || tap || s.Metrics[metric.RxPPS] != 2.5 || !slices.Equal(s.Warnings, want) {
		t.Errorf("tap counter went back: metrics %v, warnings %q; want no tx_packets or tap_tx_pps, rx_pps 2.5, and only %q", s.Metrics, s.Warnings, want)
	}
	counted := map[metric.Key]float64{"tx_pps": 0, "tx_run_s": 3, "tx_packets": 12, "rx_pps": 2.5}
	for _, tc := range []struct {
		name    string
		drop    metric.Key
		windowS float64
	}{{"no tap count", metric.TxPackets, 4}, {"no window", "", 0}} {
		s := &results.Sample{Metrics: maps.Clone(counted), WindowS: tc.windowS}
		delete(s.Metrics, tc.drop)
		if w := stallWarning(s, c, zero, 500); w != "" {
			t.Errorf("%s: warning %q, want none", tc.name, w)
		}
	}
	if w := stallWarning(&results.Sample{Metrics: maps.Clone(counted), WindowS: 4}, c, zero, 500); !strings.Contains(w, "took 12 (less than half its 500-packet ring) and the guest received 10:") {
		t.Errorf("counted: warning %q, want the tap's 12 and the guest's 10", w)
	}
}

// A tap counter that went back measured nothing, so the check of a
// generator's count against the tap has no tap count to compare: no
// "grew at" warning made of an absent tx_packets (read as 0) plus the
// drops, or of tx_packets without the drops a count of completions
// includes (CountsDrops: afxdp, testpmd). Only the counter's own
// warning says what was not measured.
func TestTapCheckSkipsCountersThatWentBack(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "afxdp"}}
	tap := func(tx, drop uint64) Counters {
		return Counters{Tap: hostnet.LinkStats{TxPackets: tx, TxDropped: drop}}
	}
	for _, tc := range []struct {
		name          string
		before, after Counters
		res           map[metric.Key]float64
	}{
		{"tx_packets went back", tap(9000, 5), tap(10, 5+4000), map[metric.Key]float64{"tx_pps": 5000, "lost_pps": 2000}},
		{"tx_dropped went back", tap(10, 9000), tap(10+2000, 100), map[metric.Key]float64{"tx_pps": 5000}},
	} {
		s := &results.Sample{Metrics: map[metric.Key]float64{}, WindowS: 2}
		sampleMetrics(s, c, &workload.Result{Metrics: tc.res, CountsDrops: true}, tc.before, tc.after, 2*time.Second)
		if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "went back") {
			t.Errorf("%s: warnings %q, want only the counter's", tc.name, s.Warnings)
		}
	}
}

// The tap cross-check's warning says what was dropped; a tap drop count
// left out (its counter went back) reads as not measured, not 0 pps.
func TestDroppedText(t *testing.T) {
	for _, tc := range []struct {
		m    map[metric.Key]float64
		want string
	}{
		{map[metric.Key]float64{metric.LostPPS: 12}, "dropped 12 pps"},
		{map[metric.Key]float64{metric.LostPPS: 0, metric.QdiscDropPPS: 3}, "dropped 0 pps at the tap, 3 pps in the qdisc"},
		{map[metric.Key]float64{}, "the tap's drops not measured"},
	} {
		if got := droppedText(tc.m); got != tc.want {
			t.Errorf("droppedText(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
