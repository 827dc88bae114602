package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
)

// compareKind builds the tables of KindCompare: one table per metric,
// every cell that has it.
type compareKind struct{ *builder }

func (b compareKind) compareTables() {
	for _, key := range b.metricKeys() {
		if strings.HasPrefix(string(key), results.PerfPrefix) && len(b.named) == 0 {
			continue // shown by the perf stat tables
		}
		if strings.HasPrefix(string(key), metric.DropPrefix) && !slices.Contains(b.named, key) {
			continue // shown under Lost and in the drops table
		}
		if results.IsDiagnostic(key) && !slices.Contains(b.named, key) {
			continue // shown by the harness and diagnostics table
		}
		m := b.idx.metric(key)
		cells := b.idx.keyCells[key]
		if len(cells) == 0 {
			continue
		}
		t := &Table{Kind: KindCompare, Title: fmt.Sprintf("%s (%s, %s is better)", key, m.Unit, m.Better), Metric: string(key), Unit: m.Unit,
			LabelHeader: []string{string(key)}}
		if m.Better == metric.Neutral {
			t.Title = fmt.Sprintf("%s (%s)", key, m.Unit)
		}
		for i, c := range b.r.Columns {
			t.Header = append(t.Header, b.lab.colHeader(c))
			if i > 0 {
				h := "vs base"
				if len(b.r.Columns) > 2 {
					h = "vs " + b.r.Base
				}
				t.Header = append(t.Header, h, "p, n")
			}
		}
		note := func(msg string) int {
			if i := slices.Index(t.Notes, msg); i >= 0 {
				return i
			}
			t.Notes = append(t.Notes, msg)
			return len(t.Notes) - 1
		}
		// With one column there is no "p, n" column: the cells say n.
		withN := len(b.r.Columns) == 1
		ranges, cis := false, []*Stats(nil)
		for _, cell := range cells {
			r := Row{Labels: []string{cell}}
			for i, col := range b.r.Columns {
				st := b.stats(cell, col, key)
				c := Cell{Text: "-"}
				if st.N > 0 {
					c = Cell{Text: spreadText(&st, withN), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)}
					if st.CIFinite() {
						cis = append(cis, c.Stats)
					} else {
						ranges = true
					}
					for _, w := range st.Warnings {
						if strings.Contains(w, "confidence interval") {
							continue // the range note below says it once
						}
						c.Notes = append(c.Notes, note(w))
					}
				}
				r.Cells = append(r.Cells, c)
				if i == 0 {
					continue
				}
				if st.N == 0 || !b.idx.has(cell, b.r.Base, key) {
					r.Cells = append(r.Cells, Cell{Text: "-"}, Cell{Text: "-"})
					continue
				}
				d := b.delta(cell, col, key)
				dc := Cell{Text: d.DeltaString(), Delta: &d}
				if d.Different() {
					dc.Value = ptr(d.Pct)
				}
				for _, w := range d.Warnings {
					dc.Notes = append(dc.Notes, note(w))
				}
				r.Cells = append(r.Cells, dc, Cell{Text: d.PString(), Value: ptr(d.P)})
			}
			t.Rows = append(t.Rows, r)
		}
		b.compareLegends(t, m, cis, ranges)
		b.r.Tables = append(b.r.Tables, t)
	}
}

// compareLegends appends the legends of compare table t of metric m,
// after the numbered notes its cells refer to: the spread (cis: the
// stats of the cells with a confidence interval, named by their own
// levels, CIName; ranges: some cell shows the runs' range), what
// the metric counts, over which interval, total or per thread, and what
// the change columns are (a table quoted alone carries them; its title
// says only the unit), and the nesting notes.
func (b compareKind) compareLegends(t *Table, m metric.Metric, cis []*Stats, ranges bool) {
	if len(cis) > 0 {
		t.Notes = append(t.Notes, "± = "+CIName(cis))
	}
	if ranges {
		t.Notes = append(t.Notes, fmt.Sprintf("(lo..hi) = min..max of the runs: fewer than %d runs give no %.0f%% confidence interval of the median", minCIRuns, 100*Confidence))
	}
	if m.Description != "" {
		t.Notes = append(t.Notes, fmt.Sprintf("%s = %s", t.Metric, m.Description))
	}
	if len(b.r.Columns) > 1 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s = the change of the median vs %s: %s; p, n = the p-value of that verdict's test and the runs per side",
			t.Header[2], b.r.Base, changeLegend))
	}
	t.Notes = append(t.Notes, b.lab.nestingNotes()...)
}

// minCIRuns is the smallest sample for which the order statistics give a finite
// confidence interval of the median at level Confidence or more.
const minCIRuns = 6

// spreadText is the median with its honest spread: benchstat's
// "median ± CI%" when the confidence interval is finite, else the range
// of the runs, "11.88k (n=2, 9.70..14.1k)" (n only when withN).
func spreadText(st *Stats, withN bool) string {
	if st.CIFinite() {
		ci := "0%"
		if st.Median != 0 {
			ci = fmt.Sprintf("%.0f%%", 100*math.Max(st.Hi/st.Median-1, 1-st.Lo/st.Median))
		}
		return units.SI(st.Median) + " ± " + ci
	}
	// The median's small prefix, where it takes one, for both ends too:
	// "79.72µ (74.6..184µ)". Where it takes none, each end its own
	// ("0.01 (1.00µ..0.02)", not "10000µ (1.00..20000µ)").
	sp := units.SmallOf(4, st.Median)
	var in []string
	if withN {
		in = append(in, fmt.Sprintf("n=%d", st.N))
	}
	if st.N > 1 {
		// 3 significant digits, more when they would hide the spread.
		var lo, hi string
		for d := 3; d <= 6; d++ {
			lo, hi = sp.Digits(st.Min, d), sp.Digits(st.Max, d)
			if lo != hi || st.Min == st.Max {
				break
			}
		}
		if p := units.Prefix(hi); p != "" && units.Prefix(lo) == p {
			lo = strings.TrimSuffix(lo, p)
		}
		in = append(in, lo+".."+hi)
	}
	if len(in) == 0 {
		return units.SI(st.Median)
	}
	return sp.Digits(st.Median, 4) + " (" + strings.Join(in, ", ") + ")"
}
