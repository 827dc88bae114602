package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
)

// qdiscRows returns, per thread table, the labels of its rows that name
// qdisc drops.
func qdiscRows(t *testing.T, r *Report) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tb := range r.Tables {
		if tb.Kind != KindThread {
			continue
		}
		out[tb.Title] = nil
		for _, row := range tb.Rows {
			if strings.HasPrefix(row.Labels[1], "Qdisc") {
				out[tb.Title] = append(out[tb.Title], row.Labels[0]+": "+row.Labels[1])
			}
		}
	}
	return out
}

// A pktgen table shows qdisc drops only when some run of that table had
// them: fq_codel tables (1 and 4 threads) do, the pfifo_fast table (all
// qdisc_drop_pps 0) and tables of runs without the metric do not.
func TestQdiscDropsRow(t *testing.T) {
	set, r := built(t, Options{}, "qdisc-stock", "qdisc-patched")
	got := qdiscRows(t, r)
	want := map[string][]string{
		"pktgen generator=pktgen-t1": {"TAP: Qdisc drops", "TAP + vhost-net: Qdisc drops"},
		"pktgen generator=pktgen-t4": {"TAP: Qdisc drops total", "TAP + vhost-net: Qdisc drops total"},
		"pktgen generator=pktgen-t2": nil,
	}
	if len(got) != len(want) {
		t.Fatalf("thread tables %v, want %v", got, want)
	}
	for title, w := range want {
		if g, ok := got[title]; !ok || strings.Join(g, "|") != strings.Join(w, "|") {
			t.Errorf("table %q: qdisc rows %q, want %q", title, g, w)
		}
	}
	// The row comes right after Lost and holds the median of qdisc_drop_pps.
	for _, tb := range r.Tables {
		if tb.Title != "pktgen generator=pktgen-t1" {
			continue
		}
		if l := tb.Rows[1].Labels[1]; l != "Lost" {
			t.Fatalf("row 2 is %q, want Lost", l)
		}
		row := tb.Rows[2]
		if st := set.Values("tap/pktgen-t1", "stock", "qdisc_drop_pps"); row.Cells[0].Stats == nil || row.Cells[0].Stats.Median != Summarize(st, true).Median {
			t.Errorf("Qdisc drops stock cell %+v, want median of %v", row.Cells[0], st)
		}
		if !strings.HasSuffix(row.Cells[0].Text, " Kpps") {
			t.Errorf("Qdisc drops cell text %q, want Kpps", row.Cells[0].Text)
		}
		if !strings.Contains(strings.Join(tb.Notes, "\n"), "Qdisc drops = dropped by the tap's root qdisc") {
			t.Errorf("notes %q do not explain the row", tb.Notes)
		}
	}

	// Only zeros: no row.
	zero, err := Build(set.Filter(func(s *results.Sample) bool { return strings.HasSuffix(s.Cell, "-t2") }), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for title, rows := range qdiscRows(t, zero) {
		if rows != nil {
			t.Errorf("all-zero table %q has %q", title, rows)
		}
	}
	// Runs that predate the metric: no row.
	old, err := results.Load(run("stock", "patched")...)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Build(old, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for title, rows := range qdiscRows(t, ro) {
		if rows != nil {
			t.Errorf("table %q of runs without qdisc_drop_pps has %q", title, rows)
		}
	}
}

// Every format carries the row (text, markdown, json, html) or the metric
// (csv and benchfmt hold per-metric summaries and samples).
func TestQdiscDropsFormats(t *testing.T) {
	set, r := built(t, Options{Origin: "vnb"}, "qdisc-stock", "qdisc-patched")
	want := map[string]string{"text": "| Qdisc drops ", "markdown": "| Qdisc drops |", "csv": ",qdisc_drop_pps,pps,lower,", "json": `"Qdisc drops total"`,
		"html": "Qdisc drops total", "benchfmt": "Unit qdisc_drop_pps better=lower assume=nothing",
		"junit": `classname="vnetbench.qdisc_drop_pps"`, "kcidb": `"metric": "qdisc_drop_pps"`, "lava": ".qdisc_drop_pps --result pass"}
	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Render(&buf, set, r, f, ASCII); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), want[f]) {
			t.Errorf("%s output lacks %q", f, want[f])
		}
	}
}
