package report

import (
	"strings"
	"testing"
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
			d := Compare(b, x, false, MinEffect{})
			tb.Rows = append(tb.Rows, Row{Cells: []Cell{{Text: d.DeltaString(), Delta: &d}}})
		}
		fewRunsNote(tb)
		return tb
	}
	if tb := table(2, 2); len(tb.Notes) != 1 || tb.Rows[0].Cells[0].Text != "-19.90% (2 runs)" ||
		!strings.HasPrefix(tb.Notes[0], "(2 runs) = 2 runs per side: a change without a verdict; from 3 runs per side a change far outside the noise is called DIFFERENT, from 10 SAME too") {
		t.Errorf("2 runs per side: %q, notes %q", tb.Rows[0].Cells[0].Text, tb.Notes)
	}
	if tb := table(1); len(tb.Notes) != 1 || tb.Rows[0].Cells[0].Text != "-20.00% (1 run)" || !strings.HasPrefix(tb.Notes[0], "(1 run) = 1 run per side:") {
		t.Errorf("1 run per side: %q, notes %q", tb.Rows[0].Cells[0].Text, tb.Notes)
	}
	// 3 and 5 runs per side 20% apart with a spread of 1-2%: DIFFERENT at
	// the early look, no note.
	if tb := table(3, 5, 12); len(tb.Notes) != 0 {
		t.Errorf("3 and 5 runs per side: notes %q, want none", tb.Notes)
	}
	noisy := &Table{}
	d := Compare([]float64{100, 104, 97}, []float64{101, 99, 105}, false, MinEffect{})
	noisy.Rows = append(noisy.Rows, Row{Cells: []Cell{{Text: d.DeltaString(), Delta: &d}}})
	if fewRunsNote(noisy); len(noisy.Notes) != 1 || !strings.HasPrefix(noisy.Notes[0], "? at 3 runs per side: below 10 runs per side only a change far outside the noise is called") {
		t.Errorf("3 runs inside the noise: %q, notes %q", d.DeltaString(), noisy.Notes)
	}
}

// A table none of whose changes has a verdict (too few runs everywhere)
// does not carry the legend of verdict marks: its bare changes are not
// DIFFERENT, and "a bare change is DIFFERENT" beside them said they were.
// A table with one decided change keeps it.
func TestFewRunsDropsVerdictLegend(t *testing.T) {
	table := func(sizes ...int) *Table {
		tb := &Table{Header: []string{"a", "b", "change"}, Notes: []string{"change = b vs a (medians): " + changeLegend}}
		for _, n := range sizes {
			b, x := make([]float64, n), make([]float64, n)
			for i := range n {
				b[i], x[i] = float64(100+i), float64(80+i)
			}
			d := Compare(b, x, false, MinEffect{})
			tb.Rows = append(tb.Rows, Row{Cells: []Cell{{Text: "100"}, {Text: "80"}, {Text: d.DeltaString(), Delta: &d}}})
		}
		fewRunsNote(tb)
		return tb
	}
	if tb := table(1, 1); tb.Notes[0] != "change = b vs a (medians)" || tb.Header[2] != "change, 1 run" {
		t.Errorf("1 run per side: header %q, notes %q; want the legend without verdict marks", tb.Header, tb.Notes)
	}
	if tb := table(1, 2); tb.Notes[0] != "change = b vs a (medians)" {
		t.Errorf("1 and 2 runs per side: notes %q; want the legend without verdict marks", tb.Notes)
	}
	if tb := table(1, 3); tb.Notes[0] != "change = b vs a (medians): "+changeLegend {
		t.Errorf("one change decided at 3 runs: notes %q; want the verdict legend", tb.Notes)
	}
}

// A column of 1-run changes with a row whose new side has no sample (a
// CPU/pkt of a cell that sent nothing, lab e2e under load) shows "-"
// there, not the -100% a change to an empty median would read as.
func TestFewRunsEmptySideKeepsDash(t *testing.T) {
	tb := &Table{Header: []string{"a", "b", "change"}}
	for _, x := range [][]float64{{80}, nil} {
		d := Compare([]float64{100}, x, false, MinEffect{})
		tb.Rows = append(tb.Rows, Row{Cells: []Cell{{Text: "100"}, {Text: "-"}, {Text: d.DeltaString(), Delta: &d}}})
	}
	fewRunsNote(tb)
	if got := tb.Rows[0].Cells[2].Text; got != "-20.00%" || tb.Header[2] != "change, 1 run" {
		t.Errorf("1 run per side: %q under %q, want -20.00%% under \"change, 1 run\"", got, tb.Header[2])
	}
	if got := tb.Rows[1].Cells[2].Text; got != "-" {
		t.Errorf("no new sample: change %q, want -", got)
	}
}
