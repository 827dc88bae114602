package runner

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/report"
)

// perfRow matches a `perf report --stdio --no-children --sort dso,symbol`
// row: "    12.34%  [kernel.kallsyms]  [k] _raw_spin_lock".
var perfRow = regexp.MustCompile(`^\s*([0-9.]+)%\s+(.+?)\s+\[([k.gujH])\]\s+(.+?)\s*$`)

// perfSymbols returns the top rows of perf report's text output.
func perfSymbols(out []byte, target string, top int) []report.Symbol {
	var syms []report.Symbol
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && len(syms) < top {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		m := perfRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		sym := m[4]
		// Trailing columns (e.g. "-      -" for IPC/cycles) follow after
		// a run of spaces.
		if i := strings.Index(sym, "  "); i > 0 {
			sym = sym[:i]
		}
		syms = append(syms, report.Symbol{Target: target, Overhead: v, DSO: m[2], Symbol: sym})
	}
	return syms
}
