package report

import (
	"slices"
	"strings"
	"testing"
)

// The text a netdev mail carries stays within MaxWidth (72) columns
// (issue 33 item 3; docs/reports.md): the thread-style tables of the real
// lab capture (two TCG lab kernels, 1 run per cell, long cell names), of
// the quickstart capture and of the generated fixtures, with their notes
// and the report's header and warnings. Before, a real lab report's thread
// tables were 92 columns wide ("stock (TCG, nested)"), its perf stat
// tables 82 (the cell name in the context). Excluded, as the doc says: the
// benchstat-style per-metric tables (as wide as benchstat's) and perf stat
// tables of counts in the billions (printed in full, as perf prints them)
// or of more than two kernels (a change column each: the per-patch
// capture's is 123 columns wide), and profile deltas, whose symbols only
// the mail cuts.
func TestMailTablesWithin72(t *testing.T) {
	mail := []string{KindPerPatch, KindThread, KindVersus, KindLatency, KindPerfStat, KindPerfSyms}
	wide := func(dir string, tb *Table) bool {
		// the generated fixtures' perf counts run to 11 digits
		return tb.Kind == KindPerfStat && (strings.Contains(dir, "stock") || len(tb.Header) > 3) || tb.Kind == KindProfile
	}
	for _, dir := range [][]string{{"lab-pktgen-tcg"}, {"lab-pktgen-3run-tcg"}, {"lab-perpatch-tcg"}, {"quickstart-tcg"}, {"iperf3-tcg"}, {"stock", "patched"}, {"qdisc-stock", "qdisc-patched"}} {
		set, r := built(t, Options{Kinds: mail}, dir...)
		for _, tb := range r.Tables {
			if wide(dir[0], tb) {
				continue
			}
			for _, l := range strings.Split(drawTable(tb, ASCII), "\n") {
				if w := width(l); w > MaxWidth {
					t.Errorf("%s: %s table %q: a line %d columns wide: %q", dir[0], tb.Kind, tb.Title, w, l)
					break
				}
			}
		}
		var b strings.Builder
		r.Tables = slices.DeleteFunc(r.Tables, func(tb *Table) bool { return wide(dir[0], tb) })
		if err := Render(&b, set, r, "text", ASCII); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(b.String(), "\n") {
			if w := width(l); w > MaxWidth {
				t.Errorf("%s: the report's line %q is %d columns wide", dir[0], l, w)
			}
		}
	}
}

// A group of one row keeps within MaxWidth too: its label wraps onto a
// line of its own below the row rather than widening the table. A
// benchfmt pair of one metric over two backends, one cell with 1 run per
// side, drew "| TAP + vhost-net | Transmitted | ... | -100.00% (1 run) |"
// 74 columns wide (compare --format mail).
func TestMailOneRowGroupWraps(t *testing.T) {
	tb := &Table{Kind: KindThread, Context: "pktgen", Header: []string{"base", "new", "change"}, Rows: []Row{
		{Labels: []string{"TAP", "Transmitted"}, Cells: []Cell{{Text: "451 Kpps"}, {Text: "406 Kpps"}, {Text: "-9.89%"}}},
		{Labels: []string{"TAP + vhost-net", "Transmitted"}, Cells: []Cell{{Text: "300 Kpps"}, {Text: "0 pps"}, {Text: "-100.00% (1 run)"}}},
	}}
	out := drawTable(tb, ASCII)
	for _, l := range strings.Split(out, "\n") {
		if w := width(l); w > MaxWidth {
			t.Errorf("a line %d columns wide: %q\n%s", w, l, out)
		}
	}
	if !strings.Contains(out, "| TAP +") || !strings.Contains(out, "| vhost-net ") {
		t.Errorf("the group label is not all there:\n%s", out)
	}
	// a table that fits is drawn as before: one line per row
	tb.Rows[1].Cells[2].Text = "-100.00%"
	if out := drawTable(tb, ASCII); !strings.Contains(out, "| TAP + vhost-net | Transmitted |") {
		t.Errorf("a table within MaxWidth wrapped its label:\n%s", out)
	}
}
