package report

import (
	"fmt"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// threadKind builds the tables of KindThread: one table per group of cells
// that differ only in the row axis, a block of metric rows per cell (the
// per-patch tables come with them).
type threadKind struct{ *builder }

// threadTables draws each workload's table (workload.Table): one per
// group of cells that have its headline metric and are not in a sweep,
// rows per backend (or kernel), one column per kernel.
func (b threadKind) threadTables() {
	if PerPatchColumns(b.r.Columns) {
		perPatchKind(b).perPatchTables() // a column per patch: a row per column instead
		return
	}
	tables, names := workload.Tables()
	for ti, kind := range tables {
		if kind.Versus != nil {
			continue // versusTables
		}
		groups := b.lab.groupRows(func(s *results.Sample) bool {
			if v, _ := b.idx.versusOf(s); v != nil {
				return false
			}
			_, ok := s.Metrics[kind.Headline]
			return (ok || s.Unsupported != "" && headlineOf(s) == kind.Headline) && !b.inSweep(s) && !b.inSenders(s)
		}, b.lab.rowAxis())
		for _, g := range groups {
			b.r.Tables = append(b.r.Tables, b.threadTable(kind, names[ti], g))
		}
	}
}

// threadTable is workload table kind's table of one group of cells; name
// titles it when the group's generator names no workload.
func (b threadKind) threadTable(kind workload.Table, name string, g *rowGroup) *Table {
	cells, gk := g.cells, g.key
	// The context describes what the rows share: read it from the
	// cell that has every axis of the table (a TAP+vhost-net cell
	// with its pin.vhost, not the TAP cell that lacks it).
	first := b.measured(g.full)
	threads := threadsOf(first, kind)
	title := name
	if w := workload.NameOf(generatorOf(first)); w != "" {
		title = w
	}
	t := &Table{Kind: KindThread, Title: title + " " + strings.TrimPrefix(gk, "cell="), Context: b.lab.context(first, true),
		LabelHeader: []string{"backend", "metric"}}
	for _, c := range b.r.Columns {
		t.Header = append(t.Header, b.lab.colHeader(c))
	}
	two := len(b.r.Columns) == 2
	if two {
		t.Header = append(t.Header, "change")
	}
	seen := b.seen(cells)
	drops := b.lostByReason(cells)
	rows := withDropRows(kind.Rows(threads, seen), drops)
	var na naNotes
	maxCV := 0.0
	shown := map[metric.Key]bool{} // the rows some cell shows: the notes define those
	for _, cell := range cells {
		s := b.measured(cell)
		for _, tm := range rows {
			row, cv, ok := b.threadRow(cell, s, tm, two, len(t.Rows), &na)
			if !ok {
				continue
			}
			shown[tm.Key] = true
			if tm.Key == kind.Headline {
				maxCV = max(maxCV, cv)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	// The n/a reasons first: cells refer to them by number, so that a
	// long reason does not widen the table past a mail's 72 columns.
	na.apply(t)
	seen.Shown = func(k metric.Key) bool { return shown[k] }
	b.threadNotes(t, kind, threads, seen, b.lab.runsNote(cells, rows[0].Label, maxCV))
	t.Notes = append(t.Notes, b.dropNotes(cells, drops)...)
	return t
}

// threadRow is metric tm's row of cell (measured sample s): one cell per
// column and, with two columns, the change. cv is the largest CV of its
// cells; ok is false when no column has a value and, unless no column
// measured the cell at all, when one has an n/a: a column that measured
// the cell says which rows it has. An n/a cell's reason goes to na as
// the note of row rowNum.
func (b threadKind) threadRow(cell string, s *results.Sample, tm workload.TableRow, two bool, rowNum int, na *naNotes) (row Row, cv float64, ok bool) {
	scale := tm.Scale
	if scale.IsZero() {
		scale = units.For(b.idx.metric(tm.Key).Unit)
	}
	row = Row{Labels: []string{b.lab.rowLabel(s), tm.Label}}
	have := false
	type refusal struct {
		cell int
		why  string
	}
	var refused []refusal // the n/a cells
	for _, col := range b.r.Columns {
		st := b.stats(cell, col, tm.Key)
		if st.N == 0 {
			text := "-"
			if why := b.unsupported(cell, col); why != "" {
				refused = append(refused, refusal{len(row.Cells), why})
				text = "n/a"
			}
			row.Cells = append(row.Cells, Cell{Text: text})
			continue
		}
		have = true
		cv = max(cv, st.CV)
		row.Cells = append(row.Cells, Cell{Text: scale.Format(st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
	}
	if !have && (len(refused) == 0 || s.Unsupported == "") {
		return row, cv, false
	}
	for _, r := range refused {
		na.add(rowNum, r.cell, r.why)
	}
	if two {
		d := b.delta(cell, b.r.Columns[1], tm.Key)
		c := Cell{Text: d.DeltaString(), Delta: &d}
		if d.Different() {
			c.Value = ptr(d.Pct)
		}
		if len(refused) > 0 {
			c = Cell{Text: "-"} // nothing to compare with
		}
		row.Cells = append(row.Cells, c)
	}
	return row, cv, true
}

// threadNotes appends the notes of a thread table: note (the runs and CV)
// with the workload's note, its notes, the change legend and the column
// notes.
func (b threadKind) threadNotes(t *Table, kind workload.Table, threads int, seen workload.Seen, note string) {
	if kind.Note != nil {
		if more := kind.Note(threads); more != "" {
			note += "; " + more
		}
	}
	t.Notes = append(t.Notes, note)
	if kind.Notes != nil {
		t.Notes = append(t.Notes, kind.Notes(threads, seen)...)
	}
	if len(b.r.Columns) == 2 {
		t.Notes = append(t.Notes, fmt.Sprintf("change = %s vs %s (medians): %s",
			b.r.Columns[1], b.r.Columns[0], changeLegend))
	}
	t.Notes = append(t.Notes, b.lab.columnNotes()...)
}
