package session

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/report"
)

// fakeRounds is a run directory grown by rounds without a VM: kernel
// "base" and kernel "new" (tx_pps shifted by shift), normal noise with
// standard deviation 10 around 1000.
type fakeRounds struct {
	set    results.Set
	shift  float64
	rng    *rand.Rand
	rounds []int
}

func (f *fakeRounds) round(_ context.Context, reps int, resume bool) error {
	if !resume && len(f.set.Samples) > 0 {
		return errors.New("a round without --resume would start over")
	}
	f.rounds = append(f.rounds, reps)
	have := len(f.set.Samples) / 2
	for r := have; r < reps; r++ { // interleaved: base, new, new, base
		for _, k := range []string{"base", "new"} {
			v := 1000 + 10*f.rng.NormFloat64()
			if k == "new" {
				v += f.shift
			}
			f.set.Samples = append(f.set.Samples, results.Sample{Cell: "tap/pktgen-t1", Kernel: k, Rep: r,
				Axes: map[string]string{"backend": "tap"}, Metrics: map[metric.Key]float64{"tx_pps": v}})
		}
	}
	return nil
}

func (f *fakeRounds) load() (*results.Set, error) {
	cp := f.set
	cp.Samples = slices.Clone(f.set.Samples)
	return &cp, nil
}

func newAdaptive(f *fakeRounds, maxReps int) *adaptive {
	return &adaptive{round: f.round, load: f.load, min: report.DefaultMinEffect, maxReps: maxReps,
		now: time.Now, firstReps: verdict.Default.FirstN()}
}

func TestUntilDecidedStopsWhenDecided(t *testing.T) {
	// A drop of 5 standard deviations: DIFFERENT at the first look, an
	// early look at 3 runs.
	f := &fakeRounds{shift: -50, rng: rand.New(rand.NewPCG(1, 2))}
	var out strings.Builder
	if err := newAdaptive(f, 100).run(t.Context(), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	if !slices.Equal(f.rounds, []int{3}) || !strings.Contains(out.String(), "1 of 1 gated comparisons decided") {
		t.Errorf("rounds %v, output %q; want one round of 3", f.rounds, out.String())
	}
	// The gate lines say what was decided.
	if !strings.Contains(out.String(), "new vs base: tap/pktgen-t1") || !strings.Contains(out.String(), "n=3: DIFFERENT: FAIL") {
		t.Errorf("no gate line with the verdict:\n%s", out.String())
	}
}

func TestUntilDecidedBudget(t *testing.T) {
	// No change: SAME takes more runs than a budget of 18 allows.
	f := &fakeRounds{shift: 0, rng: rand.New(rand.NewPCG(3, 4))}
	var out strings.Builder
	err := newAdaptive(f, 18).run(t.Context(), &out)
	var ue *report.UndecidedError
	if !errors.As(err, &ue) || !errors.Is(err, fault.ErrUndecided) {
		t.Fatalf("err %v, want UNKNOWN (fault.ErrUndecided)", err)
	}
	if !slices.Equal(f.rounds, []int{3, 6, 10, 13, 16, 18}) || !strings.Contains(out.String(), "stopped at the budget of 18 repetitions; UNKNOWN: tx_pps in new vs base: tap/pktgen-t1") {
		t.Errorf("rounds %v, output:\n%s", f.rounds, out.String())
	}
	// Resumed with a larger budget, it goes on from 18, not from scratch.
	f.rounds = nil
	a := newAdaptive(f, 100)
	a.resume = true
	if err := a.run(t.Context(), io.Discard); err != nil && !errors.As(err, &ue) {
		t.Fatal(err)
	}
	if len(f.rounds) == 0 || f.rounds[0] != 20 {
		t.Errorf("resumed rounds %v, want the first at the next look, 20", f.rounds)
	}
}

func TestUntilDecidedNeedsTwoKernels(t *testing.T) {
	set := &results.Set{Samples: []results.Sample{{Cell: "c", Kernel: "only", Metrics: map[metric.Key]float64{"tx_pps": 1}}}}
	if _, err := report.Decide(set, nil, report.DefaultMinEffect, nil); !errors.Is(err, fault.ErrInput) {
		t.Errorf("one kernel: %v, want bad input", err)
	}
}

// With the noise of past runs (a history scale of 1% on 40 degrees of
// freedom, the fake rounds' own), a drop of 2.5 standard deviations is
// decided by the early look at 6 runs; the runs alone need a rank look.
func TestUntilDecidedNoiseFrom(t *testing.T) {
	scale := verdict.PoolScale(slices.Repeat([]verdict.Spread{{N: 3, Var: 0.01 * 0.01}}, 20), "history.db")
	for _, tc := range []struct {
		noise func(cell, metric string) *verdict.Scale
		last  func(int) bool
	}{
		{func(string, string) *verdict.Scale { return scale }, func(n int) bool { return n <= 6 }},
		{nil, func(n int) bool { return n >= 10 }},
	} {
		f := &fakeRounds{shift: -25, rng: rand.New(rand.NewPCG(13, 14))}
		a := newAdaptive(f, 100)
		a.noise = tc.noise
		var out strings.Builder
		if err := a.run(t.Context(), &out); err != nil {
			t.Fatalf("run: %v", err)
		}
		if last := f.rounds[len(f.rounds)-1]; !tc.last(last) || !strings.Contains(out.String(), "DIFFERENT: FAIL") {
			t.Errorf("history %v: rounds %v:\n%s", tc.noise != nil, f.rounds, out.String())
		}
	}
}
