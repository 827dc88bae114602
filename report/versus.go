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

// versusKind builds the tables of KindVersus: two variants of a workload
// side by side (workload.Versus).
type versusKind struct{ *builder }

// versusTables draws the Versus tables: per workload that has one, per
// group of its cells that differ only in the row and column axes, one
// table per kernel: row groups the row axis's values, sub-rows the
// workload's metric rows, columns the column axis's values and the
// change from the first to the last column (from the medians).
func (b versusKind) versusTables() {
	for _, w := range workload.All() {
		tr, ok := w.(workload.Tabler)
		if !ok || tr.Table().Versus == nil {
			continue
		}
		tab, name := tr.Table(), w.Name()
		v := tab.Versus
		rowAx, colAx := versusAxis(name, v.RowKey), versusAxis(name, v.ColKey)
		groups, order := b.lab.groupCells(func(s *results.Sample) bool {
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
func (b versusKind) versusTable(tab workload.Table, name string, cells []string, col string) *Table {
	v := tab.Versus
	g := b.versusGridOf(cells, col, versusAxis(name, v.RowKey), versusAxis(name, v.ColKey))
	if g.first == nil {
		return nil
	}
	threads := threadsOf(g.first, tab)
	seen := b.seenIn(g.mine, col)
	backend := backendName(backendOf(g.first))
	if tab.OffNIC {
		backend = "guest NIC " + backend + ", not on the measured path"
	}
	one := b.lab // the table shows column col alone
	one.only = col
	ctx := one.context(g.first, false) + ", " + backend + ", kernel " + b.lab.colHeader(col)
	t := &Table{Kind: KindVersus, Title: name + " " + v.ColKey + " " + col, Context: ctx,
		LabelHeader: []string{v.RowHeader, "metric"}}
	for _, c := range v.Cols {
		t.Header = append(t.Header, c.Header)
	}
	t.Header = append(t.Header, v.Change)
	rows := tab.Rows(threads, seen)
	var na naNotes
	maxCV := 0.0
	for _, rv := range g.rowVals {
		for _, tm := range rows {
			row, cv := b.versusRow(tab, g, col, rv, tm, len(t.Rows), &na)
			if tm.Key == tab.Headline {
				maxCV = max(maxCV, cv)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	// The n/a reasons first: cells refer to them by number.
	na.apply(t)
	t.Notes = append(t.Notes, b.lab.runsNote(g.mine, rows[0].Label, maxCV))
	if tab.Notes != nil {
		t.Notes = append(t.Notes, tab.Notes(threads, seen)...)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("%s = %s / %s - 1, from the medians, on every row (a negative change of a per-packet cost is a saving): %s",
		v.Change, v.Cols[len(v.Cols)-1].Header, v.Cols[0].Header, changeLegend))
	for _, n := range []string{b.lab.emulatedLegend(col), b.lab.nestedLegend(col)} {
		if n != "" {
			t.Notes = append(t.Notes, n)
		}
	}
	return t
}

// versusGrid is a group's cells in one kernel, by row and column value.
type versusGrid struct {
	idx     map[string]map[string]string // idx[row value][column value] = cell
	rowVals []string                     // in table order
	first   *results.Sample              // a supported sample if there is one
	mine    []string                     // the cells with samples
}

// versusGridOf indexes the cells that have samples in kernel col; first
// is nil when none has.
func (b versusKind) versusGridOf(cells []string, col, rowAx, colAx string) versusGrid {
	g := versusGrid{idx: map[string]map[string]string{}}
	for _, cell := range cells {
		ss := b.idx.byCol[cellCol{cell, col}]
		if len(ss) == 0 {
			continue
		}
		for _, s := range ss {
			if g.first == nil || g.first.Unsupported != "" && s.Unsupported == "" {
				g.first = s
			}
		}
		s := b.firstSample(cell)
		rv, cv := s.Axes[rowAx], s.Axes[colAx]
		if g.idx[rv] == nil {
			g.idx[rv] = map[string]string{}
			g.rowVals = append(g.rowVals, rv)
		}
		g.idx[rv][cv] = cell
	}
	numeric := !slices.ContainsFunc(g.rowVals, func(x string) bool { _, err := strconv.ParseFloat(x, 64); return err != nil })
	if numeric {
		slices.SortStableFunc(g.rowVals, func(x, y string) int {
			a, _ := strconv.ParseFloat(x, 64)
			c, _ := strconv.ParseFloat(y, 64)
			return cmp.Compare(a, c)
		})
	}
	for _, rv := range g.rowVals {
		for _, c := range g.idx[rv] {
			g.mine = append(g.mine, c)
		}
	}
	return g
}

// versusRow is metric tm's row for row value rv: one cell per column value
// and the change from the first to the last. cv is the largest CV of its
// cells; n/a cells are noted in na as cells of row number rowNum.
func (b versusKind) versusRow(tab workload.Table, g versusGrid, col, rv string, tm workload.TableRow, rowNum int, na *naNotes) (Row, float64) {
	v := tab.Versus
	scale := tm.Scale
	if scale.IsZero() {
		scale = units.For(b.idx.metric(tm.Key).Unit)
	}
	label := rv
	if v.RowSize {
		label = units.Bytes(rv)
	}
	if v.RowLabel != "" {
		label = fmt.Sprintf(v.RowLabel, label)
	}
	row := Row{Labels: []string{label, tm.Label}}
	var medians []float64
	var ends []Stats // the measured columns' stats: the first and last compared
	maxCV := 0.0
	for _, vc := range v.Cols {
		cell, ok := g.idx[rv][vc.Value]
		if !ok {
			na.dash(vc.Header, "not run: this run has no "+vc.Header+" cell of that row")
			row.Cells = append(row.Cells, Cell{Text: "-"})
			medians = append(medians, math.NaN())
			continue
		}
		st := b.stats(cell, col, tm.Key)
		if st.N == 0 {
			medians = append(medians, math.NaN())
			if why := b.unsupported(cell, col); why != "" {
				na.add(rowNum, len(row.Cells), why)
				row.Cells = append(row.Cells, Cell{Text: "n/a"})
				continue
			}
			na.dash(vc.Header, "no value: its runs did not report this metric")
			row.Cells = append(row.Cells, Cell{Text: "-"})
			continue
		}
		maxCV = max(maxCV, st.CV)
		medians = append(medians, st.Median)
		ends = append(ends, st)
		row.Cells = append(row.Cells, Cell{Text: scale.Format(st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
	}
	lo, hi := medians[0], medians[len(medians)-1]
	if lo > 0 && !math.IsNaN(hi) {
		// The same rule as every change column: the verdict.
		d := compareStats(ends[0], ends[len(ends)-1], b.opt.MinEffect, nil)
		c := Cell{Text: d.DeltaString(), Delta: &d}
		if d.Different() {
			c.Value = ptr(d.Pct)
		}
		row.Cells = append(row.Cells, c)
	} else {
		first, last := v.Cols[0].Header, v.Cols[len(v.Cols)-1].Header
		na.dash(v.Change, "nothing to compare: it needs a "+first+" median above 0 and a "+last+" median")
		row.Cells = append(row.Cells, Cell{Text: "-"})
	}
	return row, maxCV
}

// seenIn is what the samples of cells in column col hold.
func (b versusKind) seenIn(cells []string, col string) workload.Seen {
	return seenIn(cells, func(cell string) []*results.Sample { return b.idx.byCol[cellCol{cell, col}] })
}
