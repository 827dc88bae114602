package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// Progress is where an adaptive run stands: the decisions of every kernel
// against the first (the base) with the default gates, and how many runs
// per side the next look of the plan needs: the nearest next look of any
// undecided comparison (0 when every gated metric is decided or no
// undecided one has a look left).
type Progress struct {
	Decisions []Decision
	// N is the fewest runs per side of any undecided comparison.
	N     int
	NextN int
}

// Undecided returns the decisions whose verdict is UNKNOWN.
func (p *Progress) Undecided() []Decision {
	var out []Decision
	for _, d := range p.Decisions {
		if d.Undecided() {
			out = append(out, d)
		}
	}
	return out
}

// Decide compares every kernel of set with its first (a lab run's base
// kernel) under the default gates (or gates) and minimum effect min, the
// early looks with noise's history scales (nil: none; CompareOptions.Noise):
// what run --until-decided checks after each round. A set with one kernel
// has nothing to compare: bad input.
func Decide(set *Runs, gates []Gate, min MinEffect, noise func(cell, metric string) *verdict.Scale) (*Progress, error) {
	ks := set.Kernels()
	if len(ks) < 2 {
		return nil, fault.Input("--until-decided compares kernels within the run, and it has %d (%v); give the scenario two kernels (--kernel base=... --kernel new=...)", len(ks), ks)
	}
	p := &Progress{}
	for _, k := range ks[1:] {
		res, err := CompareRuns(only(set, ks[0]), only(set, k), CompareOptions{Gates: gates, MinEffect: min, Noise: noise})
		if err != nil {
			return nil, err
		}
		for _, d := range res.Decisions {
			d.Cell = fmt.Sprintf("%s vs %s: %s", k, ks[0], d.Cell)
			p.Decisions = append(p.Decisions, d)
			if !d.Undecided() {
				continue
			}
			n := min2(d.Delta.Verdict.NBase, d.Delta.Verdict.NNew)
			if p.N == 0 || n < p.N {
				p.N = n
			}
			if nx := d.Delta.Verdict.NextN; nx > 0 && (p.NextN == 0 || nx < p.NextN) {
				p.NextN = nx
			}
		}
	}
	return p, nil
}

// KernelSides splits a run of two kernels (a lab run's stock and
// patched) into the sides CompareRuns takes: the first kernel is the
// base, the second the new. A kernel whose every run failed is a side
// too, so that its gated metrics are MISSING; a run with one kernel or
// more than two is bad input.
func KernelSides(set *Runs) (base, new *Runs, labels [2]string, err error) {
	ks := set.Kernels()
	for _, s := range set.Failed {
		if !slices.Contains(ks, s.Kernel) {
			ks = append(ks, s.Kernel)
		}
	}
	if len(ks) != 2 {
		noun := "kernels"
		if len(ks) == 1 {
			noun = "kernel"
		}
		return nil, nil, labels, fault.Input("%d %s (%s), not two (the base, then the new)", len(ks), noun, strings.Join(ks, ", "))
	}
	return only(set, ks[0]), only(set, ks[1]), [2]string{ks[0], ks[1]}, nil
}

// only is the samples of set from kernel k, measured and failed (fresh
// copies: CompareRuns rewrites their cells).
func only(set *results.Set, k string) *results.Set {
	out := &results.Set{Env: set.Env, Warnings: slices.Clone(set.Warnings), Sources: set.Sources}
	for _, s := range set.Samples {
		if s.Kernel == k {
			out.Samples = append(out.Samples, s)
		}
	}
	for _, s := range set.Failed {
		if s.Kernel == k {
			out.Failed = append(out.Failed, s)
		}
	}
	return out
}

func min2(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// BisectOutcome judges a bisection candidate from p's decisions: bad when any cell
// tripped the gate, skipped when any is UNKNOWN, else good. The evidence
// (verdict and change) is the decision that judged it: the tripped one,
// else the UNKNOWN one, else one DIFFERENT the other way, else SAME; of
// several, the largest change.
func (p *Progress) BisectOutcome() bisect.Outcome {
	rank := func(d *Decision) int {
		switch {
		case d.Tripped:
			return 3
		case d.Undecided(), d.Verdict == verdict.Missing:
			return 2
		case d.Verdict == verdict.Different:
			return 1
		}
		return 0
	}
	o := bisect.Outcome{Verdict: verdict.Same}
	var ev *Decision
	for i := range p.Decisions {
		d := &p.Decisions[i]
		o.Reps = max(o.Reps, min(d.Delta.Verdict.NBase, d.Delta.Verdict.NNew))
		if ev == nil || rank(d) > rank(ev) || rank(d) == rank(ev) && math.Abs(d.Delta.Pct) > math.Abs(ev.Delta.Pct) {
			ev = d
		}
	}
	if ev == nil {
		return o
	}
	o.Verdict, o.Pct = ev.Verdict, ev.Delta.Pct
	switch rank(ev) {
	case 3:
		o.Bad = true
	case 2:
		o.Skip, o.Why = true, "UNKNOWN within the budget"
		if ev.Verdict == verdict.Missing {
			o.Why = "MISSING: " + ev.Missing
		}
	}
	return o
}
