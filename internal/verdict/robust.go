package verdict

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/mathx"
	"github.com/aclements/go-moremath/stats"
)

// The medians' test. With 3 runs per side one outlier carries a mean, and
// heavy-tailed noise has many: on Student t3 noise the t test of the mean
// logs, even with the variance of 30 past runs, called 94.2% of 5-IQR
// shifts at 3 runs, against 100% on normal noise. The median of 3 ignores
// the outlier. So the first early look with a history scale of 20 runs or
// more compares the sides' median logs, scaled by a robust estimate of
// the within-run variance (robustVar), whose degrees of freedom and the
// medians' variance factors come from seeded simulations of normal noise
// (TestMedianTestConstants): Student t3 noise then gets 96.5% of 5-IQR
// shifts at 3 runs (94.2% with the means) and normal and real noise keep
// 100%, at 0.86% false DIFFERENT over all looks on t3 (0.74% with the
// means; under 1%) and no more on the other two (docs/compare.md). The later early look keeps the
// means: at 6 runs a mean loses less to an outlier, and the robust
// locations tried there (mean without the extremes, Hodges-Lehmann)
// called fewer than the target of 90% of 2-IQR shifts on normal noise,
// or more false DIFFERENT on t3 noise.

// robustTrim is the share of the past runs' variances, the largest,
// that robustVar leaves out.
const robustTrim = 0.2

// minRobustRuns is the fewest past runs for the medians' test. With 10
// runs of 3 its trimmed scale has about 15 degrees of freedom and the
// means' test, whose pooled variance has 24, calls more: 99.9% against
// 99.1% of 5-IQR shifts at 3 runs on normal noise, 90.6% against 89.7%
// on Student t3 noise (2,000 comparisons each).
const minRobustRuns = 20

// robustVar is the mean of the runs' variances, each divided by the mean
// a trimmed chi-square of its degrees of freedom has (trimmedChi2Mean),
// without the largest fifth of them: on normal noise an estimate of the
// within-run variance; under heavy tails it does not follow the few runs
// with an outlier that inflate a pooled variance. Its degrees of freedom,
// as the scale of the medians' test, are at least 1.5 times the runs
// (the t quantile matched at 0.15%, the test's level, on normal noise
// with 3 repetitions a run: 5.9, 9.2, 18.5, 35.6 and 47.6 for 3, 5, 10,
// 20 and 30 runs, TestMedianTestConstants -simtable); the median of the
// variances, tried too, has about one per run.
func robustVar(runs []Spread) (v, df float64) {
	drop := int(robustTrim * float64(len(runs)))
	q := float64(drop) / float64(len(runs))
	w := make([]float64, len(runs))
	mean := map[int]float64{} // trimmedChi2Mean by repetitions: 80 GammaIncs each
	for i, r := range runs {
		m, ok := mean[r.N]
		if !ok {
			m = trimmedChi2Mean(float64(r.N-1), q)
			mean[r.N] = m
		}
		w[i] = r.Var / m
	}
	slices.Sort(w)
	return stats.Mean(w[:len(w)-drop]), 1.5 * float64(len(runs))
}

// trimmedChi2Mean is the mean of a chi-square variable X of k degrees of
// freedom over k below its 1-q quantile c, E[X 1{X<c}]/(1-q): with X
// gamma of shape k/2 and scale 2/k, E[X 1{X<c}] = P(k/2+1, ck/2), P the
// regularized incomplete gamma function. 1 at q = 0; 0.598 at k = 2 and
// q = 0.2.
func trimmedChi2Mean(k, q float64) float64 {
	if q <= 0 {
		return 1
	}
	lo, hi := 0.0, 100.0 // c, by bisection on P(k/2, ck/2) = 1-q
	for range 80 {
		mid := (lo + hi) / 2
		if mathx.GammaInc(k/2, mid*k/2) < 1-q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return mathx.GammaInc(k/2+1, hi*k/2) / (1 - q)
}

// medianVarFactor[n] is n times the variance of the median of n standard
// normal values (the mean of the middle two for even n), for n = 3 to 9
// (a million seeded draws each, TestMedianTestConstants).
var medianVarFactor = [...]float64{3: 1.346, 4: 1.192, 5: 1.438, 6: 1.289, 7: 1.479, 8: 1.346, 9: 1.497}

// medianVar is the variance of the median of n values of unit variance
// on normal noise: medianVarFactor, and beyond it pi/2, the limit, which
// is larger (so conservative).
func medianVar(n int) float64 {
	if n < len(medianVarFactor) && medianVarFactor[n] > 0 {
		return medianVarFactor[n] / float64(n)
	}
	return math.Pi / 2 / float64(n)
}

// medianDiff is the difference of the median logs of sorted lb and ln
// with its variance on the scale's robust variance (df: RobustDF).
func medianDiff(lb, ln []float64, s *Scale) (logTest, float64) {
	d := median(ln) - median(lb)
	return logTest{d: d, df: s.RobustDF, median: true}, s.Robust * (medianVar(len(lb)) + medianVar(len(ln)))
}
