package runner

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
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
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 56000}, Threads: []workload.Thread{{I: 0, TxPPS: 56000}}}, before, after, 2*time.Second)
	want := map[metric.Key]float64{"tx_pps": 56000, "tap_tx_pps": 176, "lost_pps": 0, "qdisc_drops": 2 * 55824, "qdisc_drop_pps": 55824, "rx_pps": 176}
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
			s := &results.Sample{Metrics: map[metric.Key]float64{}}
			sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 5000}}, Counters{Tap: tap0, Qdisc: tc.q0}, Counters{Tap: tap1, Qdisc: tc.q1}, time.Second)
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

// With the xdp-drop sink, rx_pps is what the guest's XDP program counted,
// not eth0's rx_packets; a workload's own lost_pps (over its own run
// time) replaces the window's.
func TestFillMetricsXDPSink(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "afxdp"}}
	before := Counters{Tap: hostnet.LinkStats{TxPackets: 10, TxDropped: 5},
		Guest: GuestStats{RxPackets: 100, Sink: "xdp-drop", XDPDrops: 40}}
	after := Counters{Tap: hostnet.LinkStats{TxPackets: 10 + 2000, TxDropped: 5 + 8000},
		Guest: GuestStats{RxPackets: 100 + 2100, Sink: "xdp-drop", XDPDrops: 40 + 1990}}
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 5000, "lost_pps": 3990}}, before, after, 2*time.Second)
	want := map[metric.Key]float64{"rx_pps": 995, "tap_tx_pps": 1000, "lost_pps": 3990, "tx_pps": 5000}
	for k, v := range want {
		if got := s.Metrics[k]; got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "afxdp reports 5000 pps but the tap's tx_packets grew at 1000 pps") {
		t.Errorf("warnings %q, want one: the tap passed on a fifth of the count", s.Warnings)
	}
	// A count of completions includes the tap's drops: no warning.
	s = &results.Sample{Metrics: map[metric.Key]float64{}}
	sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 5000, "lost_pps": 3990}, CountsDrops: true}, before, after, 2*time.Second)
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %q for a count that includes the tap's drops", s.Warnings)
	}
	// The sink changed during the window: eth0's count.
	before.Guest.Sink = "stack"
	s = &results.Sample{Metrics: map[metric.Key]float64{}}
	sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 5000}}, before, after, 2*time.Second)
	if s.Metrics["rx_pps"] != 1050 {
		t.Errorf("rx_pps = %v after a sink change, want eth0's 1050", s.Metrics["rx_pps"])
	}
}

// CPU per packet: each perf target's task-clock over the packets the
// generator sent (tx_pps x its run time); one target's key is the
// sample's target label.
func TestCPUPerPacket(t *testing.T) {
	s := &results.Sample{Metrics: map[metric.Key]float64{"tx_pps": 400000, "perf.task-clock@afxdp": 1.6,
		"perf.task-clock@vhost": 0.4, "perf.context-switches@vhost": 9}}
	CPUPerPacket(s, &workload.Result{Elapsed: 2 * time.Second})
	if got := s.Metrics["cpu_per_pkt.afxdp"]; got != 2000 {
		t.Errorf("cpu_per_pkt.afxdp = %v, want 2000 ns", got)
	}
	if got := s.Metrics["cpu_per_pkt.vhost"]; got != 500 {
		t.Errorf("cpu_per_pkt.vhost = %v, want 500 ns", got)
	}
	if len(s.Metrics) != 6 {
		t.Errorf("metrics %v, want two cpu_per_pkt keys added", s.Metrics)
	}
	one := &results.Sample{Metrics: map[metric.Key]float64{"tx_pps": 1000, "perf.task-clock": 0.5}, Labels: map[string]string{"target": "testpmd"}}
	CPUPerPacket(one, &workload.Result{Elapsed: time.Second})
	if got := one.Metrics["cpu_per_pkt.testpmd"]; got != 500000 {
		t.Errorf("cpu_per_pkt.testpmd = %v, want 500000 ns", got)
	}
	none := &results.Sample{Metrics: map[metric.Key]float64{"throughput_bps": 1e9, "perf.task-clock@iperf3": 1}}
	CPUPerPacket(none, &workload.Result{Elapsed: time.Second})
	if len(none.Metrics) != 2 {
		t.Errorf("without tx_pps: %v", none.Metrics)
	}
	if m, ok := results.Lookup("cpu_per_pkt.vhost"); !ok || m.Unit != "ns" || m.Better != metric.LowerIsBetter {
		t.Errorf("cpu_per_pkt.vhost is %+v", m)
	}
	// A generator's own packet count wins over tx_pps x a run time that
	// may be another interval: pktgen sent 5000 packets, its kpktgend
	// thread ran 1 ms of CPU for them.
	pk := &results.Sample{Metrics: map[metric.Key]float64{"tx_pps": 4251, "perf.task-clock@kpktgend": 0.001}}
	CPUPerPacket(pk, &workload.Result{Elapsed: 2700 * time.Millisecond, Packets: 5000})
	if got := pk.Metrics["cpu_per_pkt.kpktgend"]; got != 200 {
		t.Errorf("cpu_per_pkt.kpktgend = %v, want 200 ns (1 ms / 5000 packets)", got)
	}
}

// A workload with a clock of its own (pktgen) gives lost_pps over that
// clock, which replaces the window's; the packet counts, not the rates of
// two intervals, are checked against the tap.
func TestFillMetricsOneClock(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "pktgen"}}
	before := Counters{Tap: hostnet.LinkStats{TxPackets: 10, TxDropped: 100}}
	after := Counters{Tap: hostnet.LinkStats{TxPackets: 10 + 5000, TxDropped: 100 + 261164}}
	res := &workload.Result{Packets: 5000, Metrics: map[metric.Key]float64{"tx_pps": 5000 / 1.176148, "lost_pps": 261164 / 1.176148, "tx_run_s": 1.176148}}
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	sampleMetrics(s, c, res, before, after, 2700*time.Millisecond)
	if got := s.Metrics["lost_pps"]; got != 261164/1.176148 {
		t.Errorf("lost_pps %.0f, want the workload's %.0f (not the window's %.0f)", got, 261164/1.176148, 261164/2.7)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %q: the tap carried all 5000 packets", s.Warnings)
	}
	// The tap carried a tenth of what pktgen counted: warn, with counts.
	after.Tap.TxPackets = 10 + 500
	s = &results.Sample{Metrics: map[metric.Key]float64{}}
	sampleMetrics(s, c, res, before, after, 2700*time.Millisecond)
	if len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0], "pktgen sent 5000 packets but the tap's tx_packets grew by 500 (") {
		t.Errorf("warnings %q", s.Warnings)
	}
}

// A sample carries what its table's context says beyond the axes: the
// packets per thread (or the duration) and the guest.
func TestAddContextLabels(t *testing.T) {
	s, err := scenarios.Load("t.yaml", []byte("generator: {pktgen: {count: 5000}, iperf3: {duration: 20s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"count": "5000", "guest": "VM (6.1.0-41-cloud-amd64)"}, {"duration": "20s", "guest": "VM (6.1.0-41-cloud-amd64)"}}
	for i, c := range s.Expand() {
		smp := &results.Sample{Labels: map[string]string{}}
		addContextLabels(smp, &c, "6.1.0-41-cloud-amd64")
		if fmt.Sprint(smp.Labels) != fmt.Sprint(want[i]) {
			t.Errorf("%s: labels %v, want %v", c.Name, smp.Labels, want[i])
		}
	}
}

// perf stat's multiplexing column ("(83.29%)") stays with the sample: the
// counters that did not run all the time, by metric key, and none for
// those that did (task-clock, the software events).
func TestAddPerfStatMultiplexed(t *testing.T) {
	b, err := os.ReadFile("testdata/perf-stat-multiplexed.txt")
	if err != nil {
		t.Fatal(err)
	}
	st, err := perfparse.ParsePerfStat(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	unsupported, notCounted := addPerfStat(s, st, "kpktgend", true)
	if len(unsupported) != 0 || strings.Join(notCounted, ",") != "L1-dcache-loads" {
		t.Errorf("unsupported %v, not counted %v; want none and L1-dcache-loads", unsupported, notCounted)
	}
	want := map[metric.Key]float64{"perf.cycles@kpktgend": 0.8329, "perf.stalled-cycles-frontend@kpktgend": 0.8331,
		"perf.stalled-cycles-backend@kpktgend": 0.6669, "perf.instructions@kpktgend": 0.8336,
		"perf.branches@kpktgend": 0.8336, "perf.branch-misses@kpktgend": 0.8333}
	if len(s.PerfRunning) != len(want) {
		t.Errorf("perf_running %v, want %v", s.PerfRunning, want)
	}
	for k, v := range want {
		if got, ok := s.PerfRunning[k]; !ok || math.Abs(got-v) > 1e-9 {
			t.Errorf("perf_running[%s] = %v (%v), want %v", k, got, ok, v)
		}
	}
	if _, ok := s.PerfRunning["perf.task-clock@kpktgend"]; ok || s.Metrics["perf.task-clock@kpktgend"] == 0 {
		t.Errorf("task-clock: running %v, value %v; want counted all the time", s.PerfRunning, s.Metrics["perf.task-clock@kpktgend"])
	}
	if s.Metrics["perf.cycles@kpktgend"] != 301876543210 {
		t.Errorf("cycles = %v", s.Metrics["perf.cycles@kpktgend"])
	}
}

// TestOneClockAtKVMSpeed: under KVM pktgen sends at Mpps, so a short run
// (50,000 packets in 20 ms) sits in a window 500 times longer (the start
// and reset writes, result reads; perf's start-up waits are before it).
// Transmitted and Lost stay on pktgen's clock (what its Result reports:
// all packets and the tap's drops over its own run time), the tap
// cross-check compares packet counts (no false alarm from the long
// window), and CPU per packet divides by pktgen's count.
func TestOneClockAtKVMSpeed(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "pktgen"}}
	before := Counters{Tap: hostnet.LinkStats{TxPackets: 1000, TxDropped: 10}, Guest: GuestStats{RxPackets: 1000}}
	after := Counters{Tap: hostnet.LinkStats{TxPackets: 1000 + 50000, TxDropped: 10 + 150000}, Guest: GuestStats{RxPackets: 1000 + 50000}}
	run := 20 * time.Millisecond
	res := &workload.Result{Elapsed: run, Packets: 50000,
		Metrics: map[metric.Key]float64{"tx_pps": 50000 / run.Seconds(), "lost_pps": 150000 / run.Seconds(), "tx_run_s": run.Seconds()}}
	s := &results.Sample{Metrics: map[metric.Key]float64{"perf.task-clock@kpktgend": 0.02}}
	sampleMetrics(s, c, res, before, after, 10*time.Second)
	if s.Metrics["tx_pps"] != 2.5e6 || s.Metrics["lost_pps"] != 7.5e6 {
		t.Errorf("Transmitted %v, Lost %v; want 2.5 Mpps and 7.5 Mpps (both over pktgen's 20 ms)", s.Metrics["tx_pps"], s.Metrics["lost_pps"])
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "tap") {
			t.Errorf("false tap cross-check: %s", w)
		}
	}
	CPUPerPacket(s, res)
	if got := s.Metrics["cpu_per_pkt.kpktgend"]; math.Abs(got-400) > 1e-9 {
		t.Errorf("cpu_per_pkt.kpktgend = %v ns, want 400 (20 ms of CPU / 50,000 packets)", got)
	}
}

// sampleMetrics computes a sample's metrics as runSample does: the
// counters over the window, then the workload's result.
func sampleMetrics(s *results.Sample, c *scenarios.Cell, res *workload.Result, before, after Counters, window time.Duration) {
	windowMetrics(s, c, res, before, after, window)
}
