package history

import (
	"math"
	"slices"
)

// Params is a change-point detector's parameter set. Default is the one
// the command uses; doc.go says why each value is what it is.
type Params struct {
	// Alpha is the p-value at or below which both tests must put a
	// candidate for it to be a change point.
	Alpha float64
	// MinSegment is the fewest points a segment holds: no change point
	// lies closer than this to another or to either end.
	MinSegment int
	// TrendWindow is how many points on each side of a candidate the
	// trend test looks at (fewer where a neighbouring change point or an
	// end is nearer).
	TrendWindow int
	// MaxPhi is the largest lag-1 correlation of the noise the tests
	// allow for (see varianceInflation); 0 takes the noise as
	// independent.
	MaxPhi float64
	// MinEffect is the smallest change reported, in units of the noise
	// around it; 0 reports any significant change.
	MinEffect float64
	// ShortEffect is the smallest change, in units of the noise, between
	// change points so close that the rank test cannot reach Alpha (a
	// regression fixed a few runs later); the trend test decides those.
	// 0 leaves them unreported.
	ShortEffect float64
	// Seeded, when at least 2*MinSegment, also searches seeded intervals
	// (see seededSteps) of down to Seeded points for change points that
	// binary segmentation from the whole series misses; 0 does not.
	Seeded int
	// LongRun, when positive, also estimates the noise's variance
	// inflation from its autocorrelations up to this lag (see
	// longRunInflation) and takes the larger of that and the lag-1
	// estimate, up to MaxPhi's; 0 uses the lag-1 estimate alone.
	LongRun int
}

// Default is the parameter set the command uses unless told otherwise:
// p <= 0.001 in both tests, segments of at least 5 points, a trend test
// over up to 50 points each side, noise correlation allowed for up to
// 0.5, changes of at least the noise's standard deviation, and of 3
// times it between change points a few points apart, seeded intervals
// down to 100 points (twice the trend window), and the noise's
// correlation over up to 10 lags. doc.go says why.
var Default = Params{Alpha: 0.001, MinSegment: 5, TrendWindow: 50, MaxPhi: 0.5, MinEffect: 1, ShortEffect: 3, Seeded: 100, LongRun: 10}

// Level is a p threshold vnetbench history's --sensitivity names.
type Level struct {
	Name  string
	Alpha float64
}

// Levels are the named sensitivities, least alerts first: a fifth of
// Default's p, Default's, and five times it (the default until
// 2026-12-03, which TCPD's series prefer). doc.go says why.
var Levels = []Level{{"low", 0.0002}, {"default", Default.Alpha}, {"high", 0.005}}

// Change is one change point found by Detect.
type Change struct {
	// Index is the 0-based position of the first point after the change.
	Index int
	// P is the larger of the two tests' p-values (see doc.go).
	P float64
}

// MinPoints is the fewest points in which Detect can find a change
// point: a segment of MinSegment on each side.
func (p Params) MinPoints() int { return 2 * max(p.MinSegment, 2) }

// Detect returns the change points of xs in increasing order of Index.
// xs must not hold NaN (drop missing values first). It does not modify xs.
func (p Params) Detect(xs []float64) []Change {
	m := max(p.MinSegment, 2)
	if len(xs) < p.MinPoints() {
		return nil
	}
	var s scratch
	s.init(xs, p.MaxPhi)
	if p.LongRun > 0 {
		s.vif = max(s.vif, longRunInflation(xs, p.TrendWindow/2, p.LongRun, p.MaxPhi))
	}
	var cps []int
	p.split(xs, 0, len(xs), 0, len(xs), m, &cps, &s)
	cps = append(cps, p.shortSteps(xs, m)...)
	cps = append(cps, p.seededSteps(xs, m, &s)...)
	slices.Sort(cps)
	cps = slices.Compact(cps)
	return p.prune(xs, cps, m, &s)
}

// split is binary segmentation by the rank test: it finds the best split
// of xs[a:b] and, when its p-value is at most Alpha, splits both sides
// again. The split is recorded when the trend test, over a window bounded
// by the nearest recorded change points lo and hi, passes too; a split
// that only a trend explains is not recorded but its sides are still
// searched, so a step beside a trend is found.
func (p Params) split(xs []float64, a, b, lo, hi, m int, out *[]int, s *scratch) {
	if b-a < 2*m {
		return
	}
	tau, pv := bestSplit(s, a, b, m)
	if tau < 0 || p.rankLevel(s, pv, tau, b-a-tau, m) > p.Alpha {
		return
	}
	tau = p.locate(s, a, a+tau, b, m)
	if p.isStep(xs, a, tau, b, lo, hi, s) {
		*out = append(*out, tau)
		p.split(xs, a, tau, lo, tau, m, out, s)
		p.split(xs, tau, b, tau, hi, m, out, s)
		return
	}
	p.split(xs, a, tau, lo, hi, m, out, s)
	p.split(xs, tau, b, lo, hi, m, out, s)
}

// shortSteps finds the steps binary segmentation misses: those of short
// segments (a regression fixed a few runs later) in a series whose
// first split is elsewhere or nowhere. A point t is a candidate when the
// m points before it and the m points from it do not overlap and the gap
// between them is at least ShortEffect times the noise (the robust
// standard deviation of the first differences over √2, which steps do
// not sway): 0-day's rule of disjoint ranges, with a margin. Noise alone
// almost never does that (5 against 5 Gaussian points separate with a
// gap of 3 standard deviations about once in 10^6 tries), and prune then
// holds each candidate to both tests against its final neighbours.
func (p Params) shortSteps(xs []float64, m int) []int {
	if p.ShortEffect <= 0 || len(xs) < 2*m {
		return nil
	}
	d := make([]float64, len(xs)-1)
	for i := range d {
		d[i] = xs[i+1] - xs[i]
	}
	gap := p.ShortEffect * robustSigma(d) / math.Sqrt2
	if gap <= 0 {
		return nil
	}
	var out []int
	for t := m; t+m <= len(xs); t++ {
		lo1, hi1 := minMax(xs[t-m : t])
		lo2, hi2 := minMax(xs[t : t+m])
		if lo2-hi1 >= gap || lo1-hi2 >= gap {
			out = append(out, t)
		}
	}
	return out
}

// seededSteps is seeded binary segmentation's search (Kovács, Li,
// Bühlmann and Munk, 2023): over intervals of length n/2, n/4, ... down
// to Seeded points, each starting half its length after the one before,
// the best split of each interval by the rank test, kept when its
// p-value, Bonferroni-corrected for the number of intervals searched, is
// at most Alpha and the trend test over the interval passes. Binary
// segmentation from the whole series misses a short segment (a
// regression fixed fifty runs later) in a long history: the first split
// falls elsewhere and the segment's own split is then weak against the
// rest. An interval of the segment's own scale sees it plainly. prune
// then holds each candidate to both tests against its final neighbours,
// as it does binary segmentation's.
func (p Params) seededSteps(xs []float64, m int, s *scratch) []int {
	n := len(xs)
	if p.Seeded < 2*m {
		return nil
	}
	type interval struct{ a, b int }
	var ivs []interval
	for l := n / 2; l >= p.Seeded; l /= 2 {
		for a := 0; ; a += l / 2 {
			if a+l >= n {
				ivs = append(ivs, interval{n - l, n})
				break
			}
			ivs = append(ivs, interval{a, a + l})
		}
	}
	var out []int
	for _, iv := range ivs {
		tau, pv := bestSplit(s, iv.a, iv.b, m)
		if tau < 0 || pv*float64(len(ivs)) > p.Alpha {
			continue
		}
		tau = p.locate(s, iv.a, iv.a+tau, iv.b, m)
		if p.trendP(xs, iv.a, tau, iv.b, s) <= p.Alpha && p.bigEnough(xs, iv.a, tau, iv.b) {
			out = append(out, tau)
		}
	}
	return out
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// isStep is the trend test of split's candidate tau in xs[a:b]: over
// the window bounded by the recorded neighbours lo and hi, or, when that
// fails, over the one bounded by the searched segment, at half the level
// (two tries). A change a few points from an unrecorded one (a
// regression fixed eight runs later) does not fit a line and one step
// over the wider window; within its segment it does. prune checks every
// change point recorded against its final neighbours.
func (p Params) isStep(xs []float64, a, tau, b, lo, hi int, s *scratch) bool {
	if p.trendP(xs, lo, tau, hi, s) <= p.Alpha && p.bigEnough(xs, lo, tau, hi) {
		return true
	}
	return (a > lo || b < hi) && p.trendP(xs, a, tau, b, s) <= p.Alpha/2 && p.bigEnough(xs, a, tau, b)
}

// prune drops candidates until every remaining one passes both tests
// against its final neighbours, weakest first, then moves each to the
// best split between its neighbours when that split also passes.
func (p Params) prune(xs []float64, cps []int, m int, s *scratch) []Change {
	ps := make([]float64, len(cps))
	bound := func(i int) (lo, hi int) {
		lo, hi = 0, len(xs)
		if i > 0 {
			lo = cps[i-1]
		}
		if i+1 < len(cps) {
			hi = cps[i+1]
		}
		return lo, hi
	}
	score := func(i int) {
		lo, hi := bound(i)
		ps[i] = p.pvalue(xs, lo, cps[i], hi, m, s)
	}
	for i := range cps {
		score(i)
	}
	for len(cps) > 0 {
		worst := 0
		for i := range ps {
			if ps[i] > ps[worst] {
				worst = i
			}
		}
		if ps[worst] <= p.Alpha {
			break
		}
		cps = slices.Delete(cps, worst, worst+1)
		ps = slices.Delete(ps, worst, worst+1)
		if worst > 0 {
			score(worst - 1)
		}
		if worst < len(cps) {
			score(worst)
		}
	}
	out := make([]Change, len(cps))
	for i := range cps {
		lo, hi := bound(i)
		if tau, _ := bestSplit(s, lo, hi, m); tau >= 0 {
			if tau = p.locate(s, lo, lo+tau, hi, m); tau != cps[i] {
				if pv := p.pvalue(xs, lo, tau, hi, m, s); pv <= p.Alpha {
					cps[i], ps[i] = tau, pv
				}
			}
		}
		out[i] = Change{Index: cps[i], P: ps[i]}
	}
	return out
}

// locate moves a split tau of points a..b-1, found by ranks, to where
// two medians fit the values best (least absolute deviations) within
// m points of it, over up to TrendWindow points each side. Ranks tell
// whether there is a change but not its size: at a large step they may
// prefer a split a few points off, towards the middle of the segment.
func (p Params) locate(s *scratch, a, tau, b, m int) int {
	wa, wb := max(a, tau-p.TrendWindow), min(b, tau+p.TrendWindow)
	best, bestCost := tau, math.Inf(1)
	for t := max(a+m, tau-m); t <= min(b-m, tau+m); t++ {
		if t-wa < 1 || wb-t < 1 {
			continue
		}
		c := absDev(s.xs[wa:t]) + absDev(s.xs[t:wb])
		if c < bestCost || (c == bestCost && abs(t-tau) < abs(best-tau)) {
			best, bestCost = t, c
		}
	}
	return best
}

// pvalue is the p-value of a change at tau between neighbours lo and hi:
// the larger of the rank test's (over xs[lo:hi]) and the trend test's.
func (p Params) pvalue(xs []float64, lo, tau, hi, m int, s *scratch) float64 {
	if tau-lo < m || hi-tau < m {
		return 1
	}
	if !p.bigEnough(xs, lo, tau, hi) {
		return 1
	}
	pv := splitP(s, lo, hi, tau-lo, m)
	rp := p.rankLevel(s, pv, tau-lo, hi-tau, m)
	if rp != pv {
		// Too short for the rank test: the change must be large.
		q := p
		q.MinEffect = p.ShortEffect
		if !q.bigEnough(xs, lo, tau, hi) {
			return 1
		}
	}
	return max(rp, p.trendP(xs, lo, tau, hi, s))
}

// rankLevel rescales the rank test's p-value pv of a split into n1 and
// n2 points where the test cannot reach alpha: between change points a
// few runs apart (a regression fixed eight runs later) even a perfect
// separation of the two sides has a p-value above alpha once the search
// over splits is paid for (8 against 8: 0.016). There a perfect
// separation counts as p = alpha/2, and a lesser one proportionally
// more, so that the trend test decides such short segments, for changes
// of at least ShortEffect times the noise (pvalue). Elsewhere, or with
// ShortEffect 0, pv is returned as it is.
func (p Params) rankLevel(s *scratch, pv float64, n1, n2, m int) float64 {
	if p.ShortEffect <= 0 {
		return pv
	}
	alpha := p.Alpha
	n := float64(n1 + n2)
	z := math.Sqrt(float64(n1) * float64(n2) * 3 / (n + 1))
	floor := supTail(z/math.Sqrt(s.vif), n1+n2, m)
	if floor <= alpha/2 {
		return pv
	}
	return pv / floor * alpha / 2
}

// bigEnough tells whether a change at tau, over up to TrendWindow points
// each side bounded by lo and hi, moves the median by at least MinEffect
// times the noise (the robust standard deviation of the values around
// their side's median).
func (p Params) bigEnough(xs []float64, lo, tau, hi int) bool {
	if p.MinEffect <= 0 {
		return true
	}
	w := max(p.TrendWindow, p.MinSegment)
	a, b := xs[max(lo, tau-w):tau], xs[tau:min(hi, tau+w)]
	ma, mb := median(a), median(b)
	res := make([]float64, 0, len(a)+len(b))
	for _, x := range a {
		res = append(res, x-ma)
	}
	for _, x := range b {
		res = append(res, x-mb)
	}
	sd := robustSigma(res)
	return math.Abs(mb-ma) >= p.MinEffect*sd && mb != ma
}

// trendP is the trend test's p-value for a change at tau over a window
// of up to TrendWindow points each side, bounded by lo and hi.
func (p Params) trendP(xs []float64, lo, tau, hi int, s *scratch) float64 {
	w := max(p.TrendWindow, p.MinSegment)
	a, b := max(lo, tau-w), min(hi, tau+w)
	return stepBeyondTrend(s, a, b, tau-a)
}

// bestSplit returns the split t of xs[a:b] (m <= t <= b-a-m) where the
// standardized rank sum of xs[:t] is farthest from its mean, and the
// p-value of that maximum over all allowed splits; t is -1 when all
// values are equal.
func bestSplit(s *scratch, a, b, m int) (int, float64) {
	n := b - a
	r := s.ranks(a, b)
	v := rankVar(r)
	if v == 0 {
		return -1, 1
	}
	mean := float64(n+1) / 2
	best, bestZ, sum := -1, 0.0, 0.0
	for t := 1; t < n-m+1; t++ {
		sum += r[t-1] - mean
		if t < m {
			continue
		}
		z := math.Abs(sum) / math.Sqrt(float64(t)*float64(n-t)/float64(n-1)*v)
		if z > bestZ {
			best, bestZ = t, z
		}
	}
	if best < 0 {
		return -1, 1
	}
	return best, supTail(bestZ/math.Sqrt(s.vif), n, m)
}

// splitP is the p-value of bestSplit's statistic evaluated at split t of
// xs[a:b], as if t had been the best split of xs.
func splitP(s *scratch, a, b, t, m int) float64 {
	n := b - a
	r := s.ranks(a, b)
	v := rankVar(r)
	if v == 0 {
		return 1
	}
	mean := float64(n+1) / 2
	sum := 0.0
	for _, x := range r[:t] {
		sum += x - mean
	}
	z := math.Abs(sum) / math.Sqrt(float64(t)*float64(n-t)/float64(n-1)*v)
	return supTail(z/math.Sqrt(s.vif), n, m)
}

// supTail is the probability that the largest absolute standardized
// two-sample statistic over the splits m..n-m of a stationary series
// exceeds x: the sup of a standardized Brownian bridge over
// [m/n, 1-m/n], after James, James and Siegmund (1987),
//
//	x φ(x) ((1 - 1/x²) log(u1(1-u0) / (u0(1-u1))) + 4/x²),
//
// never below the two-sided p-value of a single split and at most 1. The
// discrete rank process crosses less often than the continuous bridge,
// so the tail is conservative.
func supTail(x float64, n, m int) float64 {
	single := math.Erfc(x / math.Sqrt2)
	if x <= 1 {
		return 1
	}
	u0 := float64(m) / float64(n)
	u1 := 1 - u0
	if u0 >= u1 {
		return min(1, single)
	}
	phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
	p := x * phi * ((1-1/(x*x))*math.Log(u1*(1-u0)/(u0*(1-u1))) + 4/(x*x))
	return min(1, max(p, single))
}

// stepBeyondTrend tests for a step at t in xs[a:b], a window around a
// candidate, beyond a straight line: it fits the window's values, each
// side clipped to its median +- 3 robust standard deviations (so an
// outlier weighs no more than a point at that distance), by least squares
// to a line plus a step at t and returns the two-sided p-value of the
// step's t statistic. A trend or a slow wave is absorbed by the line; a
// step is not.
func stepBeyondTrend(s *scratch, a, b, t int) float64 {
	n := b - a
	if n < 5 || t <= 0 || t >= n {
		return 1
	}
	r := s.clipped(a, a+t, b)
	fn := float64(n)
	tm, dm := (fn-1)/2, float64(n-t)/fn
	ym := 0.0
	for _, y := range r {
		ym += y
	}
	ym /= fn
	var stt, std, sdd, sty, sdy, syy float64
	for i, y := range r {
		ti, di, yi := float64(i)-tm, -dm, y-ym
		if i >= t {
			di = 1 - dm
		}
		stt += ti * ti
		std += ti * di
		sdd += di * di
		sty += ti * yi
		sdy += di * yi
		syy += yi * yi
	}
	det := stt*sdd - std*std
	if det <= 0 || syy == 0 {
		return 1
	}
	slope := (sdd*sty - std*sdy) / det
	c := (stt*sdy - std*sty) / det
	rss := syy - slope*sty - c*sdy
	if rss <= 1e-12*syy {
		return 0
	}
	se := math.Sqrt(rss / (fn - 3) * stt / det * s.vif)
	return studentTwoSided(math.Abs(c)/se, fn-3)
}
