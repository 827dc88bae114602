package runner

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/perfparse"
)

// perfSymbols returns the top rows of perf report's text output (the
// first event's section), overheads in percent: the top symbols by their
// own share (Self) and, from a report with --children, those by their
// share with callees (Children), in order of Self. The addresses perf
// could not name in one module (a module without symbols: "[pktgen]
// 0x0000000000003305", JIT code) add up in one row per module first
// (results.Symbol.Row), so they take one place in the top, not dozens.
func perfSymbols(out []byte, target string, top int) []results.Symbol {
	rep, err := perfparse.ParsePerfReport(bytes.NewReader(out))
	if err != nil || len(rep.Sections) == 0 {
		return nil
	}
	var syms []results.Symbol
	group := map[string]int{} // module row -> index in syms
	for _, row := range rep.Sections[0].Rows {
		sym := results.Symbol{Target: target, Overhead: row.Overhead * 100, DSO: row.SharedObject, Symbol: row.Symbol}
		if row.Children != nil {
			sym.Children = ptrTo(*row.Children * 100)
		}
		name, grouped := sym.Row()
		if !grouped {
			syms = append(syms, sym)
			continue
		}
		if i, ok := group[name]; ok {
			syms[i].Overhead += sym.Overhead
			if sym.Children != nil && syms[i].Children != nil {
				*syms[i].Children += *sym.Children
			}
			syms[i].Addresses++
			continue
		}
		group[name] = len(syms)
		sym.Symbol, sym.Addresses = name, 1
		if strings.HasPrefix(sym.DSO, "[JIT]") {
			sym.DSO = "[JIT]"
		}
		syms = append(syms, sym)
	}
	for i := range syms {
		if syms[i].Addresses > 1 {
			syms[i].Overhead = round2(syms[i].Overhead) // perf prints 2 decimals
			if c := syms[i].Children; c != nil {
				*c = round2(*c)
			}
		}
	}
	bySelf := func(a, b results.Symbol) int { return cmp.Compare(b.Overhead, a.Overhead) }
	slices.SortStableFunc(syms, bySelf)
	if len(syms) <= top {
		return syms
	}
	keep := slices.Clone(syms[:top])
	byChildren := slices.Clone(syms)
	slices.SortStableFunc(byChildren, func(a, b results.Symbol) int { return cmp.Compare(children(b), children(a)) })
	for _, s := range byChildren[:top] {
		if s.Children != nil && !slices.ContainsFunc(keep, func(k results.Symbol) bool { return k.Symbol == s.Symbol && k.DSO == s.DSO }) {
			keep = append(keep, s)
		}
	}
	slices.SortStableFunc(keep, bySelf)
	return keep
}

func children(s results.Symbol) float64 {
	if s.Children == nil {
		return 0
	}
	return *s.Children
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func ptrTo(v float64) *float64 { return &v }
