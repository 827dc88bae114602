package history

import (
	"math"
	"slices"
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
}

// init sorts xs once.
func (s *scratch) init(xs []float64) {
	n := len(xs)
	s.pos, s.at, s.tie = make([]int32, n), make([]int32, n), make([]int32, n)
	for i := range s.at {
		s.at[i] = int32(i)
	}
	slices.SortFunc(s.at, func(a, b int32) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return int(a - b)
	})
	for k, i := range s.at {
		s.pos[i] = int32(k)
		s.tie[k] = int32(k)
		if k > 0 && xs[s.at[k-1]] == xs[i] {
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
// freedom.
func studentTwoSided(t, df float64) float64 {
	if math.IsNaN(t) {
		return 1
	}
	if math.IsInf(t, 0) {
		return 0
	}
	return regIncBeta(df/2, 0.5, df/(df+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b),
// evaluated by its continued fraction (modified Lentz's method).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaCF(b, a, 1-x)/b
	}
	return front * betaCF(a, b, x) / a
}

func betaCF(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-14
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d, c = 1+num*d, 1+num/c
		d = 1 / nonzero(d, tiny)
		c = nonzero(c, tiny)
		h *= d * c
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d, c = 1+num*d, 1+num/c
		d = 1 / nonzero(d, tiny)
		c = nonzero(c, tiny)
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

func nonzero(v, tiny float64) float64 {
	if math.Abs(v) < tiny {
		return tiny
	}
	return v
}

// median returns the median of xs (NaN when empty); xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
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
