package verdict

import (
	"fmt"
	"math"

	"github.com/aclements/go-moremath/mathx"
	"github.com/aclements/go-moremath/stats"
)

// A history scale. With 3 or 6 runs per side the early looks' t test
// estimates the noise from those runs alone: 4 or 10 degrees of freedom,
// so its critical value at a strict level is large (t at 0.35% with 4
// degrees of freedom is 6.2 standard errors) and only changes far outside
// the noise are called. A CI job that runs the same cell on every commit
// knows the noise better: the spread of the repetitions within each of
// its past runs. Scale carries that spread, pooled over the past runs,
// and the early looks then use it beside the runs of the comparison.

// Scale is the noise of a metric known from past runs of the same cell:
// the pooled variance of the natural log of its values within each run
// (logs, so that the scale carries over between commits that moved the
// level), with its degrees of freedom.
type Scale struct {
	// Var is the pooled within-run variance of ln(value).
	Var float64
	// DF is its degrees of freedom: the sum over the runs of their
	// repetitions minus one.
	DF float64
	// Runs is the number of past runs pooled.
	Runs int
	// From says where the runs came from (a history index), for reasons.
	From string
}

// Spread is one past run's repetitions of a metric: their number and the
// variance of their natural logs.
type Spread struct {
	N   int
	Var float64
}

// MaxScaleRuns is how many of the most recent past runs PoolScale uses:
// enough for 40 to 150 degrees of freedom at 3 to 6 repetitions a run,
// few enough that the scale follows a change of the noise.
const MaxScaleRuns = 30

// PoolScale pools the spreads of past runs, oldest first, into a Scale:
// the last MaxScaleRuns runs that have 2 or more repetitions and a finite
// variance. It returns nil when none has.
func PoolScale(runs []Spread, from string) *Scale {
	s := &Scale{From: from}
	sum := 0.0
	for i := len(runs) - 1; i >= 0 && s.Runs < MaxScaleRuns; i-- {
		r := runs[i]
		if r.N < 2 || math.IsNaN(r.Var) || math.IsInf(r.Var, 0) || r.Var < 0 {
			continue
		}
		sum += float64(r.N-1) * r.Var
		s.DF += float64(r.N - 1)
		s.Runs++
	}
	if s.Runs == 0 || s.DF == 0 {
		return nil
	}
	s.Var = sum / s.DF
	return s
}

// LogSpread is the Spread of one run's values: the variance of their
// natural logs; NaN when a value is not positive (a Lost of 0 pps has no
// log) or there are fewer than 2.
func LogSpread(v []float64) Spread {
	if len(v) < 2 {
		return Spread{N: len(v), Var: math.NaN()}
	}
	l, ok := logs(v)
	if !ok {
		return Spread{N: len(v), Var: math.NaN()}
	}
	return Spread{N: len(v), Var: stats.Variance(l)}
}

func (s *Scale) String() string {
	return fmt.Sprintf("the noise of %d past runs (%.0f degrees of freedom) in %s", s.Runs, s.DF, s.From)
}

// noisierP is the level at which the runs of a comparison are taken to be
// noisier than the history says (an F test of their pooled variance
// against the scale's): the noise changed, or a run has an outlier the
// history does not predict. The early look then falls back to the t test
// of the runs alone.
const noisierP = 0.001

// scaledTest is the early look's test with a history scale, on sorted b
// and n at level alpha: Student's t test of the difference of the mean
// logs, its variance pooled from the scale and the runs of both sides
// (df = DF + nb + nn - 2). ok is false when the scale does not apply: a
// value is not positive, or the runs are noisier than the scale (noisierP).
func scaledTest(b, n []float64, alpha float64, s *Scale) (v Verdict, p, df, d, se float64, ok bool) {
	lb, okb := logs(b)
	ln, okn := logs(n)
	if !okb || !okn || s == nil || !(s.Var > 0) {
		return Unknown, 1, 0, 0, 0, false
	}
	nb, nn := float64(len(b)), float64(len(n))
	within := (nb-1)*stats.Variance(lb) + (nn-1)*stats.Variance(ln)
	if fSF(within/(nb+nn-2)/s.Var, nb+nn-2, s.DF) < noisierP {
		return Unknown, 1, 0, 0, 0, false
	}
	df = s.DF + nb + nn - 2
	pooled := (s.DF*s.Var + within) / df
	d = stats.Mean(ln) - stats.Mean(lb)
	se = math.Sqrt(pooled * (1/nb + 1/nn))
	t := d / se
	p = mathx.BetaInc(df/(df+t*t), df/2, 0.5) // two-sided, without 1-CDF's rounding
	if p <= alpha {
		return Different, p, df, d, se, true
	}
	return Unknown, p, df, d, se, true
}

// fSF is P(F > f) for Fisher's F with d1 and d2 degrees of freedom.
func fSF(f, d1, d2 float64) float64 {
	if !(f > 0) {
		return 1
	}
	return mathx.BetaInc(d2/(d2+d1*f), d2/2, d1/2)
}

// logs returns the natural logs of v, false when a value is not positive.
func logs(v []float64) ([]float64, bool) {
	l := make([]float64, len(v))
	for i, x := range v {
		if !(x > 0) {
			return nil, false
		}
		l[i] = math.Log(x)
	}
	return l, true
}
