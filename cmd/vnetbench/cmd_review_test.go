package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBuiltin runs a built-in with --set overrides into a fresh directory
// and returns its output, its directory and its one sample.
func runBuiltin(t *testing.T, name string, sets ...string) (string, string, map[string]any) {
	t.Helper()
	needRunHost(t)
	bin := vnetbenchBin(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"run", name, "-o", dir, "--lock-wait", "30m"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
	t.Logf("%s", out)
	checkRunLeftNothing(t, dir)
	if err != nil {
		t.Fatalf("run %s: %v", name, err)
	}
	samples := readResults(t, dir)
	if len(samples) != 1 {
		t.Fatalf("%d samples, want 1", len(samples))
	}
	return string(out), dir, samples[0]
}

// artifactJSON decodes the sample's artifact named name.
func artifactJSON(t *testing.T, dir string, s map[string]any, name string, v any) {
	t.Helper()
	arts, _ := s["artifacts"].([]any)
	for _, a := range arts {
		if p, _ := a.(string); filepath.Base(p) == name {
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no artifact %s in %v", name, arts)
}

// The tcp-rr built-in in one cell (pfifo_fast, 2 s phases) against a TCG
// guest: both phases ran, the guest's echo server wrote back exactly the
// bytes of the transactions the host counted, the percentiles are
// ordered, the bulk stream reached the guest, and the table has both
// phases' rows.
func TestRunTCPRRE2E(t *testing.T) {
	out, dir, s := runBuiltin(t, "tcp-rr", "qdisc=pfifo_fast", "generator.tcp_rr.duration=2s")
	m := s["metrics"].(map[string]any)
	get := func(k string) float64 {
		v, ok := m[k].(float64)
		if !ok || v <= 0 {
			t.Errorf("%s = %v, want > 0", k, m[k])
		}
		return v
	}
	for _, pre := range []string{"rr_", "rr_load_"} {
		get(pre + "tps")
		if p50, p99, p999 := get(pre+"p50_s"), get(pre+"p99_s"), get(pre+"p999_s"); !(p50 <= p99 && p99 <= p999) {
			t.Errorf("%s percentiles out of order: %g %g %g", pre, p50, p99, p999)
		}
	}
	get("rr_bulk_bps")
	var sum struct {
		Size        int   `json:"size"`
		GuestEchoed int64 `json:"guest_echoed_bytes"`
		Phases      []struct {
			Transactions int `json:"transactions"`
		} `json:"phases"`
	}
	artifactJSON(t, dir, s, "tcp_rr.json", &sum)
	if len(sum.Phases) != 2 {
		t.Fatalf("tcp_rr.json: %d phases, want 2", len(sum.Phases))
	}
	if n := sum.Phases[0].Transactions + sum.Phases[1].Transactions; sum.GuestEchoed != int64(n*sum.Size) {
		t.Errorf("the guest echoed %d bytes; the host counted %d transactions of %d B", sum.GuestEchoed, n, sum.Size)
	}
	for _, want := range []string{"tcp_rr", "Transactions/s", "RTT p99.9", "RTT p99, bulk", "Bulk throughput", "under QEMU TCG"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// The xdp-redirect built-in (2 s) against a TCG guest: the frames went
// through the XDP program into the tap, every frame it redirected was
// either passed on by the tap or lost at its ring, and every frame the
// tap passed on reached the guest's stack (QEMU stops reading the tap
// rather than drop).
func TestRunXDPRedirectE2E(t *testing.T) {
	out, dir, s := runBuiltin(t, "xdp-redirect", "generator.xdp_redirect.duration=2s")
	if why, _ := s["unsupported"].(string); why != "" {
		t.Fatalf("n/a on this kernel: %s", why)
	}
	var o struct {
		Seen       uint64 `json:"xdp_seen"`
		Redirected uint64 `json:"xdp_redirected"`
		TapTx      uint64 `json:"tap_tx_packets"`
		Lost       uint64 `json:"lost"`
	}
	artifactJSON(t, dir, s, "xdp_redirect.json", &o)
	if o.Redirected == 0 || o.Redirected != o.Seen || o.TapTx == 0 {
		t.Errorf("seen %d, redirected %d, transmitted %d: want every frame redirected and some transmitted", o.Seen, o.Redirected, o.TapTx)
	}
	if o.Redirected != o.TapTx+o.Lost {
		t.Errorf("redirected %d != transmitted %d + lost %d", o.Redirected, o.TapTx, o.Lost)
	}
	m := s["metrics"].(map[string]any)
	tapTx, _ := m["tx_packets"].(float64)
	rx, _ := m["rx_pps"].(float64)
	win, _ := s["window_s"].(float64)
	if guest := rx * win; guest < 0.9*tapTx || guest > tapTx+50 {
		t.Errorf("the guest received %.0f packets in the window, the tap passed on %.0f: want (nearly) all of them", guest, tapTx)
	}
	for _, want := range []string{"xdp_redirect", "Transmitted", "Lost", "Redirected", "tap tx_dropped", "under QEMU TCG"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
