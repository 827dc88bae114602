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
// first event's section), overheads in percent. The addresses perf could
// not name in one module (a module without symbols: "[pktgen]
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
		name, grouped := sym.Row()
		if !grouped {
			syms = append(syms, sym)
			continue
		}
		if i, ok := group[name]; ok {
			syms[i].Overhead += sym.Overhead
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
			syms[i].Overhead = math.Round(syms[i].Overhead*100) / 100 // perf prints 2 decimals
		}
	}
	slices.SortStableFunc(syms, func(a, b results.Symbol) int { return cmp.Compare(b.Overhead, a.Overhead) })
	if len(syms) > top {
		syms = syms[:top]
	}
	return syms
}
