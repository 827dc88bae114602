package verdict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"sync"
)

// A noise draws one standardized value: median 0, interquartile range 1.
type noise struct {
	name string
	draw func(r *rand.Rand) float64
}

var normalNoise = noise{"normal", func(r *rand.Rand) float64 { return r.NormFloat64() / 1.3489795 }}

// heavyNoise is Student's t with 3 degrees of freedom, scaled to IQR 1
// (the quartiles of t3 are ±0.7649).
var heavyNoise = noise{"heavy-t3", func(r *rand.Rand) float64 {
	z := r.NormFloat64()
	chi2 := 0.0
	for range 3 {
		x := r.NormFloat64()
		chi2 += x * x
	}
	return z / math.Sqrt(chi2/3) / 1.5297789
}}

// resampled draws from a pool of standardized residuals.
func resampled(name string, pool []float64) noise {
	return noise{name, func(r *rand.Rand) float64 { return pool[r.IntN(len(pool))] }}
}

// A procedure decides a comparison, asking for more runs by calling grow.
type procedure struct {
	name string
	// run returns the verdict and the runs per side it used; more(n)
	// extends both sides to n runs and returns them sorted; hist draws a
	// history of past runs of the same noise and pools its Scale.
	run func(more func(k int) (b, n []float64), hist func(runs, reps int) *Scale) (Verdict, int)
}

func ours(plan *Plan, min MinEffect) procedure {
	return procedure{"this plan", func(more func(int) ([]float64, []float64), _ func(int, int) *Scale) (Verdict, int) {
		return sequential(plan, min, more, nil)
	}}
}

// withHistory is the plan with the scale of a history of runs past runs
// of reps repetitions each, drawn afresh for every comparison and pooled
// as compare --noise-from pools an index's (the estimate, not the true
// scale).
func withHistory(plan *Plan, min MinEffect, runs, reps int) procedure {
	name := fmt.Sprintf("this plan, history %dx%d", runs, reps)
	return procedure{name, func(more func(int) ([]float64, []float64), hist func(int, int) *Scale) (Verdict, int) {
		return sequential(plan, min, more, hist(runs, reps))
	}}
}

func sequential(plan *Plan, min MinEffect, more func(int) ([]float64, []float64), s *Scale) (Verdict, int) {
	for _, l := range plan.Looks {
		b, n := more(l)
		if v := DecideFastWith(b, n, min, plan, s); v != Unknown {
			return v, l
		}
	}
	return Unknown, plan.MaxN()
}

// trial draws base and new (new shifted by shift IQRs) as the procedure
// asks and returns its verdict and runs per side.
func trial(p procedure, nz noise, shift float64, r *rand.Rand) (Verdict, int) {
	var b, n []float64
	more := func(k int) ([]float64, []float64) {
		for len(b) < k {
			b = append(b, 100+nz.draw(r))
			n = append(n, 100+shift+nz.draw(r))
		}
		sb, sn := slices.Clone(b), slices.Clone(n)
		sort.Float64s(sb)
		sort.Float64s(sn)
		return sb, sn
	}
	hist := func(runs, reps int) *Scale {
		spreads := make([]Spread, runs)
		v := make([]float64, reps)
		for i := range spreads {
			for j := range v {
				v[j] = 100 + nz.draw(r)
			}
			spreads[i] = LogSpread(v)
		}
		return PoolScale(spreads, "simulated history")
	}
	return p.run(more, hist)
}

type simStats struct {
	same, diff, unknown int
	reps                int
	trials              int
	// diffAt counts the DIFFERENT verdicts by the runs per side they took.
	diffAt map[int]int
}

// diffBy is the share of trials called DIFFERENT with at most n runs per
// side.
func (s simStats) diffBy(n int) float64 {
	k := 0
	for reps, c := range s.diffAt {
		if reps <= n {
			k += c
		}
	}
	return float64(k) / float64(s.trials)
}

func (s simStats) rate(v Verdict) float64 {
	switch v {
	case Same:
		return float64(s.same) / float64(s.trials)
	case Different:
		return float64(s.diff) / float64(s.trials)
	}
	return float64(s.unknown) / float64(s.trials)
}

func (s simStats) meanReps() float64 { return float64(s.reps) / float64(s.trials) }

func simulate(p procedure, nz noise, shift float64, trials int, seed uint64) simStats {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	s := simStats{diffAt: map[int]int{}}
	for range trials {
		v, reps := trial(p, nz, shift, r)
		s.trials++
		s.reps += reps
		switch v {
		case Same:
			s.same++
		case Different:
			s.diff++
			s.diffAt[reps]++
		default:
			s.unknown++
		}
	}
	return s
}

// realNoise is the pool of standardized residuals ((value - median) / IQR
// of its metric) of the result metrics in testdata/real/noise-tcg: 30 runs
// each of iperf3 and trafgen into a TCG guest (see testdata/README.md).
var realNoise = sync.OnceValue(func() noise {
	f, err := os.ReadFile("testdata/real/noise-tcg/results.jsonl")
	if err != nil {
		panic(err) // the file is part of the package
	}
	byMetric := map[string][]float64{}
	for _, line := range bytes.Split(bytes.TrimSpace(f), []byte("\n")) {
		var s struct {
			Cell    string             `json:"cell"`
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			panic(err)
		}
		for _, k := range []string{"throughput_bps", "tx_pps", "lost_pps"} {
			if v, ok := s.Metrics[k]; ok {
				byMetric[s.Cell+" "+k] = append(byMetric[s.Cell+" "+k], v)
			}
		}
	}
	var pool []float64
	for _, k := range slices.Sorted(maps.Keys(byMetric)) {
		v := sorted(byMetric[k])
		med, iqr := median(v), IQR(v)
		if iqr == 0 {
			continue // iperf3's lost_pps: all 0
		}
		for _, x := range v {
			pool = append(pool, (x-med)/iqr)
		}
	}
	return resampled("real-tcg", pool)
})
