package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
)

// The real lab pktgen capture (stock vs the tun backpressure patch) read
// as a per-patch run of a one-patch series (patched relabelled p1): a
// table per main metric with a row per column, p1's change from the row
// above the same as from stock, and the notes naming p1's patch.
func TestPerPatchTablesOfARealRun(t *testing.T) {
	set, err := results.Load(run("lab-pktgen-tcg")...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range set.Samples {
		if set.Samples[i].Kernel == "patched" {
			set.Samples[i].Kernel = "p1"
		}
	}
	set.Env["p1"] = set.Env["patched"]
	delete(set.Env, "patched")
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var lost *Table
	for _, tb := range r.Tables {
		if tb.Kind == KindThread {
			t.Errorf("a per-patch report has a side-by-side table %q", tb.Title)
		}
		if tb.Kind == KindPerPatch && tb.Metric == "lost_pps" && strings.Contains(tb.Context, "1 thread") && lost == nil {
			lost = tb
		}
	}
	if lost == nil {
		t.Fatal("no per-patch Lost table")
	}
	var rows []string
	for _, row := range lost.Rows {
		var cells []string
		for _, c := range row.Cells {
			cells = append(cells, c.Text)
		}
		rows = append(rows, strings.Join(append(row.Labels, cells...), " | "))
	}
	want := []string{
		"TAP | stock | 198 Kpps |  | ",
		"TAP | p1 | 0 pps | -100.00% | -100.00%",
	}
	if got := strings.Join(rows[:2], "\n"); got != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	notes := strings.Join(lost.Notes, "\n")
	if !strings.Contains(notes, "p1 adds tun: stop the tx queue on a full ring instead of dropping") {
		t.Errorf("notes do not name p1's patch:\n%s", notes)
	}
	var buf bytes.Buffer
	if err := WriteMail(&buf, r); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(buf.String(), "\n") {
		if len(l) > MaxWidth {
			t.Errorf("mail line %d is %d columns: %q", i+1, len(l), l)
		}
	}
	if !strings.HasPrefix(buf.String(), "vnetbench lab-pktgen-e2e: stock and the series patch by patch (p1).") {
		t.Errorf("mail starts %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
}
