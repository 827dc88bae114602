package latency

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// ChangeAlpha is the two-sided level at which [CompareRuns] calls a
// percentile's change: the harness's verdicts allow at most 1% false
// DIFFERENT.
const ChangeAlpha = 0.01

// Change is a percentile's change between two columns' runs of a cell.
type Change struct {
	// Pct is B against A in percent: the ratio of the geometric means of
	// the runs' percentiles.
	Pct float64
	// Lo and Hi bound Pct at 1-ChangeAlpha (NaN without an interval).
	Lo, Hi float64
	// P is the two-sided p-value of the t test on the runs' log
	// percentiles (NaN with fewer than 2 runs a side).
	P float64
	// NA and NB are the runs a side.
	NA, NB int
	// Different: P < ChangeAlpha.
	Different bool
}

// CompareRuns compares the q-percentile of RTT between two columns, each
// given as its runs' RTTs (seconds). Each run is one value, the log of
// its percentile, and the two columns' values are compared with a
// two-sample t test (pooled variance, n_a+n_b-2 degrees of freedom).
//
// The unit is the run, not the probe: a run's probes are not independent
// (a queue that fills delays a burst of consecutive probes), and runs of
// one cell differ more than their probes' order-statistic intervals say
// (under TCG the p99 of one cell's 5 s runs on this machine went from
// 34 ms to 312 ms). Pooling the probes of all runs and calling a change
// when the pooled intervals do not overlap treats 18,000 probes as
// 18,000 independent draws: on real captures it called a change between
// two halves of the same cell's runs in 65-77% of trials (detect_test.go).
// The run-level test knows only the spread it sees, so 3 runs a side
// find a 20% change of p99 only when runs agree to a few percent (a quiet
// host) and otherwise say nothing rather than something false.
func CompareRuns(a, b [][]float64, q float64) Change {
	la, lb := logPercentiles(a, q), logPercentiles(b, q)
	c := Change{NA: len(la), NB: len(lb), P: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Pct: math.NaN()}
	if c.NA == 0 || c.NB == 0 {
		return c
	}
	diff := stats.Mean(lb) - stats.Mean(la)
	if math.Abs(diff) < 1e-12 {
		diff = 0 // the same runs in another order
	}
	c.Pct = math.Expm1(diff) * 100
	if c.NA < 2 || c.NB < 2 {
		return c
	}
	res, err := stats.TwoSampleTTest(stats.Sample{Xs: la}, stats.Sample{Xs: lb}, stats.LocationDiffers)
	if err != nil {
		// Zero variance on both sides: equal runs differ or do not
		// by their means alone.
		if diff != 0 {
			c.P, c.Different, c.Lo, c.Hi = 0, true, c.Pct, c.Pct
		} else {
			c.P, c.Lo, c.Hi = 1, 0, 0
		}
		return c
	}
	c.P = res.P
	c.Different = res.P < ChangeAlpha
	se := diff / res.T
	if res.T == 0 {
		se = 0
	}
	tq := stats.InvCDF(stats.TDist{V: res.DoF})(1 - ChangeAlpha/2)
	c.Lo, c.Hi = math.Expm1(diff-tq*math.Abs(se))*100, math.Expm1(diff+tq*math.Abs(se))*100
	return c
}

// logPercentiles is the log of each run's q-percentile (runs without an
// RTT left out).
func logPercentiles(runs [][]float64, q float64) []float64 {
	var out []float64
	for _, r := range runs {
		if len(r) == 0 {
			continue
		}
		s := slices.Clone(r)
		slices.Sort(s)
		v := Quantile(s, q)
		if v > 0 {
			out = append(out, math.Log(v))
		}
	}
	return out
}
