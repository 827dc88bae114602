package verdict

import (
	"math"
	"strings"
	"testing"
)

// The boundary computation reproduces the published constants: Pocock's
// 2.413 and O'Brien-Fleming's final 2.040 for 5 equally spaced looks at a
// two-sided 5%.
func TestBoundsMatchTables(t *testing.T) {
	looks := []int{1, 2, 3, 4, 5}
	if c := (&Plan{Looks: looks, Alpha: 0.05, Shape: 0.5}).Bound(2); math.Abs(c-2.413) > 0.003 {
		t.Errorf("Pocock K=5: %.4f, want 2.413", c)
	}
	if c := (&Plan{Looks: looks, Alpha: 0.05, Shape: 0}).Bound(4); math.Abs(c-2.040) > 0.003 {
		t.Errorf("O'Brien-Fleming K=5 final: %.4f, want 2.040", c)
	}
}

// The default plan spends at most 1% over all its looks, whichever tests
// each look uses (issue 33's budget: 0.35% + 0.30% + 0.35%); disjoint
// ranges count only at looks whose runs can reach their level.
func TestNominalAlpha(t *testing.T) {
	if got := Default.NominalAlpha(); got > 0.01+1e-12 {
		t.Errorf("Default spends %.4g%% over its looks, want at most 1%%", 100*got)
	}
	p := &Plan{Looks: []int{3, 6, 10}, Early: 2, EarlyAlpha: []float64{0.001, 0.002}, DisjointAlpha: 0.05,
		ScaledAlpha: []float64{0.004}, Alpha: 0.003}
	// 3 runs: max(0.001, 0.004), disjoint p 0.1 > 0.05; 6 runs: 0.002 + 0.05.
	if got, want := p.NominalAlpha(), 0.004+0.052+0.003; math.Abs(got-want) > 1e-12 {
		t.Errorf("NominalAlpha %g, want %g", got, want)
	}
}

func TestDecide(t *testing.T) {
	base := []float64{100, 101, 99, 102, 98, 100, 101, 99, 100, 100}
	up := make([]float64, len(base))
	for i, v := range base {
		up[i] = v + 10
	}
	r := Decide(base, up, DefaultMinEffect, nil)
	if r.Verdict != Different || r.Shift != 10 || !(r.Lo > 0 && r.Hi >= 10) || math.Abs(r.Pct-10) > 1e-9 {
		t.Errorf("shift by 10: %+v; want DIFFERENT, shift 10, interval above 0", r)
	}
	if r := Decide(base, base, DefaultMinEffect, nil); r.Verdict == Different {
		t.Errorf("identical samples: %+v", r)
	}
	if r := Decide(base[:2], up[:2], DefaultMinEffect, nil); r.Verdict != Unknown || r.NextN != 3 || r.Look != -1 {
		t.Errorf("n=2: %+v; want UNKNOWN asking for 3", r)
	}
	zeros := make([]float64, 10)
	if r := Decide(zeros, zeros, DefaultMinEffect, nil); r.Verdict != Same {
		t.Errorf("all zero on both sides: %+v; want SAME", r)
	}
	if r := Decide([]float64{math.NaN(), 1}, []float64{2}, DefaultMinEffect, nil); r.NBase != 1 {
		t.Errorf("NaN kept: %+v", r)
	}
}

func TestParseMinEffect(t *testing.T) {
	for in, want := range map[string]MinEffect{"2%": {2, false}, " 0.5IQR": {0.5, true}, "1.5 %": {1.5, false}} {
		if got, err := ParseMinEffect(in); err != nil || got != want {
			t.Errorf("ParseMinEffect(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2", "-1%", "0iqr", "x%"} {
		if _, err := ParseMinEffect(in); err == nil {
			t.Errorf("ParseMinEffect(%q): no error", in)
		}
	}
}

// rankZ agrees with a hand-computed U: base {1,2,3}, new {4,5,6} has U=9,
// mean 4.5, variance 3*3*7/12 = 5.25, z = (9-4.5-0.5)/sqrt(5.25).
func TestRankZ(t *testing.T) {
	z := rankZ([]float64{1, 2, 3}, []float64{4, 5, 6}, 0)
	if want := 4 / math.Sqrt(5.25); math.Abs(z-want) > 1e-12 {
		t.Errorf("rankZ = %v, want %v", z, want)
	}
	if z := rankZ([]float64{1, 2, 3}, []float64{4, 5, 6}, 3); z != 0 {
		t.Errorf("shifted onto base: rankZ = %v, want 0", z)
	}
}

// Samples too large for all pairwise differences keep a bounded estimate:
// 3,000 runs per side shifted by 5 give a shift near 5.
func TestDecideLargeSamples(t *testing.T) {
	b, n := make([]float64, 3000), make([]float64, 3000)
	for i := range b {
		b[i] = float64(i % 100)
		n[i] = float64(i%100) + 5
	}
	r := Decide(b, n, DefaultMinEffect, nil)
	if math.Abs(r.Shift-5) > 1 || r.Verdict == Unknown || !(r.Lo <= 5 && r.Hi >= 5) {
		t.Errorf("large samples: %+v", r)
	}
}

// Early looks call a change far outside the noise from 3 runs per side, and
// only DIFFERENT: issue 33's example (6 runs, -10.00%, disjoint ranges), a
// drop to 0 at 3 runs; a change inside the noise stays UNKNOWN, asking for
// the next look.
func TestEarlyLooks(t *testing.T) {
	base := []float64{450000, 450800, 451600, 452400, 453200, 454000}
	worse := []float64{405000, 405720, 406440, 407160, 407880, 408600}
	r := Decide(base, worse, MinEffect{Value: 3}, nil)
	if r.Verdict != Different || r.Look != 1 || !(r.Hi < 0) || math.Abs(r.Level-(1-Default.EarlyAlpha[1])) > 1e-12 || r.P > 1e-6 {
		t.Errorf("6 runs, -10%%: %+v; want DIFFERENT at the 6-run look, interval below 0", r)
	}
	lost := []float64{589e3, 601e3, 577e3}
	if r := Decide(lost, []float64{0, 0, 0}, DefaultMinEffect, nil); r.Verdict != Different || r.Look != 0 || math.Abs(r.Pct+100) > 1e-9 {
		t.Errorf("3 runs, -100%%: %+v; want DIFFERENT", r)
	}
	if r := Decide([]float64{0, 0, 0}, []float64{0, 0, 0}, DefaultMinEffect, nil); r.Verdict != Same {
		t.Errorf("3 runs of 0 against 3: %+v; want SAME", r)
	}
	noisy := []float64{100, 104, 97}
	r = Decide(noisy, []float64{101, 99, 105}, DefaultMinEffect, nil)
	if r.Verdict != Unknown || r.NextN != 6 || r.P < 0.5 || !strings.Contains(r.Reason, "SAME needs 10 runs per side") {
		t.Errorf("3 runs inside the noise: %+v; want UNKNOWN asking for 6", r)
	}
	// DecideFast agrees with Decide at the early looks.
	for _, c := range [][2][]float64{{base, worse}, {noisy, {101, 99, 105}}, {lost, {0, 0, 0}}} {
		b, n := sorted(c[0]), sorted(c[1])
		if got, want := DecideFast(b, n, DefaultMinEffect, Default), Decide(b, n, DefaultMinEffect, nil).Verdict; got != want {
			t.Errorf("DecideFast(%v, %v) = %s, Decide says %s", b, n, got, want)
		}
	}
}

// Disjoint ranges at the early looks: 6 runs per side whose ranges do not
// overlap are DIFFERENT by the exact rank test (p = 2/924) when one
// outlier keeps the t test above its level; at 3 runs (p = 0.1), or with
// ranges that touch, they stay UNKNOWN; with a history scale that applies
// the scaled test alone decides.
func TestDisjointRanges(t *testing.T) {
	for _, c := range []struct {
		nb, nn int
		want   float64
	}{{6, 6, 2.0 / 924}, {3, 3, 0.1}, {7, 6, 2.0 / 1716}} {
		b, n := make([]float64, c.nb), make([]float64, c.nn)
		for i := range b {
			b[i] = float64(10 + i)
		}
		for i := range n {
			n[i] = float64(i)
		}
		if got := disjointP(b, n); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("disjointP %d against %d: %g, want %g", c.nb, c.nn, got, c.want)
		}
	}
	base := []float64{100, 100.5, 101, 101.5, 102, 130}
	drop := []float64{95, 95.5, 96, 96.5, 97, 98}
	r := Decide(base, drop, DefaultMinEffect, nil)
	if r.Verdict != Different || r.Look != 1 || math.Abs(r.P-2.0/924) > 1e-12 || math.Abs(r.Level-(1-Default.DisjointAlpha)) > 1e-12 ||
		r.Lo != -35 || r.Hi != -2 || !strings.Contains(r.Reason, "ranges are disjoint") {
		t.Errorf("6 runs, disjoint, an outlier: %+v; want DIFFERENT by the exact rank test, interval [-35, -2]", r)
	}
	if v, _, _ := earlyTest(sorted(base), sorted(drop), Default.EarlyAlpha[1]); v != Unknown {
		t.Errorf("the t test alone: %s; the case needs it UNKNOWN", v)
	}
	touch := []float64{95, 95.5, 96, 96.5, 97, 100}
	three := [2][]float64{{100, 101, 130}, {95, 96, 97}}
	for _, c := range [][2][]float64{{base, touch}, three} {
		if r := Decide(c[0], c[1], DefaultMinEffect, nil); r.Verdict != Unknown {
			t.Errorf("%v against %v: %s (%s); want UNKNOWN", c[0], c[1], r.Verdict, r.Reason)
		}
	}
	tight := []float64{100, 100.1, 100.2, 100.3, 100.4, 100.5}
	up := []float64{100.6, 100.7, 100.8, 100.9, 101, 101.1}
	s := history(0.01)
	if r := DecideWith(tight, up, DefaultMinEffect, nil, s); r.Verdict != Unknown || r.Scale == "" {
		t.Errorf("with a 1%% history scale, +0.6%%: %s (%s); want UNKNOWN by the scaled test", r.Verdict, r.Reason)
	}
	for _, c := range [][2][]float64{{base, drop}, {base, touch}, three} {
		b, n := sorted(c[0]), sorted(c[1])
		if got, want := DecideFast(b, n, DefaultMinEffect, Default), Decide(b, n, DefaultMinEffect, nil).Verdict; got != want {
			t.Errorf("DecideFast(%v, %v) = %s, Decide says %s", b, n, got, want)
		}
	}
	if got, want := DecideFastWith(tight, up, DefaultMinEffect, Default, s), DecideWith(tight, up, DefaultMinEffect, nil, s).Verdict; got != want {
		t.Errorf("DecideFastWith = %s, DecideWith says %s", got, want)
	}
}
