package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// versusOf returns the Versus layout of s's workload and that workload's
// name (nil when its table has none).
func versusOf(s *results.Sample) (*workload.Table, string) {
	name := workload.NameOf(generatorOf(s))
	w, ok := workload.Lookup(name)
	if !ok {
		return nil, ""
	}
	t, ok := w.(workload.Tabler)
	if !ok {
		return nil, ""
	}
	tab := t.Table()
	if tab.Versus == nil {
		return nil, ""
	}
	return &tab, name
}

// versusAxis is the axis key of a Versus key of workload name.
func versusAxis(name, key string) string { return "generator." + name + "." + key }

// isVersusAxis reports whether axis k is the row or column axis of a
// registered workload's Versus table (its tables say those values).
func isVersusAxis(k string) bool {
	for _, w := range workload.All() {
		if t, ok := w.(workload.Tabler); ok {
			if v := t.Table().Versus; v != nil && (k == versusAxis(w.Name(), v.RowKey) || k == versusAxis(w.Name(), v.ColKey)) {
				return true
			}
		}
	}
	return false
}

// versusTables draws the Versus tables: per workload that has one, per
// group of its cells that differ only in the row and column axes, one
// table per kernel: row groups the row axis's values, sub-rows the
// workload's metric rows, columns the column axis's values and the
// change from the first to the last column (from the medians).
func (b *builder) versusTables() {
	for _, w := range workload.All() {
		tr, ok := w.(workload.Tabler)
		if !ok || tr.Table().Versus == nil {
			continue
		}
		tab, name := tr.Table(), w.Name()
		v := tab.Versus
		rowAx, colAx := versusAxis(name, v.RowKey), versusAxis(name, v.ColKey)
		groups, order := b.groupCells(func(s *results.Sample) bool {
			_, n := b.idx.versusOf(s)
			return n == name
		}, rowAx, colAx)
		for _, gk := range order {
			for _, col := range b.r.Columns {
				if t := b.versusTable(tab, name, groups[gk], col); t != nil {
					b.r.Tables = append(b.r.Tables, t)
				}
			}
		}
	}
}

// versusTable is one kernel's (col's) table of a group of cells, or nil
// when the kernel has no sample of them.
func (b *builder) versusTable(tab workload.Table, name string, cells []string, col string) *Table {
	v := tab.Versus
	rowAx, colAx := versusAxis(name, v.RowKey), versusAxis(name, v.ColKey)
	// idx[row value][column value] = cell.
	idx := map[string]map[string]string{}
	var rowVals []string
	var first *results.Sample
	for _, cell := range cells {
		ss := b.idx.byCol[cellCol{cell, col}]
		if len(ss) == 0 {
			continue
		}
		for _, s := range ss {
			if first == nil || first.Unsupported != "" && s.Unsupported == "" {
				first = s
			}
		}
		s := b.firstSample(cell)
		rv, cv := s.Axes[rowAx], s.Axes[colAx]
		if idx[rv] == nil {
			idx[rv] = map[string]string{}
			rowVals = append(rowVals, rv)
		}
		idx[rv][cv] = cell
	}
	if first == nil {
		return nil
	}
	numeric := !slices.ContainsFunc(rowVals, func(x string) bool { _, err := strconv.ParseFloat(x, 64); return err != nil })
	if numeric {
		slices.SortStableFunc(rowVals, func(x, y string) int {
			a, _ := strconv.ParseFloat(x, 64)
			c, _ := strconv.ParseFloat(y, 64)
			return cmp.Compare(a, c)
		})
	}
	threads, _ := strconv.Atoi(first.Labels["threads"])
	if threads == 0 {
		threads, _ = strconv.Atoi(first.Axes[versusAxis(name, tab.ThreadsKey)])
	}
	// The group's cells in this kernel.
	var mine []string
	for _, rv := range rowVals {
		for _, c := range idx[rv] {
			mine = append(mine, c)
		}
	}
	seen := func(key string) bool { return b.anyPositiveIn(mine, col, key) }
	ctx := b.context(first, false) + ", " + backendName(backendOf(first)) + ", kernel " + b.colHeader(col)
	t := &Table{Kind: KindVersus, Title: name + " " + v.ColKey + " " + col, Context: ctx,
		LabelHeader: []string{v.RowHeader, "metric"}}
	for _, c := range v.Cols {
		t.Header = append(t.Header, c.Header)
	}
	t.Header = append(t.Header, v.Change)
	rows := tab.Rows(threads, seen)
	var reasons []string
	noteOf := func(why string) int {
		i := slices.Index(reasons, why)
		if i < 0 {
			reasons = append(reasons, why)
			i = len(reasons) - 1
		}
		return i
	}
	type naRef struct{ row, cell, reason int }
	var refs []naRef
	maxCV := 0.0
	for _, rv := range rowVals {
		for _, tm := range rows {
			scale := tm.Scale
			if scale.IsZero() {
				scale = units.For(b.idx.metric(tm.Key).Unit)
			}
			label := rv
			if v.RowLabel != "" {
				label = fmt.Sprintf(v.RowLabel, rv)
			}
			row := Row{Labels: []string{label, tm.Label}}
			var medians []float64
			var ends []Stats // the first and last columns' stats
			for _, vc := range v.Cols {
				cell, ok := idx[rv][vc.Value]
				if !ok {
					row.Cells = append(row.Cells, Cell{Text: "-"})
					medians = append(medians, math.NaN())
					continue
				}
				st := b.stats(cell, col, tm.Key)
				if st.N == 0 {
					medians = append(medians, math.NaN())
					if why := b.unsupported(cell, col); why != "" {
						refs = append(refs, naRef{len(t.Rows), len(row.Cells), noteOf(why)})
						row.Cells = append(row.Cells, Cell{Text: "n/a"})
						continue
					}
					row.Cells = append(row.Cells, Cell{Text: "-"})
					continue
				}
				if tm.Key == tab.Headline {
					maxCV = max(maxCV, st.CV)
				}
				medians = append(medians, st.Median)
				ends = append(ends, st)
				row.Cells = append(row.Cells, Cell{Text: scale.Format(st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
			}
			lo, hi := medians[0], medians[len(medians)-1]
			if lo > 0 && !math.IsNaN(hi) {
				// The same rule as every change column: the verdict.
				d := compareStats(ends[0], ends[len(ends)-1], b.opt.Alpha, b.opt.MinEffect)
				c := Cell{Text: d.DeltaString(), Delta: &d}
				if d.Different() {
					c.Value = ptr(d.Pct)
				}
				row.Cells = append(row.Cells, c)
			} else {
				row.Cells = append(row.Cells, Cell{Text: "-"})
			}
			t.Rows = append(t.Rows, row)
		}
	}
	// The n/a reasons first: cells refer to them by number.
	for _, why := range reasons {
		t.Notes = append(t.Notes, "n/a: "+why)
	}
	for _, r := range refs {
		c := &t.Rows[r.row].Cells[r.cell]
		c.Notes = append(c.Notes, r.reason)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("median of %s runs per cell; %s varies by at most %.1f%% (CV)", b.repsRange(mine), rows[0].Label, maxCV*100))
	if tab.Notes != nil {
		t.Notes = append(t.Notes, tab.Notes(threads, seen)...)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("%s = %s / %s - 1, from the medians, on every row (a negative change of a per-packet cost is a saving): %s",
		v.Change, v.Cols[len(v.Cols)-1].Header, v.Cols[0].Header, changeLegend))
	if b.r.IsEmulated(col) {
		t.Notes = append(t.Notes, emulatedNote)
	}
	if b.r.IsNested(col) {
		t.Notes = append(t.Notes, nestedNote)
	}
	return t
}

// anyPositiveIn reports whether a sample of one of cells in column col
// has metric key > 0.
func (b *builder) anyPositiveIn(cells []string, col, key string) bool {
	for _, cell := range cells {
		for _, s := range b.idx.byCol[cellCol{cell, col}] {
			if s.Metrics[key] > 0 {
				return true
			}
		}
	}
	return false
}
