package main

import (
	"bytes"
	"os"
	"path/filepath"
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
