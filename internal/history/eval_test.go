package history

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestF1(t *testing.T) {
	for _, tc := range []struct {
		ann  [][]int
		pred []int
		want float64
	}{
		{[][]int{{10, 20}}, []int{10, 20}, 1},
		{[][]int{{10, 20}}, nil, 0.5},                   // P 1/1, R 1/3
		{[][]int{{10, 20}}, []int{3}, 0.4},              // P 1/2, R 1/3
		{[][]int{{10, 20}}, []int{14, 15, 16}, 6.0 / 7}, // P 3/4, R 1
		// Two annotators: union {0,10,12,30}, 11 matches one of them.
		{[][]int{{10}, {12, 30}}, []int{11}, 10.0 / 11},
		{[][]int{nil}, nil, 1},
	} {
		if got := F1(tc.ann, tc.pred, 5); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("F1(%v, %v) = %v, want %v", tc.ann, tc.pred, got, tc.want)
		}
	}
}

func TestCovering(t *testing.T) {
	for _, tc := range []struct {
		ann  [][]int
		pred []int
		want float64
	}{
		{[][]int{{50}}, []int{50}, 1},
		{[][]int{{50}}, nil, 0.5},
		{[][]int{{50}}, []int{40}, (40 + 50*50.0/60) / 100},
		{[][]int{{50}, nil}, nil, 0.75},
	} {
		if got := Covering(tc.ann, tc.pred, 100); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Covering(%v, %v) = %v, want %v", tc.ann, tc.pred, got, tc.want)
		}
	}
}

func indices(cs []Change) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Index
	}
	return out
}

type score struct{ f1, cover, baseF1, baseCover float64 }

// TestEvaluation scores Default on the synthetic suite beside the
// baseline that reports no change point at all, per family and overall,
// and checks the goals of docs/history.md.
func TestEvaluation(t *testing.T) {
	series := suite(t, 1, 100)
	byFamily := map[string][]score{}
	var families []string
	for _, s := range series {
		pred := indices(Default.Detect(s.xs))
		ann := [][]int{s.truth}
		sc := score{F1(ann, pred, 5), Covering(ann, pred, len(s.xs)), F1(ann, nil, 5), Covering(ann, nil, len(s.xs))}
		if _, ok := byFamily[s.family]; !ok {
			families = append(families, s.family)
		}
		byFamily[s.family] = append(byFamily[s.family], sc)
	}
	var all []score
	var b strings.Builder
	fmt.Fprintf(&b, "%-14s %6s %6s %8s %8s\n", "family", "F1", "cover", "F1 none", "cov none")
	for _, f := range append(families, "all") {
		scs := byFamily[f]
		if f == "all" {
			scs = all
		}
		all = append(all, scs...)
		m := meanScore(scs)
		fmt.Fprintf(&b, "%-14s %6.3f %6.3f %8.3f %8.3f\n", f, m.f1, m.cover, m.baseF1, m.baseCover)
	}
	t.Logf("scores over %d synthetic series (margin 5):\n%s", len(series), b.String())
	m := meanScore(all)
	if m.f1 < 0.70 || m.cover < 0.67 {
		t.Errorf("F1 %.3f, covering %.3f: want at least 0.70 and 0.67", m.f1, m.cover)
	}
	if m.f1 <= m.baseF1 || m.cover <= m.baseCover {
		t.Errorf("F1 %.3f, covering %.3f do not beat the no-change baseline's %.3f, %.3f", m.f1, m.cover, m.baseF1, m.baseCover)
	}
}

func meanScore(scs []score) score {
	var m score
	for _, s := range scs {
		m.f1 += s.f1
		m.cover += s.cover
		m.baseF1 += s.baseF1
		m.baseCover += s.baseCover
	}
	n := float64(len(scs))
	return score{m.f1 / n, m.cover / n, m.baseF1 / n, m.baseCover / n}
}

// TestStepOf2xNoise: a single step of twice the noise (its standard
// deviation) is found within 5 points in at least 90% of series, for
// Gaussian and for real noise. Student's t with 2 degrees of freedom has
// no standard deviation; its steps are twice its IQR-matched scale and
// are held to a lower bar (see docs/history.md).
func TestStepOf2xNoise(t *testing.T) {
	for _, sr := range stepOf2xRates(t, Default) {
		t.Logf("%s noise: 2x steps found within 5 points in %.1f%% of %d series", sr.name, 100*sr.rate, sr.trials)
		if sr.rate < sr.goal {
			t.Errorf("%s noise: 2x steps found in %.1f%%, want at least %.0f%%", sr.name, 100*sr.rate, 100*sr.goal)
		}
	}
}

// stepRate is the share of series with a single step of 2x the noise
// in which a detector finds it within 5 points, and its goal.
type stepRate struct {
	name       string
	trials     int
	rate, goal float64
}

// stepOf2xRates runs p on 300 series with a step of 2x the noise of
// each kind (Gaussian, Student's t2, real), 60-200 points, the step at
// least 20 points from either end.
func stepOf2xRates(t testing.TB, p Params) []stepRate {
	r := rand.New(rand.NewPCG(2, 25))
	var out []stepRate
	for _, nz := range []struct {
		name string
		f    noise
		goal float64
	}{{"gaussian", gaussian, 0.90}, {"student-t2", studentT2, 0.65}, {"real", realNoise(t), 0.90}} {
		sr := stepRate{name: nz.name, trials: 300, goal: nz.goal}
		found := 0
		for range sr.trials {
			n := 60 + r.IntN(140)
			xs, truth := stepSeries(r, n, []float64{2}, 20, nz.f)
			if slices.ContainsFunc(p.Detect(xs), func(c Change) bool { return abs(c.Index-truth[0]) <= 5 }) {
				found++
			}
		}
		sr.rate = float64(found) / float64(sr.trials)
		out = append(out, sr)
	}
	return out
}

// TestFalseAlerts: stationary series, with and without trends and
// seasonality, get at most 1 change point per 1,000 points.
func TestFalseAlerts(t *testing.T) {
	for _, fa := range falseAlertRates(t, Default, 40) {
		t.Logf("%s: %d change points in %d stationary points (%.2f per 1000)", fa.name, fa.alerts, fa.points, fa.perK())
		if fa.perK() > 1 {
			t.Errorf("%s: %.2f false change points per 1000 points, want at most 1", fa.name, fa.perK())
		}
	}
}

// TestFalseAlertsStrongAR: noise more correlated than MaxPhi allows for
// (AR(1) with φ 0.7-0.9, a machine whose runs drift together) still gets
// at most 1 change point per 1,000 stationary points. A lower cap scores
// better on TCPD's economic series, which drift and whose annotators
// mark the drifts; this is what bounds it (docs/history.md: at a cap of
// 0.4, φ 0.9 got 1.25 per 1,000 points).
func TestFalseAlertsStrongAR(t *testing.T) {
	for _, phi := range []float64{0.7, 0.8, 0.9} {
		r := rand.New(rand.NewPCG(7, 25))
		fa := falseRate{name: fmt.Sprintf("AR(1) %.1f", phi)}
		for range 40 {
			xs := make([]float64, 1000)
			for i := range xs {
				xs[i] = 100
			}
			addAR(r, xs, phi)
			fa.points += len(xs)
			fa.alerts += len(Default.Detect(xs))
		}
		t.Logf("%s: %d change points in %d stationary points (%.2f per 1000)", fa.name, fa.alerts, fa.points, fa.perK())
		if fa.perK() > 1 {
			t.Errorf("%s: %.2f false change points per 1000 points, want at most 1", fa.name, fa.perK())
		}
	}
}

type falseRate struct {
	name           string
	alerts, points int
}

func (f falseRate) perK() float64 { return 1000 * float64(f.alerts) / float64(f.points) }

// falseAlertRates runs p on reps stationary series of 1,000 points of
// each noise family and counts the change points it reports.
func falseAlertRates(t testing.TB, p Params, reps int) []falseRate {
	r := rand.New(rand.NewPCG(3, 25))
	rn := realNoise(t)
	var out []falseRate
	for _, tc := range []struct {
		name  string
		shape func(i, n int) float64
		nz    noise
	}{
		{"gaussian", flat, gaussian},
		{"student-t2", flat, studentT2},
		{"real", flat, rn},
		{"outliers", flat, func(r *rand.Rand) float64 {
			if r.IntN(50) == 0 {
				return 20 * sign(r)
			}
			return r.NormFloat64()
		}},
		{"trend", func(i, n int) float64 { return 10 * float64(i) / float64(n) }, gaussian},
		{"seasonal", func(i, n int) float64 { return 2 * math.Sin(2*math.Pi*float64(i)/12) }, gaussian},
		{"AR(1) 0.6", flat, nil},
		{"wander", flat, wander(r)},
	} {
		fa := falseRate{name: tc.name}
		for range reps {
			n := 1000
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = 100 + tc.shape(i, n)
				if tc.nz != nil {
					xs[i] += tc.nz(r)
				}
			}
			if tc.nz == nil {
				addAR(r, xs, 0.6)
			}
			fa.points += n
			fa.alerts += len(p.Detect(xs))
		}
		out = append(out, fa)
	}
	return out
}

// wander is white noise plus as much again of a slow wander (a moving
// sum of the last 20 draws of another white noise, scaled to the same
// variance): a CI machine that is slow for a while. Its lag-1
// correlation is near 0 (each step of the wander is small against the
// white part) while sums over tens of points vary twice as much as
// independent noise's.
func wander(r *rand.Rand) noise {
	const span = 20
	var last [span]float64
	k := 0
	return func(r2 *rand.Rand) float64 {
		last[k%span] = r.NormFloat64()
		k++
		s := 0.0
		for _, z := range last {
			s += z
		}
		return r2.NormFloat64() + s/math.Sqrt(span)
	}
}

// worstFalseAlerts is the highest false alert rate per 1,000 points of
// falseAlertRates over its families.
func worstFalseAlerts(t testing.TB, p Params) float64 {
	worst := 0.0
	for _, fa := range falseAlertRates(t, p, 10) {
		worst = max(worst, fa.perK())
	}
	return worst
}

func flat(int, int) float64 { return 0 }

// TestRankTestCalibrated: on stationary series the rank test's p-value
// is conservative: p <= 0.01 in at most 1% of series.
func TestRankTestCalibrated(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 25))
	var s scratch
	for _, n := range []int{20, 100, 500} {
		const trials = 2000
		hits := 0
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = r.NormFloat64()
			}
			s.init(xs, Default.MaxPhi)
			if _, p := bestSplit(&s, 0, n, 5); p <= 0.01 {
				hits++
			}
		}
		if rate := float64(hits) / trials; rate > 0.01 {
			t.Errorf("n=%d: p <= 0.01 in %.2f%% of stationary series", n, 100*rate)
		}
	}
}

// TestPointsAfterChange measures how many points after a step the
// detector needs: Gaussian noise, 100 stable points, then a step of k
// times the noise and n points at the new level; the share of series
// where a change point lies within 2 points of the step (the table of
// docs/history.md). A step of 5x the noise is found with 10 points after
// it in at least 95% of series.
func TestPointsAfterChange(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 25))
	after := []int{6, 7, 8, 10, 15, 20}
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s", "step")
	for _, n := range after {
		fmt.Fprintf(&b, " %5d", n)
	}
	b.WriteString("\n")
	const trials = 200
	for _, k := range []float64{10, 5, 3, 2} {
		fmt.Fprintf(&b, "%-5s", fmt.Sprintf("%gx", k))
		for _, n := range after {
			found := 0
			for range trials {
				xs := make([]float64, 100+n)
				for i := range xs {
					xs[i] = 100 + r.NormFloat64()
					if i >= 100 {
						xs[i] += k
					}
				}
				if slices.ContainsFunc(Default.Detect(xs), func(c Change) bool { return abs(c.Index-100) <= 2 }) {
					found++
				}
			}
			share := float64(found) / trials
			fmt.Fprintf(&b, " %4.0f%%", 100*share)
			if k == 5 && n == 10 && share < 0.95 {
				t.Errorf("5x step with 10 points after it found in %.0f%%, want at least 95%%", 100*share)
			}
		}
		b.WriteString("\n")
	}
	t.Logf("share of %d series with the step found within 2 points, by points after it:\n%s", trials, b.String())
}
