package verdict

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// The Pinpoint-style procedure, the anchor of the simulation (Chromium's
// Pinpoint as the issue describes it, reimplemented from that description):
// p = min(Kolmogorov-Smirnov p, Mann-Whitney p); DIFFERENT when p < 0.01;
// SAME when p is above a high threshold that depends on the sample size and
// the effect size searched for (1 IQR here); else UNKNOWN, which doubles
// the repetitions: 10, 20, 40, 80, 160, then SAME.
var pinpointLooks = []int{10, 20, 40, 80, 160}

const pinpointMagnitude = 1.0 // IQRs

func pinpoint() procedure {
	return procedure{"Pinpoint-style", func(more func(int) ([]float64, []float64), _ func(int, int) *Scale) (Verdict, int) {
		for i, l := range pinpointLooks {
			b, n := more(l)
			p := pinpointP(b, n)
			switch {
			case p < 0.01:
				return Different, l
			case p > pinpointHigh()[i]:
				return Same, l
			}
		}
		return Same, pinpointLooks[len(pinpointLooks)-1]
	}}
}

// zeroDay is 0-day's rule (lkp-tests lib/stats.rb, gap?): with at least 3
// runs per side, DIFFERENT when the two ranges are disjoint with a gap
// wider than half the change of the middle runs (the sorted run at n/2,
// which lkp-tests calls the mean). It looks at 3 and at 6 runs per side;
// a change it does not report counts as SAME.
func zeroDay() procedure {
	return procedure{"0-day's rule", func(more func(int) ([]float64, []float64), _ func(int, int) *Scale) (Verdict, int) {
		for _, l := range []int{3, 6} {
			b, n := more(l)
			if zeroDayGap(b, n, 0.5) {
				return Different, l
			}
		}
		return Same, 6
	}}
}

// zeroDayGap is lkp-tests' gap? on sorted b and n.
func zeroDayGap(b, n []float64, gap float64) bool {
	mb, mn := b[len(b)/2], n[len(n)/2]
	return n[0] > b[len(b)-1] && n[0]-b[len(b)-1] > (mn-mb)*gap ||
		b[0] > n[len(n)-1] && b[0]-n[len(n)-1] > (mb-mn)*gap
}

func pinpointP(b, n []float64) float64 {
	mwu := 2 * normalSF(math.Abs(rankZ(b, n, 0)))
	return math.Min(mwu, ksP(b, n))
}

// pinpointHigh are the high thresholds at each look: as Pinpoint derives
// them, the p-value that 99% of comparisons of normal samples differing by
// the magnitude stay below, here by a seeded Monte Carlo of 2000 draws.
var pinpointHigh = sync.OnceValue(func() []float64 {
	r := rand.New(rand.NewPCG(27, 27))
	var out []float64
	for _, n := range pinpointLooks {
		ps := make([]float64, 2000)
		for i := range ps {
			b, x := make([]float64, n), make([]float64, n)
			for j := range n {
				b[j] = normalNoise.draw(r)
				x[j] = pinpointMagnitude + normalNoise.draw(r)
			}
			slices.Sort(b)
			slices.Sort(x)
			ps[i] = pinpointP(b, x)
		}
		slices.Sort(ps)
		out = append(out, ps[len(ps)*99/100])
	}
	return out
})

// ksP is the two-sample Kolmogorov-Smirnov p-value of sorted a and b
// (asymptotic distribution with Stephens' small-sample correction).
func ksP(a, b []float64) float64 {
	i, j, d := 0, 0, 0.0
	na, nb := float64(len(a)), float64(len(b))
	for i < len(a) && j < len(b) {
		v := math.Min(a[i], b[j])
		for i < len(a) && a[i] == v {
			i++
		}
		for j < len(b) && b[j] == v {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/na-float64(j)/nb))
	}
	ne := math.Sqrt(na * nb / (na + nb))
	lambda := (ne + 0.12 + 0.11/ne) * d
	if lambda < 0.2 {
		return 1
	}
	sum, sign := 0.0, 1.0
	for k := 1; k <= 100; k++ {
		term := 2 * sign * math.Exp(-2*float64(k*k)*lambda*lambda)
		sum += term
		if math.Abs(term) < 1e-12 {
			break
		}
		sign = -sign
	}
	return math.Min(1, math.Max(0, sum))
}
