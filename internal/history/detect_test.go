package history

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func steps(levels ...float64) []float64 {
	var xs []float64
	for _, l := range levels {
		for range 30 {
			xs = append(xs, l)
		}
	}
	return xs
}

func TestDetectEdgeCases(t *testing.T) {
	outlier := steps(5, 5)
	outlier[20] = 1000
	for _, tc := range []struct {
		name string
		xs   []float64
		want []int
	}{
		{"empty", nil, nil},
		{"short", []float64{1, 1, 1, 9, 9, 9}, nil},
		{"constant", steps(5, 5), nil},
		{"noiseless step", steps(5, 7), []int{30}},
		{"noiseless staircase", steps(1, 2, 3, 4), []int{30, 60, 90}},
		{"one outlier", outlier, nil},
		{"up and back", steps(5, 9, 5), []int{30, 60}},
	} {
		got := indices(Default.Detect(tc.xs))
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: change points %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDetectOutlierBursts: bursts of up to 4 outliers in a row never make
// a change point (segments hold at least 5 points).
func TestDetectOutlierBursts(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 25))
	for burst := 1; burst <= 4; burst++ {
		for range 50 {
			xs := make([]float64, 120)
			for i := range xs {
				xs[i] = 100 + r.NormFloat64()
			}
			at := r.IntN(len(xs) - burst)
			for i := at; i < at+burst; i++ {
				xs[i] += 50
			}
			if cps := Default.Detect(xs); len(cps) > 0 {
				t.Errorf("burst of %d at %d: change points %v", burst, at, cps)
			}
		}
	}
}

func TestAnalyze(t *testing.T) {
	xs := steps(0, 10, 8)
	var pts []Point
	for i, x := range xs {
		jitter := 0.01 * float64(i%3)
		if x == 0 {
			jitter = 0
		}
		pts = append(pts, Point{Label: string(rune('A' + i%26)), Value: x + jitter})
		if i == 45 {
			pts = append(pts, Point{Label: "missing", Value: math.NaN()})
		}
	}
	rs := Analyze([]Series{
		{Metric: "lat", Better: LowerIsBetter, Points: pts},
		{Metric: "pps", Better: HigherIsBetter, Points: pts},
		{Metric: "n", Points: pts},
	}, Default)
	for i, want := range [][]string{{"regression", "improvement"}, {"improvement", "regression"}, {"change", "change"}} {
		r := rs[i]
		if len(r.Points) != 90 || len(r.Changes) != 2 {
			t.Fatalf("%s: %d points, %d change points; want 90 (NaN dropped) and 2", r.Metric, len(r.Points), len(r.Changes))
		}
		c0, c1 := r.Changes[0], r.Changes[1]
		if c0.Index != 30 || c0.Label != "E" || c0.Direction != want[0] || c1.Index != 60 || c1.Direction != want[1] {
			t.Errorf("%s: %+v %+v, want %s at 30 (E) and %s at 60", r.Metric, c0, c1, want[0], want[1])
		}
		if c0.Change != nil || c1.Change == nil || math.Abs(*c1.Change+0.2) > 0.01 {
			t.Errorf("%s: changes %v, %v; want none from 0, then -20%%", r.Metric, c0.Change, c1.Change)
		}
		// The second change's first point, 60, is the 30th from the end.
		if got := len(r.NewRegressions(30)); (want[1] == "regression") != (got == 1) {
			t.Errorf("%s: %d new regressions in the last 30 points", r.Metric, got)
		}
		if got := len(r.NewRegressions(29)); got != 0 {
			t.Errorf("%s: %d new regressions in the last 29 points, want 0", r.Metric, got)
		}
	}
	js, err := MarshalResults(rs[:1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"metric": "lat"`, `"cell": ""`, `"points": 90`, `"index": 30`, `"change": null`, `"direction": "regression"`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
}

func TestSparkline(t *testing.T) {
	if got := Sparkline([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 60); got != "▁▂▃▄▅▆▇█" {
		t.Errorf("Sparkline = %q", got)
	}
	if got := Sparkline(steps(1, 2), 4); got != "▁▁██" {
		t.Errorf("Sparkline of 60 points in 4 = %q", got)
	}
	if got := Sparkline([]float64{3, 3}, 10); got != "▁▁" {
		t.Errorf("Sparkline of a constant = %q", got)
	}
}

// TestDetectLargeStepExact: a large step (25% on 2% noise) with 10 points
// after it is found at its exact index: ranks alone would put it a few
// points off, towards the middle.
func TestDetectLargeStepExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const trials = 1000
	exact := 0
	for range trials {
		xs := make([]float64, 40)
		for i := range xs {
			xs[i] = 100 * (1 + 0.02*r.NormFloat64())
			if i >= 30 {
				xs[i] *= 0.75
			}
		}
		if cps := Default.Detect(xs); len(cps) == 1 && cps[0].Index == 30 {
			exact++
		}
	}
	if exact < trials*99/100 {
		t.Errorf("found at exactly 30 in %d of %d series, want 99%%", exact, trials)
	}
}

// TestDetectMinEffect: with a trend window as long as the series, a
// shift of half the noise over 2,000 points is significant, but smaller
// than the noise, so MinEffect 1 does not report it; without the minimum
// it is reported. A shift of twice the noise is reported by both.
func TestDetectMinEffect(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 25))
	series := func(step float64) []float64 {
		xs := make([]float64, 2000)
		for i := range xs {
			xs[i] = 100 + r.NormFloat64()
			if i >= 1000 {
				xs[i] += step
			}
		}
		return xs
	}
	min1 := Default
	min1.TrendWindow = 1000
	noMin := min1
	noMin.MinEffect = 0
	small, big := series(0.5), series(2)
	if got := min1.Detect(small); len(got) != 0 {
		t.Errorf("a shift of 0.5x the noise: change points %v, want none", got)
	}
	if got := noMin.Detect(small); len(got) != 1 || abs(got[0].Index-1000) > 20 {
		t.Errorf("without a minimum, a shift of 0.5x the noise over 2,000 points: change points %v, want one near 1000", got)
	}
	for _, p := range []Params{min1, noMin} {
		if got := p.Detect(big); len(got) != 1 || got[0].Index != 1000 {
			t.Errorf("MinEffect %g, a 2x step: change points %v, want one at 1000", p.MinEffect, got)
		}
	}
}

// TestDetectShortSegments: a regression fixed 8 runs later, another 8
// runs after that, and one fixed 6 runs later at the end, each 15x the
// noise: every edge is found at its index, although 8 points against 8
// cannot reach p <= 0.001 in the rank test. Without ShortEffect they
// are not; and a burst of 6 points of 2x the noise is no change point.
func TestDetectShortSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 25))
	want := []int{20, 28, 36, 44, 88, 94}
	found, foundOld := 0, 0
	const trials = 100
	for range trials {
		xs := make([]float64, 100)
		for i := range xs {
			xs[i] = 100 + r.NormFloat64()
			for k, at := range want {
				if i >= at {
					xs[i] += 15 * float64(1-2*(k%2))
				}
			}
		}
		if slices.Equal(indices(Default.Detect(xs)), want) {
			found++
		}
		noShort := Default
		noShort.ShortEffect = 0
		if slices.Equal(indices(noShort.Detect(xs)), want) {
			foundOld++
		}
	}
	if found < trials*95/100 || foundOld > trials/10 {
		t.Errorf("all six edges found exactly in %d of %d series (want 95%%), %d without ShortEffect", found, trials, foundOld)
	}
	falseShort := 0
	for range trials {
		xs := make([]float64, 100)
		for i := range xs {
			xs[i] = 100 + r.NormFloat64()
			if i >= 50 && i < 56 {
				xs[i] += 2
			}
		}
		falseShort += len(Default.Detect(xs))
	}
	if falseShort > trials/20 {
		t.Errorf("a 6-point burst of 2x the noise: %d change points in %d series", falseShort, trials)
	}
}

// TestDetectSeeded: in a history of 2,000 points with a step of 1.5x the
// noise at 600, a regression of 3x the noise fixed 40 runs later (at
// 1500-1540) is found, both edges within 2 points, in at least 45 of 50
// series; binary segmentation from the whole series alone (Seeded 0)
// finds it in at most 10: its splits of the long stretch fall elsewhere.
func TestDetectSeeded(t *testing.T) {
	noSeeded := Default
	noSeeded.Seeded = 0
	found, foundOld := 0, 0
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 7))
		xs := make([]float64, 2000)
		for i := range xs {
			xs[i] = 100 + r.NormFloat64()
			if i >= 600 {
				xs[i] += 1.5
			}
			if i >= 1500 && i < 1540 {
				xs[i] += 3
			}
		}
		both := func(p Params) bool {
			cs := p.Detect(xs)
			near := func(at int) bool {
				return slices.ContainsFunc(cs, func(c Change) bool { return abs(c.Index-at) <= 2 })
			}
			return near(1500) && near(1540)
		}
		if both(Default) {
			found++
		}
		if both(noSeeded) {
			foundOld++
		}
	}
	if found < 45 || foundOld > 10 {
		t.Errorf("both edges of a 40-point regression found in %d of 50 series (want at least 45), %d without seeded intervals (want at most 10)", found, foundOld)
	}
}

// TestLongRunInflation: on white noise the long-run estimate stays at 1;
// on white noise plus as much again of a wander over 20 points it is
// about twice that, where the lag-1 estimate still sees independent
// noise; steps of 10x the noise every 200 points barely move it.
func TestLongRunInflation(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 25))
	white, wandering, stepped := make([]float64, 2000), make([]float64, 2000), make([]float64, 2000)
	w := wander(r)
	for i := range white {
		white[i] = r.NormFloat64()
		wandering[i] = w(r)
		stepped[i] = r.NormFloat64() + 10*float64(i/200%2)
	}
	if got := longRunInflation(white, 25, 10, 0.6); got > 1.1 {
		t.Errorf("white noise: long-run inflation %.2f, want about 1", got)
	}
	if got := longRunInflation(stepped, 25, 10, 0.6); got > 1.3 {
		t.Errorf("white noise with steps: long-run inflation %.2f, want about 1", got)
	}
	lag1, long := varianceInflation(wandering, 0.6), longRunInflation(wandering, 25, 10, 0.6)
	if lag1 > 1.2 || long < 1.5 {
		t.Errorf("white noise plus a wander: lag-1 inflation %.2f (want about 1), long-run %.2f (want at least 1.5)", lag1, long)
	}
}
