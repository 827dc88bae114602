package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
)

// perfSymsKind builds the tables of KindPerfSyms: perf report's top
// symbols of each cell and target; the profile tables come with them
// (profileKind).
type perfSymsKind struct{ *builder }

// perfSymTables adds, per cell and target, a table of the top symbols of
// perf report.
func (b perfSymsKind) perfSymTables() {
	prof := profileKind(b)
	for _, cell := range b.idx.cells {
		// Two columns with perf report: the 0-day style profile deltas.
		if p := prof.profileOf(cell); len(p.targets) > 0 {
			if base, col, ok := prof.profilePair(p); ok {
				prof.profileTables(cell, p, base, col)
				continue
			}
		}
		cs := b.cellSymsOf(cell)
		if len(cs.vals) == 0 {
			continue
		}
		sort.Strings(cs.targets)
		for _, tg := range cs.targets {
			b.r.Tables = append(b.r.Tables, b.perfSymTable(cell, tg, cs))
		}
	}
}

// unresolvedNote explains a module's "unresolved" row.
const unresolvedNote = "[module] unresolved = the addresses perf could not name in that module (no symbols for it, e.g. [pktgen] 0x3305), summed per run"

// symKey is one row of a perf symbols table: a symbol of a target.
type symKey struct{ target, sym string }

// cellSyms is the symbol overheads of one cell.
type cellSyms struct {
	vals       map[symKey]map[string][]float64 // [target, symbol][column] -> values over reps
	reps       map[string]int                  // samples with symbols per column
	targets    []string
	unresolved map[string]bool // targets with a module's unresolved row
}

// cellSymsOf collects the symbol overheads of cell's samples.
func (b perfSymsKind) cellSymsOf(cell string) cellSyms {
	cs := cellSyms{vals: map[symKey]map[string][]float64{}, reps: map[string]int{}, unresolved: map[string]bool{}}
	for _, s := range b.idx.byCell[cell] {
		if len(s.Symbols) == 0 {
			continue
		}
		cs.reps[s.Kernel]++
		// One value per row name and sample: a module's unresolved
		// addresses add up in one row.
		sum := map[symKey]float64{}
		var order []symKey
		for _, sym := range s.Symbols {
			name, grouped := sym.Row()
			k := symKey{cmp.Or(sym.Target, s.Labels["target"]), name}
			if grouped {
				cs.unresolved[k.target] = true
			}
			if _, ok := sum[k]; !ok {
				order = append(order, k)
			}
			sum[k] += sym.Overhead
		}
		for _, k := range order {
			if !slices.Contains(cs.targets, k.target) {
				cs.targets = append(cs.targets, k.target)
			}
			if cs.vals[k] == nil {
				cs.vals[k] = map[string][]float64{}
			}
			cs.vals[k][s.Kernel] = append(cs.vals[k][s.Kernel], sum[k])
		}
	}
	return cs
}

// median is k's median overhead in column col; a symbol absent from a
// sample's top list counts as 0 there.
func (cs cellSyms) median(k symKey, col string) float64 {
	v := slices.Clone(cs.vals[k][col])
	for len(v) < cs.reps[col] {
		v = append(v, 0)
	}
	if len(v) == 0 {
		return math.NaN()
	}
	return Summarize(v, false).Median
}

// top returns target tg's n symbols of the highest median overhead in any
// of cols.
func (cs cellSyms) top(tg string, cols []string, n int) []symKey {
	maxOverhead := func(k symKey) float64 {
		best := 0.0
		for _, col := range cols {
			if m := cs.median(k, col); !math.IsNaN(m) {
				best = max(best, m)
			}
		}
		return best
	}
	var syms []symKey
	for k := range cs.vals {
		if k.target == tg {
			syms = append(syms, k)
		}
	}
	slices.SortFunc(syms, func(x, y symKey) int {
		return cmp.Or(-cmp.Compare(maxOverhead(x), maxOverhead(y)), cmp.Compare(x.sym, y.sym))
	})
	if len(syms) > n {
		syms = syms[:n]
	}
	return syms
}

// perfSymTable is the table of target tg's top symbols in cell.
func (b perfSymsKind) perfSymTable(cell, tg string, cs cellSyms) *Table {
	t := &Table{Kind: KindPerfSyms, Title: "perf report " + cell + " " + tg,
		Context: fmt.Sprintf("perf report top %d, %s, target %s", b.opt.Top, cell, cmp.Or(tg, "-")), LabelHeader: []string{"symbol"}}
	for _, c := range b.r.Columns {
		t.Header = append(t.Header, b.lab.colHeader(c))
	}
	t.Header = append(t.Header, b.lab.changeHeaders("delta")...)
	for _, k := range cs.top(tg, b.r.Columns, b.opt.Top) {
		t.Rows = append(t.Rows, b.perfSymRow(cs, k))
	}
	t.Notes = append(t.Notes, "overhead = median share of samples in percent; delta in percentage points vs "+b.r.Base+"; a symbol missing from a run's top list counts as 0")
	if cs.unresolved[tg] {
		t.Notes = append(t.Notes, unresolvedNote)
	}
	t.Notes = append(t.Notes, b.lab.nestingNotes()...)
	return t
}

// perfSymRow is symbol k's row: its median overhead per column, then the
// change of each column from the base column.
func (b perfSymsKind) perfSymRow(cs cellSyms, k symKey) Row {
	r := Row{Labels: []string{k.sym}}
	for _, col := range b.r.Columns {
		m := cs.median(k, col)
		if math.IsNaN(m) {
			r.Cells = append(r.Cells, Cell{Text: "-"})
			continue
		}
		r.Cells = append(r.Cells, Cell{Text: fmt.Sprintf("%.2f%%", m), Value: ptr(m), Emulated: b.r.IsEmulated(col)})
	}
	base := cs.median(k, b.r.Base)
	for _, col := range b.r.Columns[1:] {
		m := cs.median(k, col)
		if math.IsNaN(m) || math.IsNaN(base) {
			r.Cells = append(r.Cells, Cell{Text: "-"})
			continue
		}
		r.Cells = append(r.Cells, Cell{Text: fmt.Sprintf("%+.2f", m-base), Value: ptr(m - base)})
	}
	return r
}
