package verdict

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// history is a Scale of 20 past runs of 3 repetitions whose logs vary by
// sd (a coefficient of variation of about sd): their variances are sd^2
// times the 20 evenly spaced quantiles of a chi-square of 2 degrees of
// freedom over 2 (an exponential), as normal noise spreads them.
func history(sd float64) *Scale {
	runs := make([]Spread, 20)
	for i := range runs {
		runs[i] = Spread{N: 3, Var: -sd * sd * math.Log1p(-(float64(i)+0.5)/20)}
	}
	return PoolScale(runs, "test.db")
}

// With the noise known from the history, 3 runs per side call a change of
// 5 IQR (1% noise: 6.7%) and 6 runs one of 2 IQR (2.7%) that the runs'
// own t test leaves UNKNOWN; an A/A comparison stays UNKNOWN.
func TestScaledEarlyLooks(t *testing.T) {
	s := history(0.01)
	base3, new3 := []float64{98.6, 101.2, 100.4}, []float64{95.1, 92.4, 93.8}
	aa3 := []float64{100.9, 99.3, 101.4}
	base6 := []float64{98.6, 101.2, 100.4, 99.5, 101.6, 98.9}
	new6 := []float64{96.1, 98.9, 97.0, 97.8, 95.6, 98.4}
	for _, c := range []struct {
		name      string
		b, n      []float64
		plain, hs Verdict
	}{
		{"A/A at 3", base3, aa3, Unknown, Unknown},
		{"A/A at 6", base6, append(slices.Clone(aa3), 100.2, 98.8, 99.7), Unknown, Unknown},
		{"5 IQR at 3", base3, new3, Unknown, Different},
		{"2 IQR at 6", base6, new6, Unknown, Different},
	} {
		plain := Decide(c.b, c.n, DefaultMinEffect, nil)
		r := DecideWith(c.b, c.n, DefaultMinEffect, nil, s)
		if plain.Verdict != c.plain || r.Verdict != c.hs {
			t.Errorf("%s: %s (p %.3g) without the history, %s (p %.3g) with it; want %s and %s", c.name, plain.Verdict, plain.P, r.Verdict, r.P, c.plain, c.hs)
		}
		if r.Scale != s.String() || !strings.Contains(r.Reason, "20 past runs (40 degrees of freedom) in test.db") || plain.Scale != "" {
			t.Errorf("%s: scale %q, reason %q; want the history named", c.name, r.Scale, r.Reason)
		}
		if v := DecideFastWith(sorted(c.b), sorted(c.n), DefaultMinEffect, Default, s); v != r.Verdict {
			t.Errorf("%s: DecideFastWith %s, DecideWith %s", c.name, v, r.Verdict)
		}
		if r.Verdict == Different && !(r.Hi < 0 && r.Lo <= r.Shift && r.Shift <= r.Hi) {
			t.Errorf("%s: shift %.3g [%.3g, %.3g]; want an interval below 0 around it", c.name, r.Shift, r.Lo, r.Hi)
		}
	}
	if r := Decide(base3, aa3, DefaultMinEffect, nil); !strings.Contains(r.Reason, "past runs") {
		t.Errorf("without a history the early look's reason %q does not say a history would help", r.Reason)
	}
}

// The history scale does not apply to runs much noisier than it (the noise
// changed), nor to values with no log; the early look then is the runs'
// own t test and says why.
func TestScaleNotApplied(t *testing.T) {
	s := history(0.001)
	b, n := []float64{90, 100, 110}, []float64{89, 99, 111}
	if r := DecideWith(b, n, DefaultMinEffect, nil, s); r.Scale != "" || !strings.Contains(r.Reason, "noisier") {
		t.Errorf("runs 100x noisier than the history: scale %q, reason %q; want it unused", r.Scale, r.Reason)
	}
	if r := DecideWith([]float64{0, 1, 1}, []float64{0, 1, 2}, DefaultMinEffect, nil, s); r.Scale != "" || !strings.Contains(r.Reason, "no log") {
		t.Errorf("a zero value: scale %q, reason %q; want the runs' own t test", r.Scale, r.Reason)
	}
	if PoolScale([]Spread{{N: 1, Var: math.NaN()}, {N: 3, Var: math.NaN()}}, "x") != nil {
		t.Error("PoolScale of runs with no spread is not nil")
	}
	if sc := PoolScale([]Spread{{N: 3, Var: 4}, {N: 5, Var: 1}}, "x"); sc.DF != 6 || sc.Var != 2 || sc.Runs != 2 {
		t.Errorf("PoolScale: %+v; want var (2*4+4*1)/6 = 2 on 6 degrees of freedom", sc)
	}
}

// Over many A/A comparisons of normal noise at the early looks, with the
// scale estimated from a short history drawn each time (10 runs of 3), the
// false DIFFERENT stays near the looks' 0.15% + 0.30%.
func TestScaledEarlyLooksAA(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const trials = 4000
	diff := 0
	for range trials {
		spreads := make([]Spread, 10)
		for i := range spreads {
			spreads[i] = LogSpread([]float64{100 + normalNoise.draw(r), 100 + normalNoise.draw(r), 100 + normalNoise.draw(r)})
		}
		s := PoolScale(spreads, "sim")
		var b, n []float64
		for _, look := range []int{3, 6} {
			for len(b) < look {
				b, n = append(b, 100+normalNoise.draw(r)), append(n, 100+normalNoise.draw(r))
			}
			if DecideFastWith(sorted(b), sorted(n), DefaultMinEffect, Default, s) == Different {
				diff++
				break
			}
		}
	}
	if rate := float64(diff) / trials; rate > 0.01 {
		t.Errorf("A/A false DIFFERENT at the early looks with a history scale: %.2f%%, want at most 1%% (nominal 0.45%%)", 100*rate)
	}
}

// Past runs whose levels differ by more than their repetitions explain
// (a run-to-run offset of 2%, 1% within runs) give a between-run
// variance, which the early looks add for each side: a 3-run -4% A/A
// of two runs apart stays UNKNOWN. A history whose level stepped once (a
// commit) and whose runs otherwise agree gives none.
func TestScaleBetweenRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	offsets := make([]Spread, 20)
	step := make([]Spread, 20)
	for i := range offsets {
		offsets[i] = Spread{N: 3, Mean: 0.02 * r.NormFloat64(), Var: 0.01 * 0.01}
		step[i] = Spread{N: 3, Mean: 0.01 * math.Sqrt(2.0/3) / math.Sqrt2 * r.NormFloat64(), Var: 0.01 * 0.01}
		if i >= 10 {
			step[i].Mean += 0.1
		}
	}
	s := PoolScale(offsets, "h.db")
	if b := math.Sqrt(s.Between); b < 0.01 || b > 0.04 || !strings.Contains(s.String(), "runs apart by") {
		t.Errorf("runs 2%% apart: between %.3g (%s); want about 0.02", b, s)
	}
	if st := PoolScale(step, "h.db"); st.Between != 0 {
		t.Errorf("one step of the level: between %.3g, want 0", math.Sqrt(st.Between))
	}
	b, n := []float64{100, 101, 99}, []float64{96, 97, 95.1}
	if v := DecideWith(b, n, DefaultMinEffect, nil, history(0.01)).Verdict; v != Different {
		t.Errorf("-4%% at 3 runs with a history of runs that agree: %s, want DIFFERENT", v)
	}
	if v := DecideWith(b, n, DefaultMinEffect, nil, s).Verdict; v != Unknown {
		t.Errorf("-4%% at 3 runs with a history of runs 2%% apart: %s, want UNKNOWN", v)
	}
}
