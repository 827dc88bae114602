package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
)

func latencySample(cell, qdisc, gen, path string, p50, p99 float64, extra map[metric.Key]float64) results.Sample {
	m := map[metric.Key]float64{"rtt_p50_s": p50, "rtt_p99_s": p99, "rtt_idle_p50_s": 80e-6, "probe_loss_frac": 0.002, "qdisc_wait_p99_s": 12e-6}
	for k, v := range extra {
		m[k] = v
	}
	return results.Sample{Schema: 1, Run: "r", Cell: cell, Kernel: "running", Axes: map[string]string{"qdisc": qdisc, "generator": gen},
		Metrics: m, Emulated: true,
		Labels: map[string]string{"qdisc": qdisc, "generator": gen, "load_path": path, "probe_interval": "5ms",
			"rtt_p99_s_ci95": "0.0011..0.0016", "rtt_p999_s_ci95": "0.002..?"}}
}

// The latency table has one row block per qdisc in order of appearance,
// each load named with its path, the Transmitted row from the load's own
// metric, and one run's percentile intervals next to its value.
func TestLatencyTable(t *testing.T) {
	set := &results.Set{Samples: []results.Sample{
		latencySample("tap/iperf3-p1/noqueue", "noqueue", "iperf3", "tcp socket, through the qdisc", 300e-6, 1.2e-3, map[metric.Key]float64{"throughput_bps": 2e9}),
		latencySample("tap/iperf3-p1/pfifo_fast", "pfifo_fast", "iperf3", "tcp socket, through the qdisc", 400e-6, 1.3e-3, map[metric.Key]float64{"throughput_bps": 1.9e9}),
		latencySample("tap/trafgen/noqueue", "noqueue", "trafgen", "AF_PACKET with PACKET_QDISC_BYPASS, past the qdisc", 2e-3, 9e-3, map[metric.Key]float64{"tx_pps": 250e3, "lost_pps": 1e3}),
	}}
	r, err := Build(set, Options{Kinds: []string{KindLatency}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tables) != 1 || r.Tables[0].Kind != KindLatency {
		t.Fatalf("tables %+v, want one latency table", r.Tables)
	}
	tb := r.Tables[0]
	var order []string
	for _, row := range tb.Rows {
		if len(order) == 0 || order[len(order)-1] != row.Labels[0] {
			order = append(order, row.Labels[0])
		}
	}
	want := []string{
		"noqueue: tap/iperf3-p1 (tcp socket, through the qdisc)",
		"noqueue: tap/trafgen (AF_PACKET with PACKET_QDISC_BYPASS, past the qdisc)",
		"pfifo_fast: tap/iperf3-p1 (tcp socket, through the qdisc)",
	}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("row blocks\n%q\nwant\n%q", order, want)
	}
	cells := map[string]string{}
	for _, row := range tb.Rows {
		cells[row.Labels[0][:len("noqueue: tap/iperf3-p")]+"/"+row.Labels[1]] = row.Cells[0].Text
	}
	for k, v := range map[string]string{
		"noqueue: tap/iperf3-p/Throughput (received)": "2.00 Gbit/s",
		"noqueue: tap/trafgen /Transmitted":           "250 Kpps",
		"noqueue: tap/trafgen /Lost":                  "1.00 Kpps",
		"noqueue: tap/iperf3-p/RTT p50":               "300 us",
		"noqueue: tap/iperf3-p/RTT p99":               "1.20 ms [1.10-1.60]",
		"noqueue: tap/iperf3-p/probe loss":            "0.2%",
		"noqueue: tap/iperf3-p/qdisc wait p99":        "12.0 us",
	} {
		checkText(t, cells, k, v)
	}
	if _, ok := cells["noqueue: tap/iperf3-p/Lost"]; ok {
		t.Error("iperf3 rows have Lost, but its samples have no lost_pps")
	}
	var b bytes.Buffer
	if err := WriteText(&b, r, ASCII); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"latency under load", "every 5ms", "every column ran under QEMU TCG", "past the qdisc", "1 run per cell; [lo-hi]"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text output lacks %q:\n%s", s, b.String())
		}
	}
	if strings.Contains(b.String(), "1 runs") {
		t.Errorf("text output says \"1 runs\":\n%s", b.String())
	}
}

func TestIntervalText(t *testing.T) {
	for in, want := range map[string]string{
		"0.0011..0.0016": " [1.10-1.60]",
		"0.002..?":       " [2.00-?]",
		"":               "",
	} {
		if got := intervalText(in, units.Latency); got != want {
			t.Errorf("intervalText(%q) = %q, want %q", in, got, want)
		}
	}
}

// The HTML report draws a CDF per load and a time plot per sample from
// the samples' probes.csv and qdisc.csv, as well-formed SVG.
func TestLatencyPlots(t *testing.T) {
	dir := t.TempDir()
	art := filepath.Join("artifacts", "c", "running", "0")
	if err := os.MkdirAll(filepath.Join(dir, art), 0o755); err != nil {
		t.Fatal(err)
	}
	var recs []latency.Record
	var pts []latency.Point
	for i := range 400 {
		phase := latency.PhaseIdle
		if i >= 100 {
			phase = latency.PhaseLoad
		}
		sent := int64(1e18) + int64(i)*5e6
		recs = append(recs, latency.Record{Seq: uint32(i), Phase: phase, Size: 64, Sent: sent, Sched: sent + 1e3, Soft: sent + 2e3, Recv: sent + int64(100e3+i*1e3), Lost: i%50 == 49})
		pts = append(pts, latency.Point{T: sent, Phase: phase, Backlog: uint32(i * 10), TapTxBytes: uint64(i) * 1e4, TapTxDropped: uint64(i / 10)})
	}
	write := func(name string, f func(io.Writer) error) {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, art, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(latency.ArtifactName, func(w io.Writer) error { return latency.WriteCSV(w, recs) })
	write(latency.SeriesName, func(w io.Writer) error { return latency.WriteSeries(w, pts) })
	s := latencySample("tap/iperf3-p1/pfifo_fast", "pfifo_fast", "iperf3", "tcp socket, through the qdisc", 300e-6, 1.2e-3, nil)
	s.Dir = dir
	s.Artifacts = []string{filepath.Join(art, latency.ArtifactName), filepath.Join(art, latency.SeriesName)}
	r, err := Build(&results.Set{Samples: []results.Sample{s}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.LatencyRuns) != 1 || len(r.LatencyRuns[0].Probes) != 400 || len(r.LatencyRuns[0].Series) != 400 {
		t.Fatalf("latency runs %d, want 1 with 400 probes and readings", len(r.LatencyRuns))
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(b.String(), -1)
	var cdf, series int
	for _, sv := range svgs {
		d := xml.NewDecoder(strings.NewReader(sv))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("svg is not well-formed XML: %v", err)
			}
		}
		switch {
		case strings.Contains(sv, `aria-label="RTT CDF`):
			cdf++
		case strings.Contains(sv, `aria-label="time series`):
			series++
			// 300 answered-or-lost probes under load and 100 idle: every
			// answered one is a dot; 8 lost ones are marks at the top.
			if n := strings.Count(sv, "<circle"); n != 392 {
				t.Errorf("time plot has %d probe dots, want 392 answered probes", n)
			}
		}
	}
	if cdf != 1 || series != 1 {
		t.Errorf("%d CDF and %d time plots, want one each", cdf, series)
	}
}

// writeProbes writes a probes.csv of n load-phase probes whose RTTs are
// base plus a spread, under dir, and returns its artifact path.
func writeProbes(t *testing.T, dir, name string, n int, base float64) string {
	t.Helper()
	var recs []latency.Record
	for i := range n {
		sent := int64(1e18) + int64(i)*5e6
		rtt := base * (1 + float64(i%100)/100)
		sched := sent + 10_000
		wait := int64(rtt * 0.2 * 1e9) // the qdisc's share of the round trip
		recs = append(recs, latency.Record{Seq: uint32(i), Phase: latency.PhaseLoad, Size: 64, Sent: sent, Sched: sched, Soft: sched + wait, Recv: sent + int64(rtt*1e9)})
	}
	var b bytes.Buffer
	if err := latency.WriteCSV(&b, recs); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join("artifacts", name, latency.ArtifactName)
	if err := os.MkdirAll(filepath.Join(dir, "artifacts", name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return rel
}

// Stock against patched, 3 runs each: the RTT percentiles are compared
// run by run (latency.CompareRuns). Patched's RTTs are 30% longer in
// pfifo_fast and its runs agree to 2%: a change. In fq_codel they are
// 30% longer too, but runs spread by ±40%: not decided ("?"), as in
// noqueue, where both columns are alike.
func TestLatencyRunsChange(t *testing.T) {
	dir := t.TempDir()
	var samples []results.Sample
	spread := map[string][]float64{"pfifo_fast": {1, 1.01, 0.99}, "fq_codel": {1, 1.4, 0.6}, "noqueue": {1, 1.01, 0.99}}
	for _, cell := range []string{"tap/iperf3-p1/pfifo_fast", "tap/iperf3-p1/noqueue", "tap/iperf3-p1/fq_codel"} {
		q := cell[strings.LastIndex(cell, "/")+1:]
		for _, k := range []string{"stock", "patched"} {
			for rep := range 3 {
				base := 1e-3 * spread[q][rep]
				if k == "patched" {
					base = 1e-3 * spread[q][(rep+1)%3]
					if q != "noqueue" {
						base *= 1.3
					}
				}
				s := latencySample(cell, cell[strings.LastIndex(cell, "/")+1:], "iperf3", "tcp socket, through the qdisc", base, 2*base,
					map[metric.Key]float64{"qdisc_wait_p99_s": 0.4 * base})
				s.Kernel, s.Rep, s.Dir = k, rep, dir
				s.Artifacts = []string{writeProbes(t, dir, fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(cell, "/", "_"), k, rep), 2000, base)}
				samples = append(samples, s)
			}
		}
	}
	r, err := Build(&results.Set{Samples: samples}, Options{Kinds: []string{KindLatency}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, row := range r.Tables[0].Rows {
		got[row.Labels[0][:strings.Index(row.Labels[0], ":")]+" "+row.Labels[1]] = row.Cells[2].Text
	}
	for k, want := range map[string]string{
		"noqueue RTT p50": "? +0.00%", "noqueue RTT p99": "? +0.00%",
		"fq_codel RTT p50": "? +30.00%", "fq_codel RTT p99": "? +30.00%",
		"pfifo_fast qdisc wait p99": "+30.00%", "fq_codel qdisc wait p99": "? +30.00%", "noqueue qdisc wait p99": "? +0.00%",
		"pfifo_fast RTT idle p50": "same", // not a percentile compared run by run: the verdict rule (every run of both sides equal: SAME)
	} {
		if got[k] != want {
			t.Errorf("%s change = %q, want %q", k, got[k], want)
		}
	}
}

// An xdp_redirect load's Lost row is its own Lost (redirected minus
// transmitted, xdp_lost_pps), as in the xdp_redirect table, not the tap's
// tx_dropped (lost_pps), which tun_xdp_xmit counts once per refused batch;
// a pktgen load's Lost stays lost_pps. (The values are lab-review's stock
// TAP cells of 2026-12-02.)
func TestLatencyTableXDPLost(t *testing.T) {
	set := &results.Set{Samples: []results.Sample{
		latencySample("tap/xdp_redirect/fq_codel", "fq_codel", "xdp_redirect", "XDP_REDIRECT into tun_xdp_xmit, past the qdisc", 245e-3, 919e-3,
			map[metric.Key]float64{"xdp_tx_pps": 1190, "xdp_lost_pps": 3150, "xdp_redirect_pps": 4340, "lost_pps": 1000}),
		latencySample("tap/pktgen-t1/fq_codel", "fq_codel", "pktgen", "pktgen start_xmit, past the qdisc", 220e-3, 971e-3,
			map[metric.Key]float64{"tx_pps": 1340, "lost_pps": 15100}),
	}}
	r, err := Build(set, Options{Kinds: []string{KindLatency}})
	if err != nil {
		t.Fatal(err)
	}
	lost := map[string]float64{}
	for _, row := range r.Tables[0].Rows {
		if row.Labels[1] == "Lost" && row.Cells[0].Value != nil {
			lost[strings.SplitN(row.Labels[0], " ", 3)[1]] = *row.Cells[0].Value
		}
	}
	if lost["tap/xdp_redirect"] != 3150 || lost["tap/pktgen-t1"] != 15100 {
		t.Errorf("Lost rows %v: want xdp_redirect's 3150 (xdp_lost_pps) and pktgen's 15100 (lost_pps)", lost)
	}
}

// A UDP iperf3 stream's tap drops are in its own table too: its table
// showed Throughput alone, with a legend of a Retransmits row it did not
// have, and the 60 Kpps lost only in the latency table.
func TestIperf3TableLost(t *testing.T) {
	set := &results.Set{Samples: []results.Sample{
		latencySample("tap/iperf3-p1/udp", "pfifo_fast", "iperf3", "udp socket, through the qdisc", 50e-3, 0.2, map[metric.Key]float64{"throughput_bps": 102e6, "lost_pps": 60.3e3}),
	}}
	r, err := Build(set, Options{Kinds: []string{KindThread}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, r, ASCII); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| Lost ", "60.3 Kpps"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("iperf3 table lacks %q:\n%s", s, b.String())
		}
	}
	if notes := strings.Join(r.Tables[0].Notes, "\n"); !strings.Contains(notes, "Lost = packets dropped (the tap's tx_dropped) per second of the measurement window") {
		t.Errorf("iperf3 table's notes lack Lost's definition:\n%s", notes)
	}
}

// The HTML time plot's rolling p50 and p99 over 200 probes, at every
// probe of a 60 s sample at 5 ms (12,000): a value per index, no interval.
func BenchmarkRolling12k(b *testing.B) {
	vs := make([]float64, 12000)
	for i := range vs {
		vs[i] = float64((i * 7919) % 1000)
	}
	for b.Loop() {
		rolling(vs, 200, 0.5)
		rolling(vs, 200, 0.99)
	}
}
