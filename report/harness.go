package report

import (
	"cmp"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
)

// harnessKind builds the table of KindHarness: the harness's
// self-measurements and diagnostics, one row per cell and column.
type harnessKind struct{ *builder }

// harnessTable shows the Diagnostics metrics: one row per cell (and
// column), one column per metric, medians.
func (b harnessKind) harnessTable() {
	have := b.metricKeys()
	var keys []metric.Key
	for _, k := range results.Diagnostics() {
		if slices.Contains(have, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	multi := len(b.r.Columns) > 1
	t := &Table{Kind: KindHarness, Title: "harness and diagnostics", LabelHeader: []string{"cell"}}
	if multi {
		t.LabelHeader = append(t.LabelHeader, b.r.By)
	} else {
		t.Title += ", " + b.lab.colHeader(b.r.Columns[0])
	}
	var legend []string
	for _, k := range keys {
		m, _ := results.Lookup(k)
		h := cmp.Or(m.Header, string(k))
		t.Header = append(t.Header, h)
		legend = append(legend, strings.TrimSpace(h+" = "+string(k)+" "+m.HeaderNote))
	}
	var cells []string
	for _, cell := range b.idx.cells {
		for _, col := range b.r.Columns {
			row := Row{Labels: []string{cell}}
			if multi {
				row.Labels = append(row.Labels, b.lab.colHeader(col))
			}
			found := false
			for _, k := range keys {
				st := b.stats(cell, col, k)
				if st.N == 0 {
					row.Cells = append(row.Cells, Cell{Text: "-"})
					continue
				}
				found = true
				row.Cells = append(row.Cells, Cell{Text: diagnosticText(b.idx.metric(k).Unit, st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
			}
			if found {
				t.Rows = append(t.Rows, row)
				if len(cells) == 0 || cells[len(cells)-1] != cell { // once per cell
					cells = append(cells, cell)
				}
			}
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	runs := "medians of " + b.lab.repsRange(cells) + " runs"
	if b.lab.repsRange(cells) == "1" {
		runs = "1 run"
	}
	t.Notes = append(t.Notes, runs+"; "+strings.Join(legend, "; "))
	if multi {
		t.Notes = append(t.Notes, b.lab.columnNotes()...)
	}
	b.r.Tables = append(b.r.Tables, t)
}

// diagnosticText formats a harness table value of a metric whose unit is u.
func diagnosticText(u string, v float64) string {
	switch u {
	case "fraction", "s", "pps", "bit/s":
		return units.For(u).Format(v)
	case "count":
		return units.SI(v)
	}
	return units.Num(v)
}
