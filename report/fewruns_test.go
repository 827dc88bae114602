package report

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/verdict"
)

// A table whose change cells are UNKNOWN for too few runs says why and
// what to do; one whose cells reached the first look does not.
func TestFewRunsNote(t *testing.T) {
	table := func(sizes ...int) *Table {
		tb := &Table{}
		for _, n := range sizes {
			b, x := make([]float64, n), make([]float64, n)
			for i := range n {
				b[i], x[i] = float64(100+i), float64(80+i)
			}
			d := Compare(b, x, false, verdict.MinEffect{})
			tb.Rows = append(tb.Rows, Row{Cells: []Cell{{Text: d.DeltaString(), Delta: &d}}})
		}
		fewRunsNote(tb)
		return tb
	}
	if tb := table(2, 2); len(tb.Notes) != 1 || !strings.HasPrefix(tb.Notes[0], "? = UNKNOWN: 2 runs per side, a verdict needs at least 10; add repetitions or use `vnetbench run --until-decided`") {
		t.Errorf("2 runs per side: notes %q", tb.Notes)
	}
	if tb := table(1); len(tb.Notes) != 1 || !strings.Contains(tb.Notes[0], ": 1 run per side,") {
		t.Errorf("1 run per side: notes %q", tb.Notes)
	}
	if tb := table(3, 5, 12); len(tb.Notes) != 1 || !strings.Contains(tb.Notes[0], ": 3-5 runs per side,") {
		t.Errorf("3 and 5 runs per side: notes %q", tb.Notes)
	}
	if tb := table(12); len(tb.Notes) != 0 {
		t.Errorf("12 runs per side: notes %q, want none", tb.Notes)
	}
}
