package verdict

import (
	"fmt"
	"math"
	"slices"

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
// level), with its degrees of freedom, and the variance of a run's level
// beyond it (a boot, the host's load: two runs differ by more than their
// repetitions do).
type Scale struct {
	// Var is the pooled within-run variance of ln(value).
	Var float64
	// DF is its degrees of freedom: the sum over the runs of their
	// repetitions minus one.
	DF float64
	// Between is the variance of a run's mean log beyond Var's share
	// (0 unless the runs' means vary significantly more than their
	// repetitions say), from the differences of consecutive runs' mean
	// logs, trimmed so that the few steps where a commit moved the level
	// do not count (see between). BetweenDF is its approximate degrees
	// of freedom (the differences kept).
	Between, BetweenDF float64
	// Robust is the within-run variance of ln(value) estimated so that
	// a few runs with an outlier do not move it (robustVar): Var on
	// normal noise, less than Var under heavy tails, which inflate the
	// variance of a mean but not that of a median; 0 with fewer than
	// minRobustRuns runs. RobustDF is its degrees of freedom for the
	// medians' test (see robustVar).
	Robust, RobustDF float64
	// Runs is the number of past runs pooled.
	Runs int
	// From says where the runs came from (a history index), for reasons.
	From string
}

// Spread is one past run's repetitions of a metric: their number and the
// mean and variance of their natural logs.
type Spread struct {
	N         int
	Mean, Var float64
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
	var used []Spread // newest first
	for i := len(runs) - 1; i >= 0 && s.Runs < MaxScaleRuns; i-- {
		r := runs[i]
		if r.N < 2 || math.IsNaN(r.Var) || math.IsInf(r.Var, 0) || r.Var < 0 || math.IsNaN(r.Mean) || math.IsInf(r.Mean, 0) {
			continue
		}
		sum += float64(r.N-1) * r.Var
		s.DF += float64(r.N - 1)
		s.Runs++
		used = append(used, r)
	}
	if s.Runs == 0 || s.DF == 0 {
		return nil
	}
	s.Var = sum / s.DF
	s.Between, s.BetweenDF = between(used, s.Var, s.DF)
	if s.Runs >= minRobustRuns {
		s.Robust, s.RobustDF = robustVar(used)
	}
	return s
}

// betweenP is the level of the test that the runs' means vary more than
// their repetitions say: F of the differences' variance over the
// within-run variance's share, with the trimmed mean's degrees of freedom
// over the within-run ones.
const betweenP = 0.01

// trimmedChi2 is the mean of chi-square variables x of 1 degree of
// freedom without their largest fraction q: its expectation, the mean of
// x below its 1-q quantile c, P(chi2_3 <= c)/(1-q), and the relative
// variance of one term of it, from the influence function of the mean
// trimmed at the sample quantile: Var((x-c) 1{x<c}) / (1-q)^2 over the
// mean squared, with E[x 1{x<c}] = F3(c), E[x^2 1{x<c}] = 3 F5(c),
// F3(c) = F1(c) - 2 sqrt(c) phi(sqrt(c)) and F5(c) = F3(c) - (2/3) c
// sqrt(c) phi(sqrt(c)). q = 0 is the plain mean: 1 and 2. At q = 0.1 it
// is 0.623 and 2.56: trimming costs precision, and buys that a few steps
// of the level do not count.
func trimmedChi2(q float64) (mean, relVar float64) {
	if q <= 0 {
		return 1, 2
	}
	s := normalQuantile(1 - q/2)
	c, f1 := s*s, 1-q
	f3 := f1 - 2*s*normalPDF(s)
	f5 := f3 - 2.0/3*c*s*normalPDF(s)
	m1, m2 := f3-c*f1, 3*f5-2*c*f3+c*c*f1 // E[(x-c) 1{x<c}], E[(x-c)^2 1{x<c}]
	mean = f3 / f1
	return mean, (m2 - m1*m1) / (f1 * f1) / (mean * mean)
}

// between estimates the variance B of a run's level beyond the
// within-run variance w from consecutive runs' mean logs: a difference d
// of two runs of n1 and n2 repetitions has variance 2B + w(1/n1 + 1/n2).
// The squared differences, the largest tenth dropped (the steps where a
// commit moved the level), are averaged and divided by the mean of the
// same trimmed chi-square (trimmedChi2). B is counted only when the
// differences are significantly larger than w (on wDF degrees of
// freedom) explains (at betweenP), else it is 0: with 10 to 30 past runs
// an estimate of a B that is 0 is noisy enough to cost the early looks
// most of what the history gives them. Returns B and its approximate
// degrees of freedom (a chi-square's of the trimmed mean's relative
// variance).
func between(runs []Spread, w, wDF float64) (float64, float64) {
	if len(runs) < 3 {
		return 0, 0
	}
	d2 := make([]float64, len(runs)-1)
	within := 0.0
	for i := range d2 {
		d := runs[i].Mean - runs[i+1].Mean
		d2[i] = d * d
		within += w * (1/float64(runs[i].N) + 1/float64(runs[i+1].N))
	}
	within /= float64(len(d2))
	slices.Sort(d2)
	kept := d2[:len(d2)-len(d2)/10]
	mean, relVar := trimmedChi2(float64(len(d2)-len(kept)) / float64(len(d2)))
	est := stats.Mean(kept) / mean
	df := 2 * float64(len(kept)) / relVar // a chi-square's with that relative variance
	if within > 0 && fSF(est/within, df, wDF) > betweenP {
		return 0, df
	}
	return max((est-within)/2, 0), df
}

// LogSpread is the Spread of one run's values: the variance of their
// natural logs; NaN when a value is not positive (a Lost of 0 pps has no
// log) or there are fewer than 2.
func LogSpread(v []float64) Spread {
	if len(v) < 2 {
		return Spread{N: len(v), Mean: math.NaN(), Var: math.NaN()}
	}
	l, ok := logs(v)
	if !ok {
		return Spread{N: len(v), Mean: math.NaN(), Var: math.NaN()}
	}
	return Spread{N: len(v), Mean: stats.Mean(l), Var: stats.Variance(l)}
}

func (s *Scale) String() string {
	between := ""
	if s.Between > 0 {
		between = fmt.Sprintf(", runs apart by %.2g%% beyond it", 100*math.Sqrt(s.Between))
	}
	return fmt.Sprintf("the noise of %d past runs (%.0f degrees of freedom%s) in %s", s.Runs, s.DF, between, s.From)
}

// noisierP is the level at which the runs of a comparison are taken to be
// noisier than the history says (an F test of their pooled variance
// against the scale's): the noise changed, or a run has an outlier the
// history does not predict. The early look then falls back to the t test
// of the runs alone.
const noisierP = 0.001

// logTest is the early look's test of the logs with a history scale: the
// difference d of the two sides' locations (new - base), its standard
// error se and the t distribution's degrees of freedom df, and the
// two-sided p; median says the locations are medians (medianDiff), not
// means (meanDiff).
type logTest struct {
	d, se, df, p float64
	median       bool
}

// scaledTest is the early look's test with a history scale, on sorted b
// and n at level alpha: with median (and a robust scale) the medians'
// test of the logs (medianDiff), else Student's t test of the mean logs
// (meanDiff); either with twice the scale's between-run variance added
// (each side is a run of its own; Welch-Satterthwaite degrees of
// freedom). ok is false when the scale does not apply: a value is not
// positive, or the runs are noisier than the scale (noisierP).
func scaledTest(b, n []float64, alpha float64, s *Scale, median bool) (Verdict, logTest, bool) {
	lb, okb := logs(b)
	ln, okn := logs(n)
	if !okb || !okn || s == nil || !(s.Var > 0) || noisier(lb, ln, s) {
		return Unknown, logTest{p: 1}, false
	}
	var t logTest
	var w float64
	if median && s.Robust > 0 {
		t, w = medianDiff(lb, ln, s)
	} else {
		t, w = meanDiff(lb, ln, s)
	}
	bv := 2 * s.Between
	t.se = math.Sqrt(w + bv)
	if bv > 0 { // Welch-Satterthwaite
		t.df = (w + bv) * (w + bv) / (w*w/t.df + bv*bv/s.BetweenDF)
	}
	z := t.d / t.se
	t.p = mathx.BetaInc(t.df/(t.df+z*z), t.df/2, 0.5) // two-sided, without 1-CDF's rounding
	if t.p <= alpha {
		return Different, t, true
	}
	return Unknown, t, true
}

// noisier reports whether the logs lb and ln vary more than the scale
// says: an F test of their pooled variance against s.Var at noisierP.
func noisier(lb, ln []float64, s *Scale) bool {
	nb, nn := float64(len(lb)), float64(len(ln))
	within := (nb-1)*stats.Variance(lb) + (nn-1)*stats.Variance(ln)
	return fSF(within/(nb+nn-2)/s.Var, nb+nn-2, s.DF) < noisierP
}

// meanDiff is the difference of the mean logs with the within-run
// variance of its estimate, pooled from the scale and the runs of both
// sides (df = DF + nb + nn - 2).
func meanDiff(lb, ln []float64, s *Scale) (logTest, float64) {
	nb, nn := float64(len(lb)), float64(len(ln))
	within := (nb-1)*stats.Variance(lb) + (nn-1)*stats.Variance(ln)
	df := s.DF + nb + nn - 2
	pooled := (s.DF*s.Var + within) / df
	return logTest{d: stats.Mean(ln) - stats.Mean(lb), df: df}, pooled * (1/nb + 1/nn)
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
