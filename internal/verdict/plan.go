// Package verdict decides whether two samples of a benchmark metric are
// the SAME, DIFFERENT or whether the runs so far cannot tell (UNKNOWN), with
// a group-sequential design: the decision is taken at a fixed schedule of
// looks (repetitions per side), each with a boundary chosen so that the
// chance of a false DIFFERENT over all looks stays below 1%.
//
// The first looks (Plan.Early: 3 and 6 runs per side) are early looks for
// changes far outside the noise: a rank test cannot decide there (at 3
// against 3 its smallest two-sided p is 0.1), so they use Student's
// two-sample t test at a strict level, and from 6 runs the exact rank
// test at its smallest p (disjoint ranges, 2/924 at 6 against 6), and
// call only DIFFERENT; with the noise of past runs (Scale) they test the
// logs, the medians at 3 runs when the history is long enough
// (robust.go). From the
// first rank look (10 runs) on, DIFFERENT is the Mann-Whitney U test against
// Pocock's boundary and SAME an equivalence test (two one-sided shifted rank
// tests, TOST) against the minimum effect that matters, with the
// Hodges-Lehmann shift and its Moses confidence interval: heavy tails and
// outliers cost power there, not correctness. Distributions, t tests and
// quantiles come from github.com/aclements/go-moremath/stats.
//
// The package is pure statistics: report uses it for every change column and
// compare's gates, the runner for run --until-decided, bisect for each step.
package verdict

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/aclements/go-moremath/stats"
)

// Plan is a group-sequential design: the looks (repetitions per side at
// which a decision may be taken), the overall false-DIFFERENT level and the
// level of each one-sided equivalence test.
type Plan struct {
	// Looks are the repetitions per side at which the plan decides, in
	// increasing order: first the Early looks, then the rank looks.
	Looks []int
	// Early is the number of leading Looks that are early looks: DIFFERENT
	// when the two-sided p of the pooled two-sample t test is at most
	// EarlyAlpha[k], else UNKNOWN (SAME only when every run of both sides
	// has one same value). They spend EarlyAlpha on top of Alpha.
	Early      int
	EarlyAlpha []float64
	// DisjointAlpha is the level of the exact rank test at the early
	// looks without a history scale: beside the t test, DIFFERENT when
	// the two sides' ranges are disjoint and that test's smallest
	// two-sided p, 2/C(nb+nn, nb), is at most DisjointAlpha (see
	// disjointP). Its level holds when the runs are independent draws of
	// one continuous distribution, whatever its tails; offsets between
	// runs raise it (docs/compare.md). It is spent beside EarlyAlpha, at
	// the looks where disjoint ranges can reach it (NominalAlpha). 0:
	// never.
	DisjointAlpha float64
	// ScaledAlpha are the early looks' levels when a history Scale
	// applies (the t test of the logs with the history's variance): with
	// the noise known, 3 runs call a change far outside it at a smaller
	// level, which leaves more for 6 runs. Whether the scale applies is
	// decided at each look (scaledTest), so a comparison may use it at
	// one look and not at the other: NominalAlpha counts each look's
	// larger level.
	ScaledAlpha []float64
	// ScaledMedian is the number of leading early looks whose test with
	// a history scale compares the median logs on the scale's robust
	// variance (medianDiff) instead of the mean logs: a median of 3 runs
	// is not carried by one outlier.
	ScaledMedian int
	// Alpha bounds the chance of DIFFERENT over the rank looks (those
	// after the early ones) when the two sides have the same distribution
	// (two-sided).
	Alpha float64
	// SameAlpha is the level of each one-sided test of the equivalence
	// (TOST) that gives SAME: a confidence interval of level 1-2*SameAlpha
	// inside ±minimum effect.
	SameAlpha float64
	// Shape is the Wang-Tsiatis shape of the boundary: 0.5 is Pocock's
	// (the same nominal level at every look), 0 O'Brien-Fleming's (strict
	// early, lenient late).
	Shape float64
	// SameEstimate, when positive, also requires for SAME that the shift's
	// estimate lies within ±SameEstimate times the minimum effect (on the
	// rank scale: |z at 0| at most SameEstimate times half the distance
	// between the rank statistics shifted by -min and +min). Late looks,
	// whose intervals are narrow, then cannot call SAME a shift near the
	// minimum effect that the interval only just fits.
	SameEstimate float64

	once   sync.Once
	bounds []float64
}

// Default is the plan of compare, run --until-decided and bisect: early
// looks at 3 and 6 runs per side (t test at p <= 0.0035 and 0.0008, and
// from 6 runs disjoint ranges, the exact rank test at p = 2/924; or,
// with a history scale, the test of the logs at p <= 0.0015 and 0.0030,
// of their medians at 3 runs when the history has 20 runs or more), then
// thirteen rank looks from 10 to 160 (each about 25% more than the last) at
// Pocock's constant boundary for 0.35% over them; SAME, from 10 runs, when
// the 94% interval of the shift lies within the minimum effect and its
// estimate within 0.35 of it. The levels add up to 1%: 0.35% at 3 runs,
// 0.08% + 0.22% (or 0.30% with a history) at 6, 0.35% over the rank
// looks (NominalAlpha). Over all looks the false DIFFERENT measures at
// most 0.94% (20,000 comparisons; 0.86% averaged over 5 seeds) on normal,
// Student t3 and real TCG noise, with or without a history scale. See
// docs/compare.md for its measured error rates and costs.
var Default = &Plan{
	Looks:         []int{3, 6, 10, 13, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 160},
	Early:         2,
	EarlyAlpha:    []float64{0.0035, 0.0008},
	DisjointAlpha: 0.0022,
	ScaledAlpha:   []float64{0.0015, 0.0030},
	ScaledMedian:  1,
	Alpha:         0.0035,
	SameAlpha:     0.03,
	Shape:         0.5,
	SameEstimate:  0.35,
}

// FirstN is the first look: fewer runs per side are always UNKNOWN.
func (p *Plan) FirstN() int { return p.Looks[0] }

// MaxN is the last look: the most repetitions per side the plan asks for.
func (p *Plan) MaxN() int { return p.Looks[len(p.Looks)-1] }

// Look returns the index of the last look that n repetitions per side
// reach, or -1 below the first look.
func (p *Plan) Look(n int) int {
	k := -1
	for i, l := range p.Looks {
		if n >= l {
			k = i
		}
	}
	return k
}

// Next returns the repetitions per side of the first look after n (MaxN
// when n is past the last).
func (p *Plan) Next(n int) int {
	for _, l := range p.Looks {
		if l > n {
			return l
		}
	}
	return p.MaxN()
}

// RankN is the first rank look: from it on SAME can be called and
// DIFFERENT takes the rank test.
func (p *Plan) RankN() int { return p.Looks[p.Early] }

// Bound returns the critical |z| of the rank test at look k (a rank look:
// k >= Early).
func (p *Plan) Bound(k int) float64 {
	p.once.Do(func() { p.bounds = p.computeBounds() })
	return p.bounds[k-p.Early]
}

// computeBounds finds, for the rank looks, the constant C of the boundary
// c_k = C * (t_k)^(Shape-0.5), t_k = Looks[k]/MaxN, for which a two-sided
// standardized Brownian motion observed at the looks crosses it with
// probability Alpha, by bisection on C.
func (p *Plan) computeBounds() []float64 {
	looks := p.Looks[p.Early:]
	t := make([]float64, len(looks))
	for i, l := range looks {
		t[i] = float64(l) / float64(p.MaxN())
	}
	shape := func(c float64) []float64 {
		b := make([]float64, len(t))
		for i := range t {
			b[i] = c * math.Pow(t[i], p.Shape-0.5)
		}
		return b
	}
	lo, hi := 1.0, 6.0
	for range 40 {
		mid := (lo + hi) / 2
		if CrossProb(t, shape(mid)) > p.Alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return shape(hi)
}

// CrossProb is the probability that Z_k = W(t_k)/sqrt(t_k), W a standard
// Brownian motion, has |Z_k| >= b[k] at some look k: the recursive
// numerical integration of Armitage, McPherson and Rowe on a grid.
func CrossProb(t, b []float64) float64 {
	const grid = 240
	// Density of W(t_k) on the continuation region, on a grid of points.
	var xs, dens []float64
	crossed := 0.0
	prevT := 0.0
	for k := range t {
		dt := t[k] - prevT
		sd := math.Sqrt(dt)
		edge := b[k] * math.Sqrt(t[k])
		h := 2 * edge / grid
		nx := make([]float64, grid+1)
		nd := make([]float64, grid+1)
		if k == 0 {
			crossed += 2 * normalSF(b[k])
			for i := range nx {
				nx[i] = -edge + float64(i)*h
				nd[i] = normalPDF(nx[i]/sd) / sd
			}
		} else {
			hPrev := xs[1] - xs[0]
			for i := range nx {
				nx[i] = -edge + float64(i)*h
			}
			for j, x := range xs {
				w := dens[j] * hPrev * trapezoid(j, len(xs))
				if w == 0 {
					continue
				}
				crossed += w * (normalSF((edge-x)/sd) + normalCDF((-edge-x)/sd))
				for i, y := range nx {
					nd[i] += w * normalPDF((y-x)/sd) / sd
				}
			}
		}
		xs, dens, prevT = nx, nd, t[k]
	}
	return crossed
}

// trapezoid is the trapezoid rule's weight of point j of n.
func trapezoid(j, n int) float64 {
	if j == 0 || j == n-1 {
		return 0.5
	}
	return 1
}

func normalPDF(x float64) float64 { return stats.StdNormal.PDF(x) }
func normalCDF(x float64) float64 { return stats.StdNormal.CDF(x) }
func normalSF(x float64) float64  { return stats.StdNormal.CDF(-x) }

// normalQuantile is the inverse of normalCDF.
func normalQuantile(p float64) float64 { return stats.StdNormal.InvCDF(p) }

// NominalAlpha is the sum of the levels the plan spends on a false
// DIFFERENT over all its looks: at each early look the larger of the
// runs' own tests (EarlyAlpha, plus DisjointAlpha where disjoint ranges
// of that many runs reach it) and the test with a history scale
// (ScaledAlpha), then Alpha over the rank looks. By the union bound it
// bounds the plan's false DIFFERENT whichever tests a comparison's looks
// use, when each test holds its level.
func (p *Plan) NominalAlpha() float64 {
	sum := p.Alpha
	for k := range p.Early {
		runs := p.EarlyAlpha[k]
		if n := p.Looks[k]; p.DisjointAlpha > 0 && disjointP(make([]float64, n), ones(n)) <= p.DisjointAlpha {
			runs += p.DisjointAlpha
		}
		sum += max(runs, p.scaledAlpha(k))
	}
	return sum
}

// ones is n values of 1.
func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// String describes the plan in one line, for notes and docs.
func (p *Plan) String() string {
	var early, looks []string
	for i, l := range p.Looks {
		if i < p.Early {
			early = append(early, fmt.Sprintf("%d (p <= %g)", l, p.EarlyAlpha[i]))
		} else {
			looks = append(looks, fmt.Sprint(l))
		}
	}
	s := fmt.Sprintf("rank looks at %s runs per side, %.2g%% false DIFFERENT over them at most, SAME when the %.0f%% interval lies within the minimum effect",
		strings.Join(looks, ", "), 100*p.Alpha, 100*(1-2*p.SameAlpha))
	if len(early) > 0 {
		disjoint := ""
		if p.DisjointAlpha > 0 {
			disjoint = fmt.Sprintf(" or disjoint ranges (exact rank test at p <= %g)", p.DisjointAlpha)
		}
		s = "early t-test looks at " + strings.Join(early, ", ") + disjoint + "; " + s
	}
	return s
}
