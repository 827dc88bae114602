package verdict

import (
	"math"
	"slices"
)

// rankZ is the standardized Mann-Whitney U statistic of new-shift against
// base (both sorted): positive when new-shift tends to be larger. It uses
// mid-ranks for ties, the tie-corrected variance and a continuity
// correction of 1/2 toward 0. All-tied samples give 0.
func rankZ(b, n []float64, shift float64) float64 {
	m, k := len(b), len(n)
	// Walk the merged order, tie group by tie group, summing the ranks of
	// new's values and the tie correction.
	i, j := 0, 0
	rank := 0.0 // ranks used so far
	rn := 0.0   // rank sum of new
	ties := 0.0 // sum of t^3 - t over tie groups
	for i < m || j < k {
		var v float64
		switch {
		case j >= k:
			v = b[i]
		case i >= m:
			v = n[j] - shift
		default:
			v = math.Min(b[i], n[j]-shift)
		}
		if math.IsNaN(v) {
			return 0 // not a number: callers drop them; never loop
		}
		tb, tn := 0, 0
		for i < m && b[i] == v {
			i, tb = i+1, tb+1
		}
		for j < k && n[j]-shift == v {
			j, tn = j+1, tn+1
		}
		t := float64(tb + tn)
		mid := rank + (t+1)/2
		rn += float64(tn) * mid
		rank += t
		ties += t*t*t - t
	}
	nn := float64(m + k)
	u := rn - float64(k)*float64(k+1)/2
	mu := float64(m) * float64(k) / 2
	v := float64(m) * float64(k) / 12 * ((nn + 1) - ties/(nn*(nn-1)))
	if v <= 0 {
		return 0
	}
	d := u - mu
	switch {
	case d > 0.5:
		d -= 0.5
	case d < -0.5:
		d += 0.5
	default:
		d = 0
	}
	return d / math.Sqrt(v)
}

// maxPairs bounds the pairwise differences of the shift's estimate and
// interval: larger samples are thinned to evenly spaced order statistics
// (the verdict itself, from ranks, always uses every run).
const maxPairs = 4_000_000

// pairDiffs returns the sorted differences n_j - b_i of all pairs (of the
// thinned samples when there are more than maxPairs).
func pairDiffs(b, n []float64) []float64 {
	for len(b)*len(n) > maxPairs {
		b, n = thin(b), thin(n)
	}
	d := make([]float64, 0, len(b)*len(n))
	for _, x := range n {
		for _, y := range b {
			d = append(d, x-y)
		}
	}
	slices.Sort(d)
	return d
}

// hodgesLehmann is the median of all pairwise differences new - base.
func hodgesLehmann(b, n []float64) float64 { return median(pairDiffs(b, n)) }

// mosesCI is the distribution-free confidence interval of the shift for
// the critical |z| c (normal approximation of the U distribution):
// the Ka-th smallest and largest pairwise differences. Too few pairs give
// infinite bounds.
func mosesCI(b, n []float64, c float64) (lo, hi float64) {
	d := pairDiffs(b, n)
	mn := float64(len(d))
	ka := int(math.Floor(mn/2 - c*math.Sqrt(mn*float64(len(b)+len(n)+1)/12)))
	if ka < 0 {
		return math.Inf(-1), math.Inf(1)
	}
	return d[ka], d[len(d)-1-ka]
}

// thin keeps every other order statistic of sorted v (the first and last
// always).
func thin(v []float64) []float64 {
	if len(v) < 4 {
		return v
	}
	out := make([]float64, 0, len(v)/2+1)
	for i := 0; i < len(v); i += 2 {
		out = append(out, v[i])
	}
	if (len(v)-1)%2 != 0 {
		out = append(out, v[len(v)-1])
	}
	return out
}
