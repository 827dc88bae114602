package history

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/mathx"
	"github.com/aclements/go-moremath/stats"
)

// scratch holds one series' global order, from which the ranks of any
// stretch of it are found by sorting integers, and buffers reused across
// the tests of the series.
type scratch struct {
	pos []int32 // pos[i]: position of point i in the series' sorted order
	at  []int32 // at[k]: the point at sorted position k
	tie []int32 // tie[k]: first sorted position holding the value at k
	buf []int32
	r   []float64
	xs  []float64 // the series
	w   []float64
	// vif is the factor by which the noise's serial correlation inflates
	// the variance of a sum of ranks (1 for independent noise).
	vif float64
}

// init sorts xs once and estimates its noise's serial correlation, up
// to maxPhi.
func (s *scratch) init(xs []float64, maxPhi float64) {
	s.vif = varianceInflation(xs, maxPhi)
	s.xs = xs
	s.init0(xs)
}

// init0 sorts xs.
func (s *scratch) init0(xs []float64) {
	n := len(xs)
	type valueAt struct {
		v float64
		i int32
	}
	order := make([]valueAt, n)
	for i, x := range xs {
		order[i] = valueAt{x, int32(i)}
	}
	slices.SortFunc(order, func(a, b valueAt) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return int(a.i - b.i)
	})
	s.pos, s.at, s.tie = make([]int32, n), make([]int32, n), make([]int32, n)
	for k, o := range order {
		s.at[k] = o.i
		s.pos[o.i] = int32(k)
		s.tie[k] = int32(k)
		if k > 0 && order[k-1].v == o.v {
			s.tie[k] = s.tie[k-1]
		}
	}
}

// ranks returns the ranks of points a..b-1 among themselves, from 1,
// ties getting their mean rank; r[i] is point a+i's. The result is
// valid until the next call.
func (s *scratch) ranks(a, b int) []float64 {
	n := b - a
	s.buf = s.buf[:0]
	if n*16 >= len(s.pos) {
		// A long stretch: pick its points from the global order, O(len).
		for k, i := range s.at {
			if int(i) >= a && int(i) < b {
				s.buf = append(s.buf, int32(k))
			}
		}
	} else {
		s.buf = append(s.buf, s.pos[a:b]...)
		slices.Sort(s.buf)
	}
	s.r = slices.Grow(s.r[:0], n)[:n]
	for i := 0; i < n; {
		j := i + 1
		for j < n && s.tie[s.buf[j]] == s.tie[s.buf[i]] {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			s.r[int(s.at[s.buf[k]])-a] = mid
		}
		i = j
	}
	return s.r
}

// clipped returns points a..b-1 with those of a..t-1 and of t..b-1 each
// clipped to their side's median +- 3 robust standard deviations. The
// result is valid until the next call.
func (s *scratch) clipped(a, t, b int) []float64 {
	s.w = append(s.w[:0], s.xs[a:b]...)
	for _, side := range [][]float64{s.w[:t-a], s.w[t-a:]} {
		m, sd := median(side), robustSigma(side)
		for i, x := range side {
			side[i] = min(max(x, m-3*sd), m+3*sd)
		}
	}
	return s.w
}

// rankVar is the population variance of ranks r (smaller than
// (n²-1)/12 when there are ties).
func rankVar(r []float64) float64 {
	n := float64(len(r))
	mean := (n + 1) / 2
	v := 0.0
	for _, x := range r {
		v += (x - mean) * (x - mean)
	}
	return v / n
}

// studentTwoSided is P(|T| >= t) for Student's t with df degrees of
// freedom: the regularized incomplete beta function I_x(df/2, 1/2) at
// x = df/(df+t²), from go-moremath (directly, not 2*TDist.CDF(-|t|),
// whose 1-(1-p) loses the small p-values the detector compares).
func studentTwoSided(t, df float64) float64 {
	if math.IsNaN(t) {
		return 1
	}
	if math.IsInf(t, 0) {
		return 0
	}
	return mathx.BetaInc(df/(df+t*t), df/2, 0.5)
}

// median returns the median of xs (NaN when empty); xs is not modified.
func median(xs []float64) float64 {
	return stats.Sample{Xs: xs}.Quantile(0.5)
}

// absDev is the sum of the absolute deviations of xs from their median.
func absDev(xs []float64) float64 {
	m := median(xs)
	d := 0.0
	for _, x := range xs {
		d += math.Abs(x - m)
	}
	return d
}

// robustSigma is the median absolute deviation scaled to estimate a
// normal distribution's standard deviation.
func robustSigma(xs []float64) float64 {
	m := median(xs)
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = math.Abs(x - m)
	}
	return 1.4826 * median(d)
}

// varianceInflation estimates how much the serial correlation of xs's
// noise inflates the variance of a sum over a stretch of it:
// (1+φ)/(1-φ) for AR(1) noise of coefficient φ. φ comes from the lag-1
// autocorrelation ρ of the first differences, which is -1/2 for
// independent noise of any distribution, level, trend or steps, and
// -(1-φ)/2 for AR(1) noise. The differences are first clipped to 3
// robust standard deviations (from the interquartile range) of their
// median, so a step's single large
// difference does not sway ρ. The estimate is lowered by three of its
// standard errors (about 1/√n for ρ, so 2/√n for φ: 6/√n), so independent
// noise rarely pays for it. At most φ = maxPhi. When half the differences
// are equal (noiseless or coarsely quantized values) the noise is taken
// as independent.
func varianceInflation(xs []float64, maxPhi float64) float64 {
	n := len(xs) - 1
	if n < 10 {
		return 1
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = xs[i+1] - xs[i]
	}
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	if largestTie(sorted) > n/2 {
		return 1
	}
	// Median and a robust standard deviation (interquartile range / 1.349).
	m, sd := sorted[n/2], (sorted[3*n/4]-sorted[n/4])/1.349
	for i, x := range d {
		d[i] = min(max(x, m-3*sd), m+3*sd) - m
	}
	var num, den float64
	for i, x := range d {
		den += x * x
		if i > 0 {
			num += x * d[i-1]
		}
	}
	if den == 0 {
		return 1
	}
	phi := 1 + 2*num/den - 6/math.Sqrt(float64(n))
	phi = min(max(phi, 0), maxPhi)
	return (1 + phi) / (1 - phi)
}

// largestTie is the size of the largest group of equal values in s,
// sorted.
func largestTie(s []float64) int {
	best := 0
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		best = max(best, j-i)
		i = j
	}
	return best
}

// longRunInflation estimates the variance inflation of sums of the
// noise from its autocorrelations up to lag l (Bartlett weights), on the
// residuals from a running median over 2w+1 points (which follows the
// steps, so they do not count as correlation), clipped at 3 robust
// standard deviations. Noise that wanders at a few runs' scale (a machine
// that is slow for a while) has lag-1 correlation near 0 on top of its
// white part but a long-run variance above its variance. The estimate is
// lowered by three of its standard errors (√(4l/3n) relative) and held
// to the inflation maxPhi allows.
func longRunInflation(xs []float64, w, l int, maxPhi float64) float64 {
	n := len(xs)
	if n < 4*w || l <= 0 {
		return 1
	}
	res := runningMedianResiduals(xs, w)
	sd := robustSigma(res)
	if sd == 0 {
		return 1
	}
	var c0 float64
	for i, r := range res {
		res[i] = min(max(r, -3*sd), 3*sd)
		c0 += res[i] * res[i]
	}
	v := 1.0
	for k := 1; k <= l; k++ {
		ck := 0.0
		for i := k; i < n; i++ {
			ck += res[i] * res[i-k]
		}
		v += 2 * (1 - float64(k)/float64(l+1)) * ck / c0
	}
	v *= 1 - 3*math.Sqrt(4*float64(l)/3/float64(n))
	return min(max(v, 1), (1+maxPhi)/(1-maxPhi))
}

// runningMedianResiduals returns each xs[i] less the median of
// xs[i-w:i+w+1] (clipped to the series), keeping that window sorted as it
// slides.
func runningMedianResiduals(xs []float64, w int) []float64 {
	n := len(xs)
	res := make([]float64, n)
	win := slices.Clone(xs[:min(n, w+1)])
	slices.Sort(win)
	for i := range xs {
		res[i] = xs[i] - win[len(win)/2]
		if j := i + w + 1; j < n {
			k, _ := slices.BinarySearch(win, xs[j])
			win = slices.Insert(win, k, xs[j])
		}
		if j := i - w; j >= 0 {
			k, _ := slices.BinarySearch(win, xs[j])
			win = slices.Delete(win, k, k+1)
		}
	}
	return res
}
