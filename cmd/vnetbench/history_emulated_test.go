package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryEmulatedRealRuns: the real TCG runs, recorded with 'history
// add', read back as emulated: the text says so first (pinned, with each
// series' latest value in its unit), the JSON per series. History said
// nothing of TCG, so a TCG fleet's history read as kernel numbers.
func TestHistoryEmulatedRealRuns(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	if _, errs, err := runHistory(t, "add", "--db", db, real+"quickstart-tcg", real+"lab-pktgen-tcg"); err != nil {
		t.Fatalf("add: %v\n%s", err, errs)
	}
	out, errs, err := runHistory(t, "--db", db, "--metric", "tx_pps,throughput_bps", "--cell", "tap/trafgen/pfifo_fast,tap/iperf3-p1/pfifo_fast,tap/pktgen-t1/fq_codel/simple")
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	checkCLIGolden(t, filepath.Join("testdata", "history", "real-tcg.txt"), []byte(out))
	js, errs, err := runHistory(t, "--db", db, "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	var h struct {
		Series []struct {
			Metric, Cell, Kernel string
			Emulated             *string `json:"emulated"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(js), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Series) < 20 {
		t.Fatalf("%d series, want both runs'", len(h.Series))
	}
	for _, s := range h.Series {
		if s.Emulated == nil || *s.Emulated != "all" {
			t.Errorf("%s %s %s: emulated %v, want \"all\"", s.Metric, s.Cell, s.Kernel, s.Emulated)
		}
	}
}

// TestHistoryEmulationChange: the real quickstart's history whose last
// 10 of 40 runs say accel kvm (and measure 4x the rate): the step is
// flagged as an environment change in JSON, text and the gate's lines,
// and the text names how many runs were emulated.
func TestHistoryEmulationChange(t *testing.T) {
	dirs := fakeHistory(t, 40, 30, 4)
	for _, d := range dirs[30:] {
		setAccel(t, d, "kvm")
	}
	db := filepath.Join(t.TempDir(), "h.db")
	if _, errs, err := runHistory(t, append([]string{"add", "--db", db}, dirs...)...); err != nil {
		t.Fatalf("add: %v\n%s", err, errs)
	}
	js, _, err := runHistory(t, "--db", db, "--format", "json", "--metric", "tx_pps", "--cell", "tap/trafgen/pfifo_fast")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"emulated": "some"`, `"emulated_before": "all"`, `"emulated_after": "none"`, `"emulation_changed": true`} {
		if !strings.Contains(js, want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
	out, errs, err := runHistory(t, "--db", db, "--metric", "tx_pps", "--cell", "tap/trafgen/pfifo_fast", "--fail-on-new", "12")
	if exitCode(err) != 0 {
		t.Fatalf("gate on an improvement: %v\n%s", err, errs)
	}
	for _, want := range []string{
		"EMULATED (QEMU TCG, no KVM): 30 of 40 runs (c00000000000, c00000000001, c00000000002, c00000000003, c00000000004 and 25 more)",
		"index 30: emulation differs across this change (before: all emulated, after: none): an environment change, not a kernel change",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	// Runs that go back to TCG at 4x less: a regression the gate
	// fails on, and says is no kernel change.
	for _, d := range dirs[30:] {
		setAccel(t, d, "tcg")
	}
	for _, d := range dirs[:30] {
		setAccel(t, d, "kvm")
	}
	if _, errs, err := runHistory(t, append([]string{"rebuild", "--db", db}, dirs...)...); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, errs)
	}
	_, errs, err = runHistory(t, "--db", db, "--metric", "tx_pps", "--cell", "tap/trafgen/pfifo_fast", "--lower-is-better", "tx_pps", "--fail-on-new", "12")
	if exitCode(err) != exitFailure || !strings.Contains(errs, "vnetbench: note: emulation differs across this change (before: none emulated, after: all)") {
		t.Errorf("gate: %v (exit %d), want exit 1 and the note:\n%s", err, exitCode(err), errs)
	}
}

// setAccel sets env.json's accel of the run directory dir, and its
// samples' emulated flags to match, as a run under that accelerator
// writes them.
func setAccel(t *testing.T, dir, accel string) {
	t.Helper()
	res := filepath.Join(dir, "results.jsonl")
	lines, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	tcg, kvm := `"emulated":true`, `"emulated":false`
	if accel == "tcg" {
		tcg, kvm = kvm, tcg
	}
	if err := os.WriteFile(res, []byte(strings.ReplaceAll(string(lines), tcg, kvm)), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	env["accel"] = accel
	writeJSONFile(t, filepath.Join(dir, "env.json"), env)
}
