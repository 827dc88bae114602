package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/report"
)

// Until is when UntilDecided stops: every gated metric of every kernel
// against the first decided (SAME or DIFFERENT), or a budget spent.
type Until struct {
	// Gates are the gated metrics, as compare's --fail-on (nil:
	// compare's default gates).
	Gates []report.Gate
	// MinEffect is the smallest change that matters.
	MinEffect report.MinEffect
	// MaxReps is the budget of repetitions per cell, between the plan's
	// first decisive look and its last.
	MaxReps int
	// MaxTime is the budget of wall time: no round starts after it (0 =
	// none).
	MaxTime time.Duration
	// Noise is the noise of each cell's metrics from past runs (run
	// --noise-from; report.CompareOptions.Noise), or nil.
	Noise func(cell, metric string) *verdict.Scale
}

// errUntilDecidedFlags is --until-decided's misuse.
var errUntilDecidedFlags = errors.New("--until-decided runs the whole scenario in rounds: it cannot be combined with --shard or --inside-lab")

func (u Until) check(o Options) error {
	switch {
	case o.Shard != "" || o.InsideLab != "":
		return fault.Input("run: %v", errUntilDecidedFlags)
	case o.Dir == "":
		return fault.Input("run: --until-decided needs -o DIR (the run directory it grows round by round)")
	case u.MaxReps > verdict.Default.MaxN():
		return fault.Input("run: --max-repetitions %d: want at most %d, the plan's last look (past it a verdict stays UNKNOWN)", u.MaxReps, verdict.Default.MaxN())
	case u.MaxReps < verdict.Default.FirstN():
		return fault.Input("run: --max-repetitions %d: want at least %d, the first look that can decide DIFFERENT", u.MaxReps, verdict.Default.FirstN())
	}
	// One kernel has nothing to compare: say so before the first round
	// measures (report.Decide would, after it). A scenario that does not
	// load is Run's to report.
	if s, err := o.Scenario.Load(); err == nil && len(s.Kernels) < 2 {
		return fault.Input("run: --until-decided compares the kernels of one run, and %s has %d (%s); give it two (--kernel base=... --kernel new=...)",
			s.Name, len(s.Kernels), strings.Join(KernelLabels(s), ", "))
	}
	return nil
}

// UntilDecided runs the scenario of o in interleaved rounds (Run, with
// Repetitions and Resume), each taking every cell to the plan's next
// look, until u says stop. It returns nil when every gated metric is
// decided, a *report.UndecidedError naming the UNKNOWN ones when a budget
// ran out, or the error of a round. o.Repetitions is the rounds'; with
// o.DryRun, it prints the dry run of the first round.
func UntilDecided(ctx context.Context, o Options, u Until) (Result, error) {
	o.setDefaults()
	if err := u.check(o); err != nil {
		return Result{}, err
	}
	first := verdict.Default.FirstN()
	if o.DryRun {
		fmt.Fprintf(o.Stdout, "until-decided: the first round, %d repetitions per cell; later rounds go on to the plan's next looks (%s) until every gated metric is decided or --max-repetitions %d\n",
			first, looksAfter(first, u.MaxReps), u.MaxReps)
		o.Repetitions = first
		return Run(ctx, o)
	}
	var res Result
	a := &adaptive{
		round: func(ctx context.Context, reps int, resume bool) error {
			r := o
			r.Repetitions, r.Resume = reps, resume
			var err error
			res, err = Run(ctx, r)
			return err
		},
		load:  func() (*results.Set, error) { return results.Load(o.Dir) },
		gates: u.Gates, min: u.MinEffect, noise: u.Noise, maxReps: u.MaxReps, maxTime: u.MaxTime, now: time.Now,
		resume: o.Resume, firstReps: first,
	}
	err := a.run(ctx, o.Stdout)
	return res, err
}

// adaptive is the loop of UntilDecided.
type adaptive struct {
	// round runs (or resumes) the scenario with reps repetitions per cell.
	round func(ctx context.Context, reps int, resume bool) error
	// load reads the run directory.
	load      func() (*results.Set, error)
	gates     []report.Gate
	min       report.MinEffect
	noise     func(cell, metric string) *verdict.Scale
	maxReps   int           // budget of repetitions per cell
	maxTime   time.Duration // budget of wall time (0: none)
	now       func() time.Time
	resume    bool // the first round continues an existing run
	firstReps int  // the scenario's own repetitions
}

// run loops and returns nil when every gated metric is decided, an
// *report.UndecidedError naming the UNKNOWN ones when a budget ran out,
// or the error of a round.
func (a *adaptive) run(ctx context.Context, out io.Writer) error {
	start := a.now()
	reps, resume := a.firstReps, a.resume
	if resume {
		// Continue at the look the run directory is at, not from scratch.
		if set, err := a.load(); err == nil {
			if p, err := report.Decide(set, a.gates, a.min, a.noise); err == nil && p.NextN > reps {
				reps = p.NextN
			}
		}
	}
	for {
		reps = min(reps, a.maxReps)
		if err := a.round(ctx, reps, resume); err != nil {
			return err
		}
		resume = true
		set, err := a.load()
		if err != nil {
			return err
		}
		p, err := report.Decide(set, a.gates, a.min, a.noise)
		if err != nil {
			return err
		}
		und := p.Undecided()
		fmt.Fprintf(out, "until-decided: %d repetitions: %d of %d gated comparisons decided\n", reps, len(p.Decisions)-len(und), len(p.Decisions))
		if len(und) == 0 {
			writeDecisions(out, p)
			return nil
		}
		if why := a.stopWhy(p, reps, start); why != "" {
			var names []string
			for _, d := range und {
				names = append(names, d.Gate.Metric+" in "+d.Cell)
			}
			fmt.Fprintf(out, "until-decided: stopped at %s; UNKNOWN: %s\n", why, strings.Join(names, ", "))
			writeDecisions(out, p)
			return &report.UndecidedError{Undecided: und}
		}
		reps = max(p.NextN, reps+1)
	}
}

// stopWhy is the budget that ends the loop after a round of reps ("" =
// go on).
func (a *adaptive) stopWhy(p *report.Progress, reps int, start time.Time) string {
	switch {
	case p.NextN == 0:
		return "the plan's last look"
	case reps >= a.maxReps:
		return fmt.Sprintf("the budget of %d repetitions", a.maxReps)
	case a.maxTime > 0 && a.now().Sub(start) >= a.maxTime:
		return fmt.Sprintf("the time budget of %s", a.maxTime)
	}
	return ""
}

// writeDecisions prints the last round's gate lines, as compare's.
func writeDecisions(out io.Writer, p *report.Progress) {
	for _, d := range p.Decisions {
		fmt.Fprintf(out, "  %s\n", d.String())
	}
}

// looksAfter lists the rounds after first: the plan's looks up to max,
// then max itself (the last round stops at the budget).
func looksAfter(first, max int) string {
	var out []string
	last := first
	for _, n := range verdict.Default.Looks {
		if n > first && n <= max {
			out, last = append(out, fmt.Sprint(n)), n
		}
	}
	if max > last {
		out = append(out, fmt.Sprint(max))
	}
	return strings.Join(out, ", ")
}
