package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
)

func (b *builder) perfSymTables() {
	for _, cell := range b.idx.cells {
		// overhead[target][symbol][column] -> values over reps
		type key struct{ target, sym string }
		vals := map[key]map[string][]float64{}
		reps := map[string]int{}
		var targets []string
		unresolved := map[string]bool{} // targets with a module's unresolved row
		for _, s := range b.idx.byCell[cell] {
			if len(s.Symbols) == 0 {
				continue
			}
			reps[s.Kernel]++
			// One value per row name and sample: a module's unresolved
			// addresses add up in one row.
			sum := map[key]float64{}
			var order []key
			for _, sym := range s.Symbols {
				name, grouped := sym.Row()
				k := key{cmp.Or(sym.Target, s.Labels["target"]), name}
				if grouped {
					unresolved[k.target] = true
				}
				if _, ok := sum[k]; !ok {
					order = append(order, k)
				}
				sum[k] += sym.Overhead
			}
			for _, k := range order {
				if !slices.Contains(targets, k.target) {
					targets = append(targets, k.target)
				}
				if vals[k] == nil {
					vals[k] = map[string][]float64{}
				}
				vals[k][s.Kernel] = append(vals[k][s.Kernel], sum[k])
			}
		}
		if len(vals) == 0 {
			continue
		}
		sort.Strings(targets)
		// A symbol absent from a sample's top list counts as 0 there.
		median := func(k key, col string) float64 {
			v := slices.Clone(vals[k][col])
			for len(v) < reps[col] {
				v = append(v, 0)
			}
			if len(v) == 0 {
				return math.NaN()
			}
			return Summarize(v, false).Median
		}
		maxOverhead := func(k key) float64 {
			best := 0.0
			for _, col := range b.r.Columns {
				if m := median(k, col); !math.IsNaN(m) {
					best = max(best, m)
				}
			}
			return best
		}
		for _, tg := range targets {
			var syms []key
			for k := range vals {
				if k.target == tg {
					syms = append(syms, k)
				}
			}
			slices.SortFunc(syms, func(x, y key) int {
				return cmp.Or(-cmp.Compare(maxOverhead(x), maxOverhead(y)), cmp.Compare(x.sym, y.sym))
			})
			if len(syms) > b.opt.Top {
				syms = syms[:b.opt.Top]
			}
			t := &Table{Kind: KindPerfSyms, Title: "perf report " + cell + " " + tg,
				Context: fmt.Sprintf("perf report top %d, %s, target %s", b.opt.Top, cell, cmp.Or(tg, "-")), LabelHeader: []string{"symbol"}}
			for _, c := range b.r.Columns {
				t.Header = append(t.Header, b.colHeader(c))
			}
			t.Header = append(t.Header, b.changeHeaders("delta")...)
			for _, k := range syms {
				r := Row{Labels: []string{k.sym}}
				for _, col := range b.r.Columns {
					m := median(k, col)
					if math.IsNaN(m) {
						r.Cells = append(r.Cells, Cell{Text: "-"})
						continue
					}
					r.Cells = append(r.Cells, Cell{Text: fmt.Sprintf("%.2f%%", m), Value: ptr(m), Emulated: b.r.IsEmulated(col)})
				}
				base := median(k, b.r.Base)
				for _, col := range b.r.Columns[1:] {
					m := median(k, col)
					if math.IsNaN(m) || math.IsNaN(base) {
						r.Cells = append(r.Cells, Cell{Text: "-"})
						continue
					}
					r.Cells = append(r.Cells, Cell{Text: fmt.Sprintf("%+.2f", m-base), Value: ptr(m - base)})
				}
				t.Rows = append(t.Rows, r)
			}
			t.Notes = append(t.Notes, "overhead = median share of samples in percent; delta in percentage points vs "+b.r.Base+"; a symbol missing from a run's top list counts as 0")
			if unresolved[tg] {
				t.Notes = append(t.Notes, "[module] unresolved = the addresses perf could not name in that module (no symbols for it, e.g. [pktgen] 0x3305), summed per run")
			}
			t.Notes = append(t.Notes, b.nestingNotes()...)
			b.r.Tables = append(b.r.Tables, t)
		}
	}
}
