package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// KindPerPatch is a per-patch run's table (run --per-patch): one metric
// of a group of cells, a row per column (the base, then one more patch of
// the series each), with its change from the row above (the patch it
// adds) and from the base, so the patch that moves the metric stands out.
const KindPerPatch = "perpatch"

// PerPatchColumns reports whether cols are a per-patch run's columns: a
// base, then p1, p1-2, ..., p1-N (scenarios.PrefixLabel).
func PerPatchColumns(cols []string) bool {
	if len(cols) < 2 {
		return false
	}
	for i, c := range cols[1:] {
		want := "p1"
		if i > 0 {
			want = "p1-" + strconv.Itoa(i+1)
		}
		if c != want {
			return false
		}
	}
	return true
}

// perPatchKind builds the tables of KindPerPatch: a series of patches as
// columns, each change from the previous patch and from the base.
type perPatchKind struct{ *builder }

// perPatchTables draws, for each workload table's group of cells, one
// per-patch table per main metric (the totals: tx_pps, lost_pps, and the
// Lost by reason rows).
func (b perPatchKind) perPatchTables() {
	tables, names := workload.Tables()
	for ti, kind := range tables {
		if kind.Versus != nil {
			continue
		}
		groups := b.lab.groupRows(func(s *results.Sample) bool {
			if v, _ := b.idx.versusOf(s); v != nil {
				return false
			}
			_, ok := s.Metrics[kind.Headline]
			return ok && !b.inSweep(s)
		}, b.lab.rowAxis())
		for _, g := range groups {
			first := b.measured(g.full)
			threads := threadsOf(first, kind)
			seen := b.seen(g.cells)
			drops := b.lostByReason(g.cells)
			rows := withDropRows(kind.Rows(threads, seen), drops)
			title := names[ti]
			if w := workload.NameOf(generatorOf(first)); w != "" {
				title = w
			}
			for _, tm := range rows {
				if tm.Key != kind.Headline && tm.Key != metric.LostPPS && !strings.HasPrefix(string(tm.Key), metric.DropPrefix) {
					continue // per thread and per packet: in the run's other tables
				}
				t := b.perPatchTable(title, g, first, tm)
				if strings.HasPrefix(string(tm.Key), metric.DropPrefix) {
					t.Notes = append(t.Notes, b.dropNotes(g.cells, drops)...)
				}
				if len(t.Rows) > 0 {
					// What the number counts, over which interval, per
					// thread or total: the workload's own definition of
					// this table's one metric, as its thread table.
					var defs []string
					if kind.Notes != nil {
						one := seen
						one.Shown = func(k metric.Key) bool { return k == tm.Key }
						defs = kind.Notes(threads, one)
					}
					t.Notes = append(defs[:min(len(defs), 1)], t.Notes...) // the first defines the headline and Lost; the others' rows are elsewhere
					b.r.Tables = append(b.r.Tables, t)
				}
			}
		}
	}
}

// perPatchTable is metric tm of group g, one row per column and cell.
func (b perPatchKind) perPatchTable(title string, g *rowGroup, first *results.Sample, tm workload.TableRow) *Table {
	label := strings.TrimPrefix(tm.Label, "- ")
	if label != tm.Label {
		label = "Lost by reason " + label
	}
	t := &Table{Kind: KindPerPatch, Title: fmt.Sprintf("%s %s %s per patch", title, strings.TrimPrefix(g.key, "cell="), tm.Key),
		Context:     label + ", " + b.lab.context(first, true),
		LabelHeader: []string{"backend", "kernel"}, Header: []string{"median", "prev", "base"}, Metric: string(tm.Key)}
	scale := tm.Scale
	if scale.IsZero() {
		scale = units.For(b.idx.metric(tm.Key).Unit)
	}
	for _, cell := range g.cells {
		s := b.measured(cell)
		for i, col := range b.r.Columns {
			st := b.stats(cell, col, tm.Key)
			row := Row{Labels: []string{b.lab.rowLabel(s), col}}
			if st.N == 0 {
				row.Cells = []Cell{{Text: "-"}, {Text: ""}, {Text: ""}}
				t.Rows = append(t.Rows, row)
				continue
			}
			row.Cells = append(row.Cells, Cell{Text: scale.Format(st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
			if i == 0 {
				row.Cells = append(row.Cells, Cell{}, Cell{})
			} else {
				row.Cells = append(row.Cells, b.changeCell(cell, b.r.Columns[i-1], col, tm.Key), b.changeCell(cell, b.r.Base, col, tm.Key))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	// How many runs each median is of, and that a lab kernel's numbers
	// come from a guest inside a lab VM: the other tables say both, and a
	// per-patch table is quoted alone as they are.
	t.Notes = append(t.Notes, b.lab.medianOf(g.cells)+" per row")
	t.Notes = append(t.Notes, b.perPatchNotes()...)
	t.Notes = append(t.Notes, b.lab.nestingNotes()...)
	return t
}

// changeCell is the change of key in cell from column from to column to,
// with the verdict's mark (DeltaString).
func (b perPatchKind) changeCell(cell, from, to string, key metric.Key) Cell {
	fs, ts := b.stats(cell, from, key), b.stats(cell, to, key)
	if fs.N == 0 || ts.N == 0 {
		return Cell{Text: "-"}
	}
	d := compareStats(fs, ts, b.opt.MinEffect, nil)
	c := Cell{Text: d.DeltaString(), Delta: &d}
	if d.Different() {
		c.Value = ptr(d.Pct)
	}
	return c
}

// perPatchNotes say what the columns are (each prefix's last patch, from
// the build's identity) and how to read the changes.
func (b perPatchKind) perPatchNotes() []string {
	var names []string
	for _, col := range b.r.Columns[1:] {
		e := b.r.Env[col]
		if e == nil || e.Build == nil || len(e.Build.Patches) == 0 {
			continue
		}
		p := e.Build.Patches[len(e.Build.Patches)-1]
		what := p.Subject
		if what == "" {
			what = p.File
		}
		names = append(names, fmt.Sprintf("%s adds %s", col, what))
	}
	notes := []string{fmt.Sprintf("one row per kernel: %s, then one more patch of the series each (p1-N = the first N); %s",
		b.r.Base, strings.Join(names, "; "))}
	notes = append(notes, "prev = the change from the row above (what that row's patch did), base = from the base, "+b.r.Base+" (medians): "+changeLegend)
	return slices.Clip(notes)
}
