package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
)

// A gate fails closed: a gated metric that one side has in a cell and the
// other side lacks (the cell is absent there, all its runs failed, or the
// kernel refused it: n/a) is MISSING, a failure, never a pass on nothing.

// sideFailures returns the first lines of the errors of the samples that
// failed to measure, by cell and side ("base", "new"), with the cells
// named as joinSides names them. Call it before joinSides.
func sideFailures(base, new *results.Set) map[cellCol][]string {
	multi := len(base.Kernels()) > 1 || len(new.Kernels()) > 1
	out := map[cellCol][]string{}
	for _, side := range []struct {
		label string
		set   *results.Set
	}{{"base", base}, {"new", new}} {
		for _, s := range side.set.Failed {
			cell := s.Cell
			if multi {
				cell = s.Kernel + ":" + cell
			}
			k := cellCol{cell, side.label}
			out[k] = append(out[k], firstLine(s.Error))
		}
	}
	return out
}

// gateCells are the cells a gate looks at: those with samples on a side,
// then those whose runs all failed, in order.
func gateCells(idx *index, failed map[cellCol][]string) []string {
	cells := slices.Clone(idx.cells)
	var extra []string
	for k := range failed {
		if !slices.Contains(cells, k.cell) && !slices.Contains(extra, k.cell) {
			extra = append(extra, k.cell)
		}
	}
	slices.Sort(extra)
	return append(cells, extra...)
}

// missingWhy says why side ("base" or "new") has no values of metric in
// cell.
func missingWhy(idx *index, failed map[cellCol][]string, cell, side, metric string) string {
	name := strings.ToUpper(side)
	ss := idx.byCol[cellCol{cell, side}]
	for _, s := range ss {
		if s.Unsupported != "" {
			return fmt.Sprintf("n/a on %s (%s)", name, s.Unsupported)
		}
	}
	errs := failed[cellCol{cell, side}]
	switch {
	case len(ss) == 0 && len(errs) > 0:
		return fmt.Sprintf("all %d runs failed on %s (%s)", len(errs), name, errs[0])
	case len(ss) == 0:
		return fmt.Sprintf("%s has no such cell", name)
	}
	return fmt.Sprintf("%s's %d runs have no %s", name, len(ss), metric)
}

// allowed reports whether the --allow-missing list names metric or cell.
func allowed(names []string, metric, cell string) bool {
	return slices.Contains(names, metric) || slices.Contains(names, cell)
}
