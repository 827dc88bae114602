package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
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
				name, grouped := symbolRow(sym)
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

// symbolRow names the row of a perf report symbol: the symbol itself, or
// for an address perf could not resolve ("0x0000000000003305" in
// "[pktgen]": a module without symbols; JIT code) its module's row,
// "[pktgen] unresolved", so a module's many addresses read as one row.
func symbolRow(sym results.Symbol) (string, bool) {
	if !unresolvedAddr(sym.Symbol) {
		return sym.Symbol, false
	}
	dso := sym.DSO
	switch {
	case strings.HasPrefix(dso, "[JIT]"):
		dso = "[JIT]" // "[JIT] tid 12619": the tid changes from run to run
	case dso == "":
		dso = "[unknown]"
	}
	return dso + " unresolved", true
}

// unresolvedAddr reports whether a symbol is a bare address as perf
// prints one it cannot name: "0x3305", "0x0000000000003305" or
// "ffffffffc0a03305".
func unresolvedAddr(s string) bool {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok && len(s) != 16 {
		return false
	}
	if h == "" {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
