package verdict

import (
	"math"
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
	if r := Decide(base[:3], up[:3], DefaultMinEffect, nil); r.Verdict != Unknown || r.NextN != 10 || r.Look != -1 {
		t.Errorf("n=3: %+v; want UNKNOWN asking for 10", r)
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
