package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doubledRun copies the fixture run src with every sample twice (as 10
// runs of the same values): its 5 runs per side are too few for a
// DIFFERENT verdict.
func doubledRun(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	copyDir(t, src, dst)
	b, err := os.ReadFile(filepath.Join(src, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte{}, b...)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s map[string]any
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatal(err)
		}
		rep, _ := s["rep"].(float64)
		s["rep"] = rep + 1000
		again, _ := json.Marshal(s)
		out = append(append(out, again...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dst, "results.jsonl"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// compare --junit writes the gate decisions next to the usual output and
// keeps the exit code; report --format kcidb wants a valid --origin.
func TestCompareJUnitAndExports(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "gates.xml")
	var so, se bytes.Buffer
	patched, stock := doubledRun(t, runs+"patched"), doubledRun(t, runs+"stock")
	err := run(t.Context(), []string{"compare", patched, stock, "--fail-on", "tx_pps<-3%", "--junit", junit}, &so, &se)
	if exitCode(err) != exitFailure || !strings.Contains(so.String(), "verdict: FAIL") {
		t.Fatalf("compare: exit %d, %v\n%s", exitCode(err), err, so.String())
	}
	b, err := os.ReadFile(junit)
	if err != nil || !strings.Contains(string(b), `<testsuite name="vnetbench compare" tests="4" failures="4"`) {
		t.Errorf("junit file (%v):\n%s", err, b)
	}
	so.Reset()
	err = run(t.Context(), []string{"compare", stock, patched, "--fail-on", "tx_pps<-3%", "--format", "junit"}, &so, &se)
	if exitCode(err) != exitOK || !strings.Contains(so.String(), `failures="0"`) || !strings.Contains(se.String(), "verdict: ok") {
		t.Errorf("compare --format junit: exit %d\n%s\n%s", exitCode(err), so.String(), se.String())
	}
	// The quickstart capture against its rerun (2 runs per side, the
	// same numbers): UNKNOWN, exit 3, the gate a skipped case that says so.
	err = run(t.Context(), []string{"compare", real + "quickstart-tcg", rerun(t, real+"quickstart-tcg"), "--fail-on", "tx_pps<-3%", "--junit", junit}, &so, &se)
	if b, _ := os.ReadFile(junit); exitCode(err) != exitUndecided || !strings.Contains(string(b), `skipped="1"`) || !strings.Contains(string(b), "UNKNOWN") {
		t.Errorf("undecided compare: exit %d, junit:\n%s", exitCode(err), b)
	}
	for _, args := range [][]string{
		{"report", "--format", "kcidb", runs + "stock"},
		{"report", "--format", "kcidb", "--origin", "Bad-Name", runs + "stock"},
		{"compare", "--format", "lava", runs + "stock", runs + "patched"},
	} {
		if got := exitCode(run(t.Context(), args, &so, &se)); got != exitBadInput {
			t.Errorf("%q: exit %d, want %d", args, got, exitBadInput)
		}
	}
	so.Reset()
	if err := run(t.Context(), []string{"report", "--format", "kcidb", "--origin", "lab1", real + "lab-pktgen-tcg"}, &so, &se); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Version map[string]int
		Builds  []struct{ ID string }
	}
	if err := json.Unmarshal(so.Bytes(), &d); err != nil || d.Version["minor"] != 3 || len(d.Builds) != 2 || !strings.HasPrefix(d.Builds[0].ID, "lab1:") {
		t.Errorf("kcidb (%v): %+v", err, d)
	}
}
