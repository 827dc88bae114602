package verdict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aclements/go-moremath/stats"
)

// One run of three far from the others carries a mean, not a median: with
// a history of 20 runs (enough for the robust scale) a 3.5% drop whose
// new side has one high run is DIFFERENT at 3 runs by the medians' test,
// which the t test of the means, on the same history, leaves UNKNOWN.
func TestMedianTestOutlier(t *testing.T) {
	s := history(0.01)
	b, n := []float64{99.5, 100, 100.6}, []float64{96.2, 96.6, 101.5}
	r := DecideWith(b, n, DefaultMinEffect, nil, s)
	if r.Verdict != Different || !strings.Contains(r.Reason, "medians' test") || !(r.Hi < 0) {
		t.Errorf("medians' test: %s [%.3g, %.3g] (%s); want DIFFERENT below 0", r.Verdict, r.Lo, r.Hi, r.Reason)
	}
	d := Default
	means := &Plan{Looks: d.Looks, Early: d.Early, EarlyAlpha: d.EarlyAlpha, ScaledAlpha: d.ScaledAlpha,
		Alpha: d.Alpha, SameAlpha: d.SameAlpha, Shape: d.Shape, SameEstimate: d.SameEstimate}
	if r := DecideWith(b, n, DefaultMinEffect, means, s); r.Verdict != Unknown || !strings.Contains(r.Reason, "t test of the logs") {
		t.Errorf("t test of the means: %s (%s); want UNKNOWN", r.Verdict, r.Reason)
	}
	if v := DecideFastWith(b, sorted(n), DefaultMinEffect, Default, s); v != r.Verdict {
		t.Errorf("DecideFastWith %s, DecideWith %s", v, r.Verdict)
	}
	short := PoolScale(make([]Spread, minRobustRuns-1), "x")
	if short != nil && short.Robust != 0 {
		t.Errorf("a history of %d runs has a robust scale", minRobustRuns-1)
	}
}

// The constants of the medians' test: the variance factors of the median
// of n normal values (a seeded simulation) and the trimmed chi-square's
// mean (its closed form at 2 degrees of freedom). With -simtable it prints
// the degrees of freedom whose t quantiles match the medians' test's on
// normal noise for histories of 3 to 30 runs (robustVar's comment).
func TestMedianTestConstants(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	v := make([]float64, 9)
	for n := 3; n <= 9; n++ {
		m := make([]float64, 200000)
		for i := range m {
			for j := range n {
				v[j] = r.NormFloat64()
			}
			slices.Sort(v[:n])
			m[i] = median(v[:n])
		}
		if got := float64(n) * stats.Variance(m); math.Abs(got/medianVarFactor[n]-1) > 0.01 {
			t.Errorf("n=%d: n*Var(median) %.4f, table %.4f", n, got, medianVarFactor[n])
		}
	}
	for _, q := range []float64{0.1, 0.2, 0.5} {
		want := (1 - q - q*math.Log(1/q)) / (1 - q) // E[X | X < -ln q], X exponential
		if got := trimmedChi2Mean(2, q); math.Abs(got-want) > 1e-9 {
			t.Errorf("trimmedChi2Mean(2, %g) = %.6f, want %.6f", q, got, want)
		}
	}
	if *simTable {
		for _, runs := range []int{3, 5, 10, 20, 30} {
			fmt.Printf("%d runs of 3: robust scale matched degrees of freedom %s\n", runs, robustDF(r, runs))
		}
	}
}

// robustDF is, for histories of runs past runs of 3 normal values, the
// degrees of freedom of the t distribution whose quantiles match the
// medians' test statistic's at 1%, 0.35%, 0.15% and 0.05%.
func robustDF(r *rand.Rand, runs int) string {
	const trials = 300000
	ts := make([]float64, trials)
	for i := range ts {
		sp := make([]Spread, runs)
		for k := range sp {
			sp[k] = LogSpread([]float64{100 + normalNoise.draw(r), 100 + normalNoise.draw(r), 100 + normalNoise.draw(r)})
		}
		rv, _ := robustVar(sp)
		b := sorted([]float64{normalNoise.draw(r), normalNoise.draw(r), normalNoise.draw(r)})
		n := sorted([]float64{normalNoise.draw(r), normalNoise.draw(r), normalNoise.draw(r)})
		ts[i] = math.Abs(median(n)-median(b)) / 100 / math.Sqrt(rv*2*medianVar(3))
	}
	slices.Sort(ts)
	var out []string
	for _, a := range []float64{0.01, 0.0035, 0.0015, 0.0005} {
		q := ts[int(trials*(1-a))]
		lo, hi := 0.5, 1e4
		for range 60 {
			if mid := math.Sqrt(lo * hi); stats.InvCDF(stats.TDist{V: mid})(1-a/2) > q {
				lo = mid
			} else {
				hi = mid
			}
		}
		out = append(out, fmt.Sprintf("%.1f at %g", hi, a))
	}
	return strings.Join(out, ", ")
}
