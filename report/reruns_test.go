package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// rerunSet is 12 iperf3 samples per kernel, the first len(reruns[k]) of
// kernel k's re-run after a void first attempt for those causes.
func rerunSet(reruns map[string][]string) *results.Set {
	return faultRerunSet(reruns, nil)
}

// faultRerunSet is rerunSet, the first len(faults[k]) of kernel k's
// samples also re-run after a TCG guest kernel fault with those lines.
func faultRerunSet(reruns, faults map[string][]string) *results.Set {
	set := &results.Set{Env: map[string]*results.Env{}}
	for _, kernel := range []string{"stock", "patched"} {
		for rep := range 12 {
			s := results.Sample{Cell: "tap/iperf3", Kernel: kernel, Rep: rep, Start: time.Unix(int64(rep), 0), WindowS: 10,
				Axes:   map[string]string{"backend": "tap", "generator": "iperf3"},
				Labels: map[string]string{"generator": "iperf3"}, Metrics: map[metric.Key]float64{"throughput_bps": 2e9 + float64(rep)}}
			if rep < len(reruns[kernel]) {
				s.VoidRerun = reruns[kernel][rep]
			}
			if rep < len(faults[kernel]) {
				s.FaultRerun = faults[kernel][rep]
			}
			set.Samples = append(set.Samples, s)
		}
	}
	return set
}

// Void re-runs are counted per kernel in the text and markdown reports'
// notes, with their causes; a kernel with significantly more of them than
// the other (two-sided Fisher exact p < 0.05: 5 of 12 against 0 of 12 is
// p = 0.037, 4 of 12 is 0.093) is flagged in the warnings, which every
// format shows; chance differences and equal counts are noted, not
// flagged; none, not noted.
func TestVoidRerunsCounted(t *testing.T) {
	const reset, ended = "connection reset by peer", "the server terminated"
	const flag = "warning: patched re-ran more samples after a void first attempt than stock (5 of 12, connection reset by peer; 0 of 12; Fisher's exact test, two-sided p = 0.0373):"
	for _, tc := range []struct {
		name       string
		reruns     map[string][]string
		note, warn string
	}{
		{"one side, significant", map[string][]string{"patched": {reset, reset, reset, reset, reset}},
			"re-run after a void first attempt: stock: 0 of 12 samples; patched: 5 of 12 samples (connection reset by peer)", flag},
		{"one side, chance", map[string][]string{"patched": {reset, reset, reset, reset}},
			"re-run after a void first attempt: stock: 0 of 12 samples; patched: 4 of 12 samples (connection reset by peer)", ""},
		{"one of twelve", map[string][]string{"stock": {reset}},
			"re-run after a void first attempt: stock: 1 of 12 samples (connection reset by peer); patched: 0 of 12 samples", ""},
		{"both alike", map[string][]string{"stock": {ended}, "patched": {reset}},
			"re-run after a void first attempt: stock: 1 of 12 samples (the server terminated); patched: 1 of 12 samples (connection reset by peer)", ""},
		{"causes", map[string][]string{"patched": {ended, reset, reset, ended, reset, reset}},
			"patched: 6 of 12 samples (4 connection reset by peer, 2 the server terminated)", "patched re-ran more samples"},
		{"none", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := renderSet(t, rerunSet(tc.reruns), Options{})
			r := out.r
			text := strings.Join(strings.Fields(out.text), " ") // unwrapped
			for _, c := range []struct{ out, want string }{{text, tc.note}, {text, tc.warn}, {out.md, mdEscape(tc.note)}} {
				if !strings.Contains(c.out, c.want) {
					t.Errorf("report lacks %q:\n%s", c.want, c.out)
				}
			}
			if tc.note == "" && (strings.Contains(text, "void") || r.VoidReruns != nil) {
				t.Errorf("no re-runs, but the report speaks of them: %v\n%s", r.VoidReruns, text)
			}
			if flagged := strings.Contains(text, "re-ran more samples"); flagged != (tc.warn != "") {
				t.Errorf("flagged %v, want %v", flagged, tc.warn != "")
			}
		})
	}
}

// Re-runs after a TCG guest kernel fault are counted per kernel beside
// the void ones, in the text and markdown notes and the JSON model, and a
// lab kernel whose lab VM was booted again (env.json's lab_retry) is
// named with the first lab VM's fault and console.
func TestFaultRerunsCounted(t *testing.T) {
	const panic = "[  140.000001] Kernel panic - not syncing: Fatal exception in interrupt"
	const oops = "[  139.204711] Oops: general protection fault"
	set := faultRerunSet(nil, map[string][]string{"stock": {panic}, "patched": {oops}})
	set.Env["patched"] = &results.Env{LabRetry: &results.LabRetry{Why: oops, Console: "lab/patched/console-1.log"}}
	out := renderSet(t, set, Options{})
	text := strings.Join(strings.Fields(out.text), " ") // unwrapped
	note := "re-run after a TCG guest kernel fault: stock: 1 of 12 samples (" + panic + "); patched: 1 of 12 samples (" + oops + ")"
	lab := "patched: its lab VM was booted again after its kernel failed under TCG (" + oops + "); the samples the first had finished are kept; the first lab VM's console is lab/patched/console-1.log"
	for _, c := range []struct{ out, want string }{{text, note}, {text, lab}, {out.md, mdEscape(note)}, {out.md, mdEscape(lab)},
		{out.json, `"fault_reruns":[{"column":"stock","reruns":1,"samples":12`}, {out.json, `"lab_retry":{"why":"` + oops}} {
		if squash := func(s string) string { return strings.Join(strings.Fields(s), "") }; !strings.Contains(squash(c.out), squash(c.want)) {
			t.Errorf("report lacks %q:\n%s", c.want, c.out)
		}
	}
	if out.r.VoidReruns != nil || strings.Contains(text, "void") {
		t.Errorf("no void re-runs, but the report speaks of them: %v", out.r.VoidReruns)
	}
}

// FisherExact agrees with R's fisher.test (Fisher's tea taster: 3 of 4
// against 1 of 4 is p = 0.486) and with the sums of hypergeometric
// probabilities a plain enumeration gives, on both sides of 0.05.
func TestFisherExact(t *testing.T) {
	for _, tc := range []struct {
		a, n1, b, n2 int
		want         float64
	}{
		{3, 4, 1, 4, 0.4857142857142857},
		{1, 12, 0, 12, 1},
		{0, 12, 1, 12, 1},
		{4, 12, 0, 12, 0.09316770186335403},
		{5, 12, 0, 12, 0.037267080745341616},
		{0, 12, 5, 12, 0.037267080745341616},
		{10, 13, 3, 18, 0.001232044661637166},
		{7, 100, 1, 100, 0.06485940210426507},
		{0, 12, 0, 12, 1},
		{12, 12, 0, 12, 7.39602301050679e-07},
		{1, 0, 0, 12, 1},
	} {
		if got := FisherExact(tc.a, tc.n1, tc.b, tc.n2); math.Abs(got-tc.want) > 1e-9*max(1, tc.want) {
			t.Errorf("FisherExact(%d of %d, %d of %d) = %v, want %v", tc.a, tc.n1, tc.b, tc.n2, got, tc.want)
		}
	}
}
