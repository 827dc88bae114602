package runner

import (
	"bytes"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/perfparse"
)

// perfSymbols returns the top rows of perf report's text output (the
// first event's section), overheads in percent.
func perfSymbols(out []byte, target string, top int) []results.Symbol {
	rep, err := perfparse.ParsePerfReport(bytes.NewReader(out))
	if err != nil || len(rep.Sections) == 0 {
		return nil
	}
	var syms []results.Symbol
	for _, row := range rep.Sections[0].Rows {
		if len(syms) >= top {
			break
		}
		syms = append(syms, results.Symbol{Target: target, Overhead: row.Overhead * 100, DSO: row.SharedObject, Symbol: row.Symbol})
	}
	return syms
}
