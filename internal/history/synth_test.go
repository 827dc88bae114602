package history

import (
	"bufio"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// A synthetic series with its true change points.
type synth struct {
	family string
	xs     []float64
	truth  []int
}

// noise draws one noise value of unit scale (standard deviation 1 for
// Gaussian noise, the robust sigma for the others).
type noise func(*rand.Rand) float64

func gaussian(r *rand.Rand) float64 { return r.NormFloat64() }

// studentT2 is Student's t with 2 degrees of freedom (infinite variance)
// scaled so its interquartile range is the standard normal's.
func studentT2(r *rand.Rand) float64 {
	z := r.NormFloat64()
	a, b := r.NormFloat64(), r.NormFloat64()
	c := a*a + b*b
	return z / math.Sqrt(c/2) * (1.349 / 1.633)
}

// realNoise resamples the relative deviations of real vnetbench
// measurements (testdata/README.md), scaled to a standard deviation of 1.
func realNoise(t testing.TB) noise {
	devs := realDeviations(t)
	s := 0.0
	for _, d := range devs {
		s += d * d
	}
	s = math.Sqrt(s / float64(len(devs)))
	return func(r *rand.Rand) float64 { return devs[r.IntN(len(devs))] / s }
}

func realDeviations(t testing.TB) []float64 {
	var devs []float64
	f, err := os.Open("testdata/real/quickstart-tcg.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byKey := map[string][]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Cell    string             `json:"cell"`
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		for k, v := range s.Metrics {
			byKey[s.Cell+" "+k] = append(byKey[s.Cell+" "+k], v)
		}
	}
	// In key order: a map's order changes from run to run, and with it
	// every series drawn from this noise.
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if vs := byKey[k]; len(vs) == 2 && vs[0]+vs[1] > 0 {
			m := (vs[0] + vs[1]) / 2
			devs = append(devs, vs[0]/m-1, vs[1]/m-1)
		}
	}
	data, err := os.ReadFile("testdata/real/iperf3-host-to-guest-tcg.json")
	if err != nil {
		t.Fatal(err)
	}
	var ip struct {
		Intervals []struct {
			Sum struct {
				BPS float64 `json:"bits_per_second"`
			} `json:"sum"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(data, &ip); err != nil {
		t.Fatal(err)
	}
	var bps []float64
	for _, iv := range ip.Intervals {
		bps = append(bps, iv.Sum.BPS)
	}
	m := median(bps)
	for _, v := range bps {
		devs = append(devs, v/m-1)
	}
	if len(devs) < 20 {
		t.Fatalf("only %d real deviations in testdata/real", len(devs))
	}
	return devs
}

// stepSeries is a series of n points at level 100 with noise, and k steps
// of the given sizes (in noise units, random sign) at least gap apart.
func stepSeries(r *rand.Rand, n int, sizes []float64, gap int, nz noise) ([]float64, []int) {
	var cps []int
	for range 100 {
		cps = cps[:0]
		ok := true
		for range sizes {
			c := gap + r.IntN(n-2*gap)
			for _, o := range cps {
				if abs(o-c) < gap {
					ok = false
				}
			}
			cps = append(cps, c)
		}
		if ok {
			break
		}
	}
	sortInts(cps)
	xs := make([]float64, n)
	level, j := 100.0, 0
	for i := range xs {
		for j < len(cps) && cps[j] == i {
			level += sizes[j] * sign(r)
			j++
		}
		xs[i] = level + nz(r)
	}
	return xs, cps
}

func sign(r *rand.Rand) float64 {
	if r.IntN(2) == 0 {
		return -1
	}
	return 1
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

var stepSizes = []float64{0.5, 1, 2, 3, 5}

func randomSizes(r *rand.Rand, k int) []float64 {
	out := make([]float64, k)
	for i := range out {
		out[i] = stepSizes[r.IntN(len(stepSizes))]
	}
	return out
}

// suite is the evaluation set: reps series of each family: steps in
// Gaussian, heavy-tailed, real and autocorrelated (AR(1), φ 0.3-0.9)
// noise, outliers, trends and seasonality.
func suite(t testing.TB, seed uint64, reps int) []synth {
	r := rand.New(rand.NewPCG(seed, 25))
	rn := realNoise(t)
	var out []synth
	add := func(family string, xs []float64, truth []int) {
		out = append(out, synth{family, xs, truth})
	}
	for range reps {
		n := 120 + r.IntN(130)
		k := 1 + r.IntN(3)
		xs, cps := stepSeries(r, n, randomSizes(r, k), 25, gaussian)
		add("steps", xs, cps)
		xs, cps = stepSeries(r, n, randomSizes(r, k), 25, studentT2)
		add("heavy-tailed", xs, cps)
		xs, cps = stepSeries(r, n, randomSizes(r, k), 25, rn)
		add("real-noise", xs, cps)
		xs, cps = stepSeries(r, n, randomSizes(r, r.IntN(2)), 25, gaussian)
		for range 3 {
			xs[r.IntN(n)] += 10 * sign(r)
		}
		add("outliers", xs, cps)
		xs, cps = stepSeries(r, n, randomSizes(r, r.IntN(2)), 25, gaussian)
		slope := (2 + 8*r.Float64()) / float64(n) * sign(r)
		for i := range xs {
			xs[i] += slope * float64(i)
		}
		add("trend", xs, cps)
		xs, cps = stepSeries(r, n, randomSizes(r, r.IntN(2)), 25, gaussian)
		period := []float64{7, 12, 24, 52}[r.IntN(4)]
		amp := 1 + r.Float64()
		for i := range xs {
			xs[i] += amp * math.Sin(2*math.Pi*float64(i)/period)
		}
		add("seasonal", xs, cps)
		xs, cps = stepSeries(r, n, randomSizes(r, r.IntN(3)), 25, func(*rand.Rand) float64 { return 0 })
		addAR(r, xs, 0.3+0.6*r.Float64())
		add("autocorrelated", xs, cps)
	}
	return out
}

// addAR adds AR(1) noise of coefficient phi and standard deviation 1.
func addAR(r *rand.Rand, xs []float64, phi float64) {
	e := r.NormFloat64()
	for i := range xs {
		e = phi*e + math.Sqrt(1-phi*phi)*r.NormFloat64()
		xs[i] += e
	}
}

// TestRealNoiseReproducible: the same seed draws the same real noise, so
// the evaluation's numbers do not change from run to run.
func TestRealNoiseReproducible(t *testing.T) {
	a, b := realNoise(t), realNoise(t)
	ra, rb := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		if x, y := a(ra), b(rb); x != y {
			t.Fatalf("draw %d: %v, then %v from the same seed", i, x, y)
		}
	}
}
