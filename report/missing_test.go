package report

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// A gate never passes on nothing: a gated metric that one side lacks in a
// cell is MISSING, a failure (exit 1), whether the cell is absent there,
// all its runs failed, or the kernel refused it; --allow-missing lets it
// through by metric or by cell.
func TestGatesFailClosed(t *testing.T) {
	const cell = "tap/pktgen-t1"
	gates, _ := ParseGates("tx_pps<-3%")
	edit := func(set *results.Set, f func(s results.Sample) (keep, fail bool, s2 results.Sample)) *results.Set {
		out := *set
		out.Samples, out.Failed = nil, nil
		for _, s := range set.Samples {
			keep, fail, s2 := f(s)
			switch {
			case fail:
				out.Failed = append(out.Failed, s2)
			case keep:
				out.Samples = append(out.Samples, s2)
			}
		}
		return &out
	}
	absent := func(s results.Sample) (bool, bool, results.Sample) { return s.Cell != cell, false, s }
	failed := func(s results.Sample) (bool, bool, results.Sample) {
		if s.Cell == cell {
			s.Metrics, s.Error = nil, "boot vm0: wait for agent: timeout after 60s\nconsole: ..."
			return false, true, s
		}
		return true, false, s
	}
	allFailed := func(s results.Sample) (bool, bool, results.Sample) {
		s.Metrics, s.Error = nil, "boot vm0: wait for agent: timeout after 60s"
		return false, true, s
	}
	na := func(s results.Sample) (bool, bool, results.Sample) {
		if s.Cell == cell {
			s.Metrics, s.Unsupported = nil, "EOPNOTSUPP: no zero-copy"
		}
		return true, false, s
	}
	for _, tc := range []struct {
		name      string
		baseSide  bool // edit BASE rather than NEW
		f         func(s results.Sample) (bool, bool, results.Sample)
		allow     []string
		want      string
		wantError bool
		cells     int // MISSING cells (0: 1)
	}{
		{"absent in NEW", false, absent, nil, "NEW has no such cell", true, 0},
		{"absent in BASE", true, absent, nil, "BASE has no such cell", true, 0},
		{"all runs failed in NEW", false, failed, nil, "all 10 runs failed on NEW (boot vm0: wait for agent: timeout after 60s)", true, 0},
		{"n/a in NEW", false, na, nil, "n/a on NEW (EOPNOTSUPP: no zero-copy)", true, 0},
		// A kernel that never boots fails every cell: a regression,
		// not bad input.
		{"every run of NEW failed", false, allFailed, nil, "all 10 runs failed on NEW (boot vm0: wait for agent: timeout after 60s)", true, 4},
		{"every run of BASE failed", true, allFailed, nil, "all 10 runs failed on BASE", true, 4},
		{"allowed by metric", false, absent, []string{"tx_pps"}, "NEW has no such cell", false, 0},
		{"allowed by cell", false, failed, []string{cell}, "all 10 runs failed on NEW", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, nw := repeated(loadSet(t, "stock"), 2), repeated(loadSet(t, "stock"), 2)
			if tc.baseSide {
				base = edit(base, tc.f)
			} else {
				nw = edit(nw, tc.f)
			}
			res, err := CompareRuns(base, nw, CompareOptions{Gates: gates, AllowMissing: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			var miss *Decision
			for i, d := range res.Decisions {
				if d.Cell == cell {
					miss = &res.Decisions[i]
				}
			}
			if miss == nil || miss.Verdict != verdict.Missing || !strings.Contains(miss.Missing, tc.want) {
				t.Fatalf("decision of %s: %+v; want MISSING: %s", cell, miss, tc.want)
			}
			var ge *GateError
			gotErr := errors.As(res.Err(), &ge)
			if gotErr != tc.wantError || errors.Is(res.Err(), fault.ErrInput) {
				t.Errorf("Err() = %v; want a GateError: %v", res.Err(), tc.wantError)
			}
			cells := max(tc.cells, 1)
			if gotErr && (len(ge.Missing) != cells || !strings.Contains(ge.Error(), "MISSING: tx_pps in "+cell)) {
				t.Errorf("GateError %q, want it to name the MISSING cell", ge)
			}
			var text, junit bytes.Buffer
			if err := WriteDecisions(&text, res); err != nil {
				t.Fatal(err)
			}
			if err := WriteJUnitDecisions(&junit, "compare", res.Decisions); err != nil {
				t.Fatal(err)
			}
			wantLine := "tx_pps<-3%: " + cell + ": MISSING: "
			if !strings.Contains(text.String(), wantLine) {
				t.Errorf("decisions lack %q:\n%s", wantLine, text.String())
			}
			failure := strings.Contains(junit.String(), `<failure message="tx_pps&lt;-3%: `+cell+`: MISSING`) &&
				strings.Contains(junit.String(), `type="missing"`)
			if failure != tc.wantError {
				t.Errorf("JUnit failure of type missing: %v, want %v:\n%s", failure, tc.wantError, junit.String())
			}
			if !tc.wantError && !strings.Contains(junit.String(), "<skipped message=\"tx_pps&lt;-3%: "+cell+": MISSING") {
				t.Errorf("an allowed MISSING is not skipped in JUnit:\n%s", junit.String())
			}
		})
	}
}

// A cell that one side lacks has no change: its tables show "-" on that
// side and in the change column, never the -100% of a median of nothing
// (before: "? -100.00%" beside a "-").
func TestMissingSideHasNoChange(t *testing.T) {
	const cell = "tap/pktgen-t1"
	base, nw := repeated(loadSet(t, "stock"), 2), repeated(loadSet(t, "stock"), 2)
	nw.Samples = slices.DeleteFunc(slices.Clone(nw.Samples), func(s results.Sample) bool { return s.Cell == cell })
	gates, _ := ParseGates("tx_pps<-3%")
	res, err := CompareRuns(base, nw, CompareOptions{Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, tb := range res.Report.Tables {
		for _, row := range tb.Rows {
			if !slices.ContainsFunc(row.Cells, func(c Cell) bool { return c.Text == "-" }) {
				continue
			}
			rows++
			for _, c := range row.Cells {
				if c.Delta != nil && strings.Contains(c.Text, "%") {
					t.Errorf("%s table %q, row %v: a change %q beside a missing side", tb.Kind, tb.Title, row.Labels, c.Text)
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("no row shows the missing side")
	}
}

// Two sides on which nothing was measured (every cell n/a, or n/a on one
// side and failed on the other) are bad input that says why, as two sides
// whose every run failed are: before, compare named the gate's metric
// unknown, "the results have: " and nothing after it.
func TestNothingMeasuredOnEitherSide(t *testing.T) {
	gates, _ := ParseGates("tx_pps<-3%")
	na := func(set *results.Set, fail bool) *results.Set {
		out := *set
		out.Samples, out.Failed = nil, nil
		for _, s := range set.Samples {
			s.Metrics, s.Threads = nil, nil
			if fail {
				s.Error = "boot vm0: wait for agent: timeout after 60s"
				out.Failed = append(out.Failed, s)
				continue
			}
			s.Unsupported = "EOPNOTSUPP: no zero-copy"
			out.Samples = append(out.Samples, s)
		}
		return &out
	}
	for _, failNew := range []bool{false, true} {
		base, nw := na(loadSet(t, "stock"), false), na(loadSet(t, "stock"), failNew)
		_, err := CompareRuns(base, nw, CompareOptions{Gates: gates})
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), "nothing to compare") || !strings.Contains(fmt.Sprint(err), "n/a (EOPNOTSUPP: no zero-copy)") {
			t.Errorf("NEW failed %v: %v; want bad input that says nothing was measured and why", failNew, err)
		}
	}
}
