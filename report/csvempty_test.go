package report

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
)

// noiseRun is a real run of 30 repetitions per cell (internal/verdict's
// noise fixture): enough for finite confidence intervals of the median.
var noiseRun = filepath.Join("..", "internal", "verdict", "testdata", "real", "noise-tcg")

// csvRows renders set as CSV and returns its rows keyed by header name.
func csvRows(t *testing.T, set *results.Set) []map[string]string {
	t.Helper()
	r, err := Build(set, Options{By: "kernel"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, set, r, "csv", ASCII); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, h := range recs[0] {
			row[h] = rec[i]
		}
		out = append(out, row)
	}
	return out
}

// A CSV cell with no number is empty, never a number that is not one: a
// metric without a harmonic mean (not a rate, or a run with a 0) once
// read hmean 0 (noise-tcg's retransmits of 2 to 5 per run), and an
// interval moremath leaves open on one side at 4 or 5 runs (the text's
// "no 95% confidence interval") read ci_lo empty with ci_hi the largest
// run, where JSON has neither.
func TestCSVLeavesMissingNumbersEmpty(t *testing.T) {
	full, err := results.Load(noiseRun)
	if err != nil {
		t.Fatal(err)
	}
	five := *full
	five.Samples = slices.DeleteFunc(slices.Clone(full.Samples), func(s results.Sample) bool { return s.Rep >= 5 })
	for name, set := range map[string]*results.Set{"30 runs": full, "first 5 runs": &five} {
		t.Run(name, func(t *testing.T) {
			rows := csvRows(t, set)
			retrans := 0
			for _, row := range rows {
				if row["hmean"] == "0" {
					t.Errorf("%s %s: hmean 0 (min %s)", row["cell"], row["metric"], row["min"])
				}
				if (row["ci_lo"] == "") != (row["ci_hi"] == "") {
					t.Errorf("%s %s n=%s: ci_lo %q, ci_hi %q: an interval open on one side", row["cell"], row["metric"], row["n"], row["ci_lo"], row["ci_hi"])
				}
				if row["metric"] == "retransmits" {
					retrans++
				}
			}
			if retrans == 0 {
				t.Fatal("no retransmits rows: the fixture changed")
			}
		})
	}
}
