package report

import (
	"slices"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// unsupported returns why cell cannot run in column col (the reason of its
// samples marked Unsupported), or "".
func (b *builder) unsupported(cell, col string) string {
	for _, s := range b.idx.byCol[cellCol{cell, col}] {
		if s.Unsupported != "" {
			return s.Unsupported
		}
	}
	return ""
}

// naNotes numbers the reasons of a table's n/a cells and keeps the
// reasons of its "-" cells (once each, by column).
type naNotes struct {
	reasons []string
	refs    []naRef
	dashes  []string
}

type naRef struct{ row, cell, reason int }

// add notes that cell (row, cell) is n/a because of why.
func (n *naNotes) add(row, cell int, why string) {
	i := slices.Index(n.reasons, why)
	if i < 0 {
		n.reasons = append(n.reasons, why)
		i = len(n.reasons) - 1
	}
	n.refs = append(n.refs, naRef{row, cell, i})
}

// dash notes that a cell under column header reads "-" because of why:
// a "-" says why as an n/a does.
func (n *naNotes) dash(header, why string) {
	note := `"-" under ` + header + " = " + why
	if !slices.Contains(n.dashes, note) {
		n.dashes = append(n.dashes, note)
	}
}

// apply appends the reasons to t's notes and the reasons' numbers to the
// notes of the n/a cells, then the reasons of the "-" cells.
func (n *naNotes) apply(t *Table) {
	for _, why := range n.reasons {
		t.Notes = append(t.Notes, "n/a: "+why)
	}
	t.Notes = append(t.Notes, n.dashes...)
	for _, r := range n.refs {
		c := &t.Rows[r.row].Cells[r.cell]
		c.Notes = append(c.Notes, r.reason)
	}
}

// headlineOf is the headline metric of the table of s's workload ("" =
// none).
func headlineOf(s *results.Sample) metric.Key {
	if w, ok := workload.Lookup(workload.NameOf(generatorOf(s))); ok {
		if t, ok := w.(workload.Tabler); ok {
			return t.Table().Headline
		}
	}
	return ""
}

// measured returns the first sample of cell that has metrics (not
// Unsupported), else the first sample: what headers and row labels read.
func (b *builder) measured(cell string) *results.Sample {
	for _, s := range b.idx.byCell[cell] {
		if s.Unsupported == "" {
			return s
		}
	}
	return b.firstSample(cell)
}
