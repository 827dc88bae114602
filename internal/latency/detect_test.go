package latency

import (
	"compress/gzip"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// realLoads reads the loaded-phase RTT series (send order) of each cell's
// real runs under testdata/quickstart: cell -> one series per run.
func realLoads(tb testing.TB) map[string][][]float64 {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "quickstart", "*", "*.csv.gz"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no real probe captures under testdata/quickstart: %v", err)
	}
	out := map[string][][]float64{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			tb.Fatal(err)
		}
		recs, err := ReadCSV(zr)
		fh.Close()
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		var xs []float64
		for _, r := range recs {
			if rtt, ok := r.RTT(); ok && r.Phase == PhaseLoad {
				xs = append(xs, rtt)
			}
		}
		cell := filepath.Base(f)
		out[cell] = append(out[cell], xs)
	}
	return out
}

// synthRun draws one n-probe run of a cell: one of its real runs at
// random (run-to-run variation), then blocks of consecutive probes from it
// (moving-block bootstrap: bursts stay bursts), scaled by f.
func synthRun(rng *rand.Rand, runs [][]float64, n, block int, f float64) []float64 {
	src := runs[rng.IntN(len(runs))]
	out := make([]float64, 0, n)
	for len(out) < n {
		i := rng.IntN(len(src) - block)
		for _, x := range src[i : i+block] {
			out = append(out, x*f)
		}
	}
	return out[:n]
}

// pooledApart is the rule CompareRuns replaced: pool every run's probes
// and call a change when the two pooled q-percentiles' intervals do not
// overlap.
func pooledApart(a, b [][]float64, q float64) bool {
	pool := func(runs [][]float64) []float64 {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, r...)
		}
		slices.Sort(xs)
		return xs
	}
	_, ia := Percentile(pool(a), q)
	_, ib := Percentile(pool(b), q)
	return ib.Lo > ia.Hi || ib.Hi < ia.Lo
}

// noise is a family of synthetic runs built from real captures.
type noise struct {
	name string
	// runs returns the source runs a synthetic run of cell draws from.
	runs func(all [][]float64) [][]float64
}

var noises = []noise{
	{"TCG runs", func(all [][]float64) [][]float64 { return all }},
	{"one run", func(all [][]float64) [][]float64 { return all[:1] }},
}

// detectRates runs trials comparisons of nRuns synthetic runs of perRun
// probes a side for every cell, B scaled by f, and returns the fractions
// the run-level test and the pooled rule called a change.
func detectRates(loads map[string][][]float64, nz noise, f float64, trials, nRuns, perRun int, seed uint64, withPooled bool) (runLevel, pooled float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var hitR, hitP, n int
	for _, cell := range slices.Sorted(maps.Keys(loads)) {
		src := nz.runs(loads[cell])
		for range trials {
			var a, b [][]float64
			for range nRuns {
				a = append(a, synthRun(rng, src, perRun, 200, 1))
				b = append(b, synthRun(rng, src, perRun, 200, f))
			}
			if CompareRuns(a, b, 0.99).Different {
				hitR++
			}
			if withPooled && pooledApart(a, b, 0.99) {
				hitP++
			}
			n++
		}
	}
	return float64(hitR) / float64(n), float64(hitP) / float64(n)
}

// TestRunChangeOnRealNoise: on synthetic runs of 30 s (6,000 probes)
// built from real captures, 3 a side, the run-level test calls at most
// 3% of A/A comparisons a change (its level is 1%; the runs' log p99s are
// not normal) with the runs' TCG spread and within one run's noise, and
// finds a 20% longer p99 at least 40% of the time within one run's noise
// (a quiet host). The full table, with the pooled rule beside it, is
// BenchmarkDetectP99Change. Seeded: the same numbers every run.
func TestRunChangeOnRealNoise(t *testing.T) {
	loads := realLoads(t)
	const trials = 50 // per cell: 200 comparisons
	for _, nz := range noises {
		aa, _ := detectRates(loads, nz, 1, trials, 3, 6000, 1, false)
		t.Logf("%s: A/A %.1f%% called a change", nz.name, aa*100)
		if aa > 0.03 {
			t.Errorf("%s: the run-level test called %.1f%% of A/A comparisons a change, want at most 3%%", nz.name, aa*100)
		}
	}
	hit, _ := detectRates(loads, noises[1], 1.2, trials, 3, 6000, 2, false)
	t.Logf("one run, p99 +20%%: %.1f%% found", hit*100)
	if hit < 0.4 {
		t.Errorf("the run-level test found a 20%% longer p99 in %.1f%% of comparisons, want at least 40%%", hit*100)
	}
}

// BenchmarkDetectP99Change is the latency comparison's table for the
// note: the share of comparisons that call a change of p99, for the
// run-level test (CompareRuns) and the pooled rule it replaced, A/A and
// with B's RTTs 20% longer, 3 and 5 runs of 30 s a side, for both noise
// families. Run with -benchtime=1x.
func BenchmarkDetectP99Change(b *testing.B) {
	loads := realLoads(b)
	for _, nz := range noises {
		for _, runs := range []int{3, 5} {
			for _, f := range []float64{1, 1.2} {
				name := fmt.Sprintf("%s/runs=%d/x%.1f", strings.ReplaceAll(nz.name, " ", "_"), runs, f)
				b.Run(name, func(b *testing.B) {
					var r, p float64
					for range b.N {
						r, p = detectRates(loads, nz, f, 250, runs, 6000, 3, true)
					}
					b.ReportMetric(r*100, "%run-level")
					b.ReportMetric(p*100, "%pooled")
				})
			}
		}
	}
}
