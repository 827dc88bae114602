package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A gate fails closed: NEW without the gated cell is MISSING (exit 1)
// unless --allow-missing names it; an input compare cannot read is bad
// input (exit 2), not a regression.
func TestCompareCLIMissing(t *testing.T) {
	dir := t.TempDir()
	only := filepath.Join(dir, "other-cell.bench")
	other, err := os.ReadFile("testdata/compare/six-runs-base.bench")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(only, bytes.ReplaceAll(other, []byte("pktgen-t1"), []byte("pktgen-t4")), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "run")
	if err := os.MkdirAll(filepath.Join(unreadable, "results.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		exit int
		want string
	}{
		{[]string{"compare", "testdata/compare/six-runs-base.bench", only, "--fail-on", "tx_pps<-3%"}, exitFailure,
			"tx_pps<-3%: tap/pktgen-t1: MISSING: NEW has no such cell: FAIL"},
		{[]string{"compare", "testdata/compare/six-runs-base.bench", only, "--fail-on", "tx_pps<-3%", "--allow-missing", "tx_pps"}, exitOK,
			"MISSING: NEW has no such cell: ok (--allow-missing)"},
		{[]string{"compare", unreadable, "testdata/compare/six-runs-new.bench", "--fail-on", "tx_pps<-3%"}, exitBadInput, ""},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), tc.args, &out, &errb)
		if got := exitCode(err); got != tc.exit {
			t.Errorf("%v: exit %d (%v), want %d", tc.args[1:], got, err, tc.exit)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: output lacks %q:\n%s", tc.args[1:], tc.want, out.String())
		}
	}
}

// Issue 33's example: 6 runs per side, -10.00% with disjoint ranges, is a
// regression the gate catches (exit 1, a JUnit failure), not UNKNOWN.
func TestCompareCLISixRuns(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "gates.xml")
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"compare", "testdata/compare/six-runs-base.bench", "testdata/compare/six-runs-new.bench",
		"--fail-on", "tx_pps<-3%", "--junit", junit}, &out, &errb)
	if got := exitCode(err); got != exitFailure {
		t.Errorf("exit %d (%v), want 1:\n%s", got, err, out.String())
	}
	if !strings.Contains(out.String(), "tx_pps<-3%: tap/pktgen-t1 -10.00% [") || !strings.Contains(out.String(), "n=6: DIFFERENT: FAIL") {
		t.Errorf("output lacks the DIFFERENT FAIL line:\n%s", out.String())
	}
	x, rerr := os.ReadFile(junit)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !strings.Contains(string(x), `failures="1"`) || !strings.Contains(string(x), `type="regression"`) ||
		regexp.MustCompile(`p &lt;= 0[^.]`).Match(x) || !strings.Contains(string(x), "DIFFERENT at p &lt;= 0.0015, the level of the look at 6 runs") {
		t.Errorf("JUnit is not one regression failure with the look's level:\n%s", x)
	}
	checkCLIGolden(t, filepath.Join("testdata", "compare", "six-runs.txt"), out.Bytes())
}
