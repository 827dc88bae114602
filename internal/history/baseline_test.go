package history

import (
	"math"
	"slices"
)

// Baselines the detector is compared with on the same series: penalized
// least squares for changes in the mean (the Normal mean-change cost of
// R's changepoint package, on values scaled by the noise), searched by
// binary segmentation (at most 5 change points, as cpt.mean's default Q)
// and by PELT (exact, Killick et al. 2012), both with the MBIC penalty
// 3 log n and segments of at least MinSegment points; and the detector
// that reports nothing.

// noiseScale is a robust estimate of the noise's standard deviation from
// the first differences (MAD / 0.6745 / √2), so steps do not inflate it.
func noiseScale(xs []float64) float64 {
	if len(xs) < 3 {
		return 1
	}
	d := make([]float64, len(xs)-1)
	for i := range d {
		d[i] = xs[i+1] - xs[i]
	}
	s := robustSigma(d) / math.Sqrt2
	if s == 0 || math.IsNaN(s) {
		m := 0.0
		for _, x := range d {
			m += x * x
		}
		s = math.Sqrt(m / float64(len(d)) / 2)
	}
	if s == 0 {
		return 1
	}
	return s
}

// sse gives the sum of squared deviations from the mean of xs[a:b],
// scaled, from prefix sums.
type sse struct{ s1, s2 []float64 }

func newSSE(xs []float64) sse {
	sc := noiseScale(xs)
	c := sse{make([]float64, len(xs)+1), make([]float64, len(xs)+1)}
	for i, x := range xs {
		y := x / sc
		c.s1[i+1] = c.s1[i] + y
		c.s2[i+1] = c.s2[i] + y*y
	}
	return c
}

func (c sse) cost(a, b int) float64 {
	n := float64(b - a)
	s := c.s1[b] - c.s1[a]
	return c.s2[b] - c.s2[a] - s*s/n
}

func mbic(n int) float64 { return 3 * math.Log(float64(n)) }

// binSeg is binary segmentation with at most q change points.
func binSeg(xs []float64, m, q int) []int {
	n := len(xs)
	if n < 2*m {
		return nil
	}
	c := newSSE(xs)
	pen := mbic(n)
	cps := []int{}
	for len(cps) < q {
		bounds := append(append([]int{0}, cps...), n)
		best, bestGain := -1, pen
		for i := 0; i+1 < len(bounds); i++ {
			a, b := bounds[i], bounds[i+1]
			whole := c.cost(a, b)
			for t := a + m; t <= b-m; t++ {
				if g := whole - c.cost(a, t) - c.cost(t, b); g > bestGain {
					best, bestGain = t, g
				}
			}
		}
		if best < 0 {
			break
		}
		cps = append(cps, best)
		slices.Sort(cps)
	}
	return cps
}

// pelt is the exact penalized segmentation, pruned.
func pelt(xs []float64, m int) []int {
	n := len(xs)
	if n < 2*m {
		return nil
	}
	c := newSSE(xs)
	pen := mbic(n)
	f := make([]float64, n+1)
	last := make([]int, n+1)
	f[0] = -pen
	cand := []int{0}
	for t := m; t <= n; t++ {
		f[t] = math.Inf(1)
		for _, s := range cand {
			if t-s < m {
				continue
			}
			if v := f[s] + c.cost(s, t) + pen; v < f[t] {
				f[t], last[t] = v, s
			}
		}
		if t-m+1 >= m {
			cand = append(cand, t-m+1)
		}
		// Prune: s can never be optimal again when it is already worse
		// than f[t] without the penalty.
		cand = slices.DeleteFunc(cand, func(s int) bool {
			return t-s >= m && f[s]+c.cost(s, t) > f[t]
		})
	}
	var cps []int
	for t := last[n]; t > 0; t = last[t] {
		cps = append(cps, t)
	}
	slices.Reverse(cps)
	return cps
}
