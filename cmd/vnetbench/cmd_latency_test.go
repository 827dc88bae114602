package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/latency"
)

// The latency-quickstart built-in end to end: a TCG guest, iperf3 TCP and
// UDP through noqueue and pfifo_fast, the probe through the same tap. The
// probe must have run at its rate for the whole window, its percentiles
// must be ordered, TCP must not starve it, the qdisc wait must have been
// stamped, and each sample's probes.csv must hold what its metrics say.
func TestRunLatencyQuickstartE2E(t *testing.T) {
	needRunHost(t)
	bin := vnetbenchBin(t)
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.CommandContext(t.Context(), bin, "run", "latency-quickstart", "-o", dir, "--seed", "7", "--lock-wait", "30m")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	checkRunLeftNothing(t, dir)
	if err != nil {
		t.Fatalf("run latency-quickstart: %v", err)
	}
	// The table's block labels wrap; whole phrases are checked in the
	// samples' labels below.
	for _, want := range []string{"latency under load", "RTT p99", "qdisc wait p99", "iperf3 sRTT", "pfifo_fast:", "noqueue:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Errorf("no plots: %v", err)
	}
	if n := strings.Count(string(html), `aria-label="time series`); n != 4 {
		t.Errorf("report.html has %d time plots, want one per sample (4)", n)
	}
	if n := strings.Count(string(html), `aria-label="RTT CDF`); n != 2 {
		t.Errorf("report.html has %d RTT CDFs, want one per load (tcp, udp)", n)
	}
	samples := readResults(t, dir)
	if len(samples) != 4 {
		t.Fatalf("%d samples, want 4", len(samples))
	}
	for _, s := range samples {
		checkLatencySample(t, dir, s)
	}
}

func checkLatencySample(t *testing.T, dir string, s map[string]any) {
	t.Helper()
	cell := s["cell"].(string)
	m := s["metrics"].(map[string]any)
	labels := s["labels"].(map[string]any)
	get := func(k string) float64 {
		v, ok := m[k].(float64)
		if !ok {
			t.Errorf("%s: no %s in %v", cell, k, m)
		}
		return v
	}
	p50, p99, p999, mx := get("rtt_p50_s"), get("rtt_p99_s"), get("rtt_p999_s"), get("rtt_max_s")
	if !(0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= mx) {
		t.Errorf("%s: percentiles out of order: p50 %g p99 %g p99.9 %g max %g", cell, p50, p99, p999, mx)
	}
	if idle := get("rtt_idle_p50_s"); idle <= 0 || get("rtt_inflation_s") != p50-idle {
		t.Errorf("%s: idle p50 %g, inflation %g, want inflation = p50 - idle p50", cell, idle, m["rtt_inflation_s"])
	}
	loss := get("probe_loss_frac")
	maxLoss := 0.99 // a UDP flood may starve the probe under TCG, never entirely
	if strings.HasSuffix(cell, "/tcp") {
		maxLoss = 0.05 // TCP backs off: its queue delays the probe, drops almost none
	}
	if loss < 0 || loss > maxLoss {
		t.Errorf("%s: probe loss %g, want 0..%g", cell, loss, maxLoss)
	}
	// Every probe's request passed the tap's root qdisc (or noqueue's
	// device layer): both stamps arrive, their difference is >= 0.
	if w := get("qdisc_wait_p99_s"); w < 0 || w > mx {
		t.Errorf("%s: qdisc wait p99 %g, want 0..rtt_max %g", cell, w, mx)
	}
	window := s["window_s"].(float64)
	sent, _ := strconv.Atoi(labels["probes"].(string))
	if want := window / 0.005; float64(sent) < 0.7*want || float64(sent) > 1.05*want+2 {
		t.Errorf("%s: %d probes under load in a %.2fs window, want about %.0f (one per 5ms)", cell, sent, window, want)
	}
	if p := labels["load_path"]; p != strings.TrimPrefix(cell[strings.LastIndex(cell, "/"):], "/")+" socket, through the qdisc" {
		t.Errorf("%s: load_path %q, want the iperf3 protocol's socket through the qdisc", cell, p)
	}
	if _, ok := labels["rtt_p99_s_ci95"]; !ok {
		t.Errorf("%s: no interval label for rtt_p99_s: %v", cell, labels)
	}
	var csvPath, seriesPath string
	for _, a := range s["artifacts"].([]any) {
		switch filepath.Base(a.(string)) {
		case latency.ArtifactName:
			csvPath = filepath.Join(dir, a.(string))
		case latency.SeriesName:
			seriesPath = filepath.Join(dir, a.(string))
		}
	}
	checkSeries(t, cell, seriesPath, window)
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatalf("%s: probes artifact: %v", cell, err)
	}
	defer f.Close()
	recs, err := latency.ReadCSV(f)
	if err != nil {
		t.Fatalf("%s: %v", cell, err)
	}
	phases := map[string]int{}
	for _, r := range recs {
		phases[r.Phase]++
	}
	if phases[latency.PhaseLoad] != sent || phases[latency.PhaseIdle] < 300 {
		t.Errorf("%s: probes.csv phases %v, want %d load probes (the probes label) and >= 300 idle ones (2s at 5ms, less late ticks)", cell, phases, sent)
	}
	if sum := latency.Summarize(recs); sum.Metrics["rtt_p99_s"] != p99 {
		t.Errorf("%s: probes.csv gives p99 %g, the sample says %g", cell, sum.Metrics["rtt_p99_s"], p99)
	}
}

// checkSeries checks a sample's qdisc.csv: a reading about every 10 ms
// through the load, in time order, counters that never go back.
func checkSeries(t *testing.T, cell, path string, window float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("%s: qdisc readings: %v", cell, err)
		return
	}
	defer f.Close()
	pts, err := latency.ReadSeries(f)
	if err != nil {
		t.Errorf("%s: %v", cell, err)
		return
	}
	load := 0
	for i, p := range pts {
		if p.Phase == latency.PhaseLoad {
			load++
		}
		if i > 0 && (p.T <= pts[i-1].T || p.TapTxPackets < pts[i-1].TapTxPackets || p.TapTxDropped < pts[i-1].TapTxDropped) {
			t.Errorf("%s: qdisc.csv row %d goes back in time or in a counter: %+v after %+v", cell, i+2, p, pts[i-1])
			break
		}
	}
	// The load phase's readings run on until the probe stops, up to its
	// 1 s timeout after the window; a busy machine delays some ticks.
	if want := window / latency.Tick.Seconds(); float64(load) < 0.5*want || float64(load) > (window+1.2)/latency.Tick.Seconds() {
		t.Errorf("%s: %d qdisc readings under load in a %.2fs window, want about %.0f (every %v)", cell, load, window, want, latency.Tick)
	}
}
