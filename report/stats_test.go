package report

import (
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
	// n=5 has no finite 95% median CI (benchmath needs >= 6).
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
	d := Compare(base, worse, true, 0.05, verdict.MinEffect{})
	if !d.Significant || d.TooFew || d.P > 0.01 || math.Abs(d.Pct-(401.0/451-1)*100) > 1e-9 {
		t.Errorf("clear regression: %+v", d)
	}
	// Significant at 0.05, but 5 runs are below the plan's first look:
	// the change column says UNKNOWN, never a bare change.
	if got := d.DeltaString(); got != "? -11.09%" {
		t.Errorf("DeltaString = %q", got)
	}
	if got := d.PString(); got != "p=0.008 n=5" {
		t.Errorf("PString = %q", got)
	}
	// 10 per side, all apart: DIFFERENT.
	d = Compare(append(base, 453, 448, 450, 454, 452), append(worse, 403, 398, 400, 404, 402), true, 0.05, verdict.MinEffect{})
	if got := d.DeltaString(); !d.Different() || got != "-11.07%" {
		t.Errorf("n=10: DeltaString = %q, verdict %+v", got, d.Verdict)
	}
	// Three per side can never be significant at 0.05, however different.
	d = Compare([]float64{1, 2, 3}, []float64{100, 200, 300}, false, 0.05, verdict.MinEffect{})
	if d.Significant || !d.TooFew || d.DeltaString() != "? +9900.00%" || len(d.Warnings) == 0 {
		t.Errorf("n=3: %+v, want ? +9900.00%% with a too-few warning", d)
	}
	// 4 per side can.
	d = Compare([]float64{1, 2, 3, 4}, []float64{100, 200, 300, 400}, false, 0.05, verdict.MinEffect{})
	if !d.Significant || d.TooFew {
		t.Errorf("n=4: %+v, want significant", d)
	}
	if p := minUTestP(3, 4); math.Abs(p-2.0/35) > 1e-12 {
		t.Errorf("minUTestP(3,4) = %v", p)
	}
}
