package labvm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// reviewSample is what TestLabReviewE2E reads of a sample.
type reviewSample struct {
	Kernel      string             `json:"kernel"`
	Cell        string             `json:"cell"`
	Metrics     map[string]float64 `json:"metrics"`
	Unsupported string             `json:"unsupported"`
	Error       string             `json:"error"`
}

// TestLabReviewE2E runs the built-in lab-review as it ships: the series'
// review in one run, stock and patched built from linux-source-6.1, 14
// cells per kernel in lab VMs (8 vCPUs each) with nested guests. Every
// cell must have run (none n/a, none failed), every table must be
// printed, and the mechanisms must show: stock's tap drops at its full
// ring under 1-thread pktgen where patched's far less, the XDP frames
// reach the tap's reader on both kernels, and tcp_rr ran both phases.
// Opt-in (it is the run docs/review.md pastes, about 25 minutes warm on a
// 2-core machine at 1 repetition; the built-in runs 3 since issue 33,
// which plan estimates at 43 min here and 79 min on a machine without
// measurements, hence --max-time; more than CI has):
//
//	VNETBENCH_E2E_REVIEW=1 make e2e RUN=TestLabReviewE2E PKG=./runner/labvm
//
// VNETBENCH_E2E_KEEP=DIR keeps the run directory.
func TestLabReviewE2E(t *testing.T) {
	testenv.OptIn(t, "VNETBENCH_E2E_REVIEW", "the whole lab-review built-in, 3 repetitions (plan estimates 43 min on a 2-core TCG machine) (2 kernel builds when cold): VNETBENCH_E2E_REVIEW=1 make e2e RUN=TestLabReviewE2E PKG=./runner/labvm")
	needLabBuilds(t)
	bin := vnetbenchBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	if keep := os.Getenv("VNETBENCH_E2E_KEEP"); keep != "" {
		dir = filepath.Join(keep, "lab-review-"+time.Now().Format("20060102-150405"))
	}
	out, err := runVnetbench(t, "run lab-review", 400, bin, "run", "lab-review", "-o", dir, "--lock-wait", "3h", "--max-time", "3h")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, want := range []string{"pktgen", "Tx per thread", "Lost per thread", "iperf3", "Throughput", "tcp_rr", "RTT p99, bulk",
		"xdp_redirect", "Redirected", "latency under load", "stock", "patched"} {
		if !strings.Contains(out, want) {
			t.Errorf("the run's output lacks %q", want)
		}
	}
	byCell := reviewSamples(t, dir)
	if n := len(byCell); n != 28 {
		t.Errorf("%d samples, want 14 cells x 2 kernels", n)
	}
	get := func(kernel, cell string) map[string]float64 {
		s, ok := byCell[kernel+" "+cell]
		if !ok {
			t.Fatalf("no sample %s on %s", cell, kernel)
		}
		return s.Metrics
	}
	st, pa := get("stock", "tap/pktgen-t1/fq_codel"), get("patched", "tap/pktgen-t1/fq_codel")
	if st["lost_pps"] < 1000 || pa["lost_pps"] > st["lost_pps"]/10 {
		t.Errorf("pktgen 1 thread on TAP: Lost stock %.0f pps, patched %.0f pps: want stock dropping at its ring (>= 1000) and patched far below",
			st["lost_pps"], pa["lost_pps"])
	}
	for _, k := range []string{"stock", "patched"} {
		for _, b := range []string{"tap/xdp_redirect/fq_codel", "tap+vhost/xdp_redirect/fq_codel/vhost-pin0"} {
			if m := get(k, b); m["xdp_tx_pps"] <= 0 || m["xdp_redirect_pps"] < m["xdp_tx_pps"] {
				t.Errorf("%s %s: transmitted %.0f, redirected %.0f pps: want frames through tun_xdp_xmit", k, b, m["xdp_tx_pps"], m["xdp_redirect_pps"])
			}
		}
		if m := get(k, "tap/tcp_rr-s1/fq_codel"); m["rr_tps"] <= 0 || m["rr_load_tps"] <= 0 || m["rr_bulk_bps"] <= 0 {
			t.Errorf("%s tcp_rr: tps %v, loaded %v, bulk %v: want both phases", k, m["rr_tps"], m["rr_load_tps"], m["rr_bulk_bps"])
		}
		if m := get(k, "tap/pktgen-t8/fq_codel"); m["tx_pps"] <= 0 {
			t.Errorf("%s 8 senders: no Transmitted", k)
		}
	}
}

// reviewSamples reads results.jsonl by "KERNEL CELL"; a failed or n/a
// sample is an error.
func reviewSamples(t *testing.T, dir string) map[string]reviewSample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reviewSample{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s reviewSample
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("results.jsonl: %v", err)
		}
		if s.Unsupported != "" || s.Error != "" {
			t.Errorf("%s on %s: n/a %q, error %q", s.Cell, s.Kernel, s.Unsupported, s.Error)
		}
		out[s.Kernel+" "+s.Cell] = s
	}
	return out
}
