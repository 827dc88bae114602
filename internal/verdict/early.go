package verdict

import (
	"fmt"
	"math"

	"github.com/aclements/go-moremath/stats"
)

// Early looks. With 3 to 9 runs per side a rank test cannot reach a small
// p (3 against 3: 0.1 at best), so the first looks use Student's pooled
// two-sample t test on the values at a strict level and call DIFFERENT
// only: a change far outside the noise. Why the t test: it is the most
// powerful test of a shift that does not depend on the noise's scale when
// the noise is normal, so no other test reaches more changes at the same
// level there; its level holds for heavier tails (on Student t3 noise its
// false alarms are half the nominal rate); and unlike a t test on logs it
// takes a drop to 0 (a Lost of 0 pps, a -100% change). 0-day's rule
// (disjoint ranges with a gap over half the change) calls 2.1-2.4% of A/A
// comparisons DIFFERENT at 3 and 6 runs (docs/compare.md). The levels,
// 0.35% at 3 runs and 0.08% at 6 (beside disjoint ranges' 0.22%), add
// up with the rank looks' 0.35% to 1% (Plan.NominalAlpha); the false
// DIFFERENT measures under it on normal, Student t3 and the real TCG
// noise, whose ties make the t test less strict than its nominal level.
//
// Disjoint ranges. On heavy-tailed noise one outlier among 6 runs inflates
// the t test's variance, so a change far outside the noise stays UNKNOWN
// although no run of one side reaches the other's. The exact rank
// (permutation) test sees that without a variance: under no change each of
// the C(nb+nn, nb) ways to split the runs is equally likely on any
// continuous noise, and two of them are disjoint, so disjoint ranges have
// p = 2/C(nb+nn, nb): 2/924 = 0.00216 at 6 against 6 (0.1 at 3 against 3:
// never at that look). The early look without a history scale calls
// DIFFERENT when either test does. On Student t3 noise it lifts the 2-IQR
// shifts called by 6 runs from 35% to 47% (normal 54% to 65%, real TCG
// 70% to 82%) for 0.12-0.22 points of false DIFFERENT (docs/compare.md);
// with a history scale it is not used: the budget has no room for it
// beside the history's test.

// earlyTest is the early look's decision on sorted b and n at level
// alpha: the verdict, the t test's two-sided p and its degrees of freedom
// (0 when a side is constant: no t distribution).
func earlyTest(b, n []float64, alpha float64) (Verdict, float64, float64) {
	if constantEqual(b, n) {
		return Same, 1, 0
	}
	res, err := stats.TwoSampleTTest(sample(n), sample(b), stats.LocationDiffers)
	if err != nil { // both sides constant, at different values
		return Different, 0, 0
	}
	if res.P <= alpha {
		return Different, res.P, res.DoF
	}
	return Unknown, res.P, res.DoF
}

// decideEarly fills r at early look r.Look: the t test's verdict and p,
// the difference of the means and its interval at the look's level; with
// a scale that applies (scaledTest), decideScaled's.
func (r *Result) decideEarly(b, n []float64, plan *Plan, s *Scale) {
	alpha := plan.EarlyAlpha[r.Look]
	look := plan.Looks[r.Look]
	if r.decideScaled(b, n, plan, s) {
		return
	}
	v, p, df := earlyTest(b, n, alpha)
	if v == Unknown && r.decideDisjoint(b, n, plan, p) {
		return
	}
	r.Verdict, r.P, r.Level = v, p, 1-alpha
	mb, mn := stats.Mean(b), stats.Mean(n)
	r.Shift = mn - mb
	nb, nn := float64(len(b)), float64(len(n))
	pooled := ((nb-1)*stats.Variance(b) + (nn-1)*stats.Variance(n)) / (nb + nn - 2)
	if se := math.Sqrt(pooled * (1/nb + 1/nn)); df > 0 && se > 0 {
		crit := stats.InvCDF(stats.TDist{V: df})(1 - alpha/2)
		r.Lo, r.Hi = r.Shift-crit*se, r.Shift+crit*se
	} else {
		r.Lo, r.Hi = r.Shift, r.Shift
	}
	switch v {
	case Different:
		r.Reason = fmt.Sprintf("early look at %d runs: t test p=%.3g <= %g", look, p, alpha)
	case Same:
		r.Reason = "every run of both sides has the same value"
	default:
		r.NextN = plan.Looks[r.Look+1]
		r.Reason = fmt.Sprintf("early look at %d runs calls only a change far outside the noise (t test p=%.3g > %g); SAME needs %d runs per side; %s",
			look, p, alpha, plan.RankN(), noScaleWhy(b, n, s))
	}
}

// disjointP is the exact rank test's two-sided p for sorted b and n whose
// ranges are disjoint, 2/C(nb+nn, nb); 1 when they overlap or touch.
func disjointP(b, n []float64) float64 {
	if !(n[0] > b[len(b)-1] || b[0] > n[len(n)-1]) {
		return 1
	}
	// 2/C(N, k) = 2 * k! (N-k)! / N!, as a product of ratios.
	p, k, total := 2.0, len(b), len(b)+len(n)
	for i := 1; i <= k; i++ {
		p *= float64(i) / float64(total-k+i)
	}
	return p
}

// decideDisjoint fills r, at an early look whose t test (p tp) left it
// UNKNOWN, when the ranges are disjoint at the plan's DisjointAlpha: the
// exact rank test's verdict, p and level, the Hodges-Lehmann shift and the
// interval of all pairwise differences (the Moses interval at that
// level). It returns false, leaving r alone, otherwise.
func (r *Result) decideDisjoint(b, n []float64, plan *Plan, tp float64) bool {
	p := disjointP(b, n)
	if plan.DisjointAlpha <= 0 || p > plan.DisjointAlpha {
		return false
	}
	r.Verdict, r.P, r.Level = Different, p, 1-plan.DisjointAlpha
	r.Shift = hodgesLehmann(b, n)
	r.Lo, r.Hi = n[0]-b[len(b)-1], n[len(n)-1]-b[0]
	r.Reason = fmt.Sprintf("early look at %d runs: the ranges are disjoint, exact rank test p=%.3g <= %g (t test p=%.3g > %g)",
		plan.Looks[r.Look], p, plan.DisjointAlpha, tp, plan.EarlyAlpha[r.Look])
	return true
}

// decideScaled fills r at early look r.Look with the history scale s:
// the test of the logs (the medians' or the means', scaledTest), the
// change and its interval from the logs. It returns false, leaving r
// alone, when the scale does not apply.
func (r *Result) decideScaled(b, n []float64, plan *Plan, s *Scale) bool {
	alpha, look := plan.scaledAlpha(r.Look), plan.Looks[r.Look]
	v, t, ok := scaledTest(b, n, alpha, s, r.Look < plan.ScaledMedian)
	if !ok || constantEqual(b, n) {
		return false
	}
	r.Verdict, r.P, r.Level, r.Scale = v, t.p, 1-alpha, s.String()
	crit := stats.InvCDF(stats.TDist{V: t.df})(1 - alpha/2)
	lb := mustLogs(b)
	g, test := math.Exp(stats.Mean(lb)), "t test"
	if t.median {
		g, test = math.Exp(median(lb)), "medians' test"
	}
	r.Shift, r.Lo, r.Hi = g*math.Expm1(t.d), g*math.Expm1(t.d-crit*t.se), g*math.Expm1(t.d+crit*t.se)
	if v == Different {
		r.Reason = fmt.Sprintf("early look at %d runs with %s: %s of the logs p=%.3g <= %g", look, s, test, t.p, alpha)
		return true
	}
	r.NextN = plan.Looks[r.Look+1]
	r.Reason = fmt.Sprintf("early look at %d runs with %s calls only a change outside the noise (%s of the logs p=%.3g > %g); SAME needs %d runs per side",
		look, s, test, t.p, alpha, plan.RankN())
	return true
}

// scaledAlpha is early look k's level with a history scale.
func (p *Plan) scaledAlpha(k int) float64 {
	if k < len(p.ScaledAlpha) {
		return p.ScaledAlpha[k]
	}
	return p.EarlyAlpha[k]
}

// noScaleWhy says why the early look used no history scale.
func noScaleWhy(b, n []float64, s *Scale) string {
	_, okb := logs(b)
	_, okn := logs(n)
	switch {
	case s == nil:
		return "with the noise of past runs (--noise-from) it calls smaller ones"
	case !okb || !okn:
		return fmt.Sprintf("%s not used: a value is not positive (no log)", s)
	}
	return fmt.Sprintf("%s not used: these runs are noisier than it (F test p < %g)", s, noisierP)
}

// mustLogs is logs(v) for v known positive.
func mustLogs(v []float64) []float64 {
	l, _ := logs(v)
	return l
}
