package report

import (
	"github.com/aclements/go-moremath/stats"
	"math"
	"testing"

	"github.com/vnetbench/vnetbench/internal/verdict"
)

func TestSummarize(t *testing.T) {
	st := Summarize([]float64{5, 1, 4, 2, 3}, true)
	if st.N != 5 || st.Mean != 3 || st.Median != 3 || st.Min != 1 || st.Max != 5 {
		t.Errorf("Summarize = %+v", st)
	}
	if math.Abs(st.Stddev-1.5811388) > 1e-6 || math.Abs(st.CV-0.5270463) > 1e-6 {
		t.Errorf("stddev %v cv %v", st.Stddev, st.CV)
	}
	if math.Abs(st.HMean-2.1897810) > 1e-6 {
		t.Errorf("hmean %v, want 2.18978", st.HMean)
	}
	// n=5 has no finite 95% median CI (the order statistics need >= 6).
	if st.CIFinite() || len(st.Warnings) == 0 {
		t.Errorf("n=5: CI [%v, %v] warnings %q; want infinite with a warning", st.Lo, st.Hi, st.Warnings)
	}
	// n=6 at 95%: the median CI is [min, max].
	if st6 := Summarize([]float64{6, 1, 4, 2, 3, 5}, false); st6.Lo != 1 || st6.Hi != 6 || len(st6.Warnings) != 0 {
		t.Errorf("n=6: CI [%v, %v] warnings %q; want [1, 6]", st6.Lo, st6.Hi, st6.Warnings)
	}
}

func TestCompare(t *testing.T) {
	base := []float64{450, 452, 455, 449, 451}
	worse := []float64{400, 401, 405, 399, 402}
	// 2 runs per side are below the plan's first look: no verdict, the
	// change with the runs; p is the rank test's.
	d := Compare(base[:2], worse[:2], true, MinEffect{})
	if d.Significant || !d.TooFew || d.Alpha != 0 || d.DeltaString() != "-11.20% (2 runs)" {
		t.Errorf("2 per side: %q %+v", d.DeltaString(), d)
	}
	// 5 per side, far apart: the early look at 3 runs calls it, p is the
	// t test's (t = -50/sqrt(5.3*2/5) with 8 degrees of freedom).
	d = Compare(base, worse, true, MinEffect{})
	if !d.Significant || d.TooFew || math.Abs(d.Alpha-verdict.Default.EarlyAlpha[0]) > 1e-12 || math.Abs(d.Pct-(401.0/451-1)*100) > 1e-9 {
		t.Errorf("5 per side: %+v", d)
	}
	if got := d.DeltaString(); got != "-11.09%" {
		t.Errorf("DeltaString = %q", got)
	}
	if want := 2 * (stats.TDist{V: 8}).CDF(-50/math.Sqrt(5.3*2/5)); math.Abs(d.P-want) > 1e-15 {
		t.Errorf("P = %v, want %v", d.P, want)
	}
	if got := d.PString(); got != "p=0.000 n=5" {
		t.Errorf("PString = %q", got)
	}
	// 10 per side, all apart: DIFFERENT, and P <= Alpha says the same.
	d = Compare(append(base, 453, 448, 450, 454, 452), append(worse, 403, 398, 400, 404, 402), true, MinEffect{})
	if got := d.DeltaString(); !d.Different() || got != "-11.07%" || !d.Significant || d.P > d.Alpha || d.TooFew {
		t.Errorf("n=10: DeltaString = %q, %+v", got, d)
	}
	// 10 per side, overlapping: UNKNOWN with P above the look's level.
	d = Compare([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []float64{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, false, MinEffect{})
	if d.Significant || d.P <= d.Alpha || d.Alpha <= 0 || d.TooFew {
		t.Errorf("overlapping n=10: %+v", d)
	}
}
