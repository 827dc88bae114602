package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/report"
)

// adaptive is run --until-decided: rounds of the whole scenario, each
// taking every cell to the plan's next look, until every gated metric of
// every kernel against the first is SAME or DIFFERENT, or a budget runs
// out.
type adaptive struct {
	// round runs (or resumes) the scenario with reps repetitions per cell.
	round func(ctx context.Context, reps int, resume bool) error
	// load reads the run directory.
	load      func() (*results.Set, error)
	gates     []report.Gate
	min       verdict.MinEffect
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
			if p, err := report.Decide(set, a.gates, a.min); err == nil && p.NextN > reps {
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
		p, err := report.Decide(set, a.gates, a.min)
		if err != nil {
			return err
		}
		und := p.Undecided()
		fmt.Fprintf(out, "until-decided: %d repetitions: %d of %d gated comparisons decided\n", reps, len(p.Decisions)-len(und), len(p.Decisions))
		if len(und) == 0 {
			writeDecisions(out, p)
			return nil
		}
		var why string
		switch {
		case p.NextN == 0:
			why = "the plan's last look"
		case reps >= a.maxReps:
			why = fmt.Sprintf("the budget of %d repetitions", a.maxReps)
		case a.maxTime > 0 && a.now().Sub(start) >= a.maxTime:
			why = fmt.Sprintf("the time budget of %s", a.maxTime)
		}
		if why != "" {
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

// writeDecisions prints the last round's gate lines, as compare's.
func writeDecisions(out io.Writer, p *report.Progress) {
	for _, d := range p.Decisions {
		fmt.Fprintf(out, "  %s\n", d.String())
	}
}

// errUntilDecidedFlags is --until-decided's misuse.
var errUntilDecidedFlags = errors.New("--until-decided runs the whole scenario in rounds: it cannot be combined with --shard or --inside-lab")

// untilFlags are run's flags of --until-decided.
type untilFlags struct {
	on        *bool
	maxReps   *int
	maxTime   *time.Duration
	minEffect *string
	failOn    *string
}

func addUntilFlags(fs *flag.FlagSet) untilFlags {
	return untilFlags{
		on:        fs.Bool("until-decided", false, "repeat the cells in interleaved rounds until every gated metric of every kernel against the first is SAME or DIFFERENT, or a budget runs out (docs/compare.md); exit 3 when some stay UNKNOWN"),
		maxReps:   fs.Int("max-repetitions", verdict.Default.MaxN(), "with --until-decided: budget of repetitions per cell"),
		maxTime:   fs.Duration("time-budget", 0, "with --until-decided: budget of wall time; no new round starts after it (default: none)"),
		minEffect: fs.String("min-effect", verdict.DefaultMinEffect.String(), "with --until-decided: smallest change that matters (as compare's)"),
		failOn:    fs.String("fail-on", "", "with --until-decided: the gated metrics, as compare's --fail-on (default: compare's default gates)"),
	}
}

// runUntilDecided runs the scenario of args in rounds (run itself, with
// --repetitions and --resume) until decided. With dry, it prints the dry
// run of the first round.
func runUntilDecided(ctx context.Context, cl *cli, args []string, f untilFlags, dir string, excluded, resume, dry bool, stdout, stderr io.Writer) error {
	if excluded {
		return usageErrorf("run: %v", errUntilDecidedFlags)
	}
	if dir == "" {
		return usageErrorf("run: --until-decided needs -o DIR (the run directory it grows round by round)")
	}
	if *f.maxReps > verdict.Default.MaxN() {
		return usageErrorf("run: --max-repetitions %d: want at most %d, the plan's last look (past it a verdict stays UNKNOWN)", *f.maxReps, verdict.Default.MaxN())
	}
	if *f.maxReps < verdict.Default.FirstN() {
		return usageErrorf("run: --max-repetitions %d: want at least %d, the first look that can decide DIFFERENT", *f.maxReps, verdict.Default.FirstN())
	}
	me, err := verdict.ParseMinEffect(*f.minEffect)
	if err != nil {
		return usageErrorf("run: --min-effect: %v", err)
	}
	var gates []report.Gate
	if strings.TrimSpace(*f.failOn) != "" {
		if gates, err = report.ParseGates(*f.failOn); err != nil {
			return err
		}
	}
	base := dropFlags(args, []string{"until-decided", "resume", "dry-run"}, []string{"max-repetitions", "time-budget", "min-effect", "fail-on", "repetitions"})
	if dry {
		first := verdict.Default.FirstN()
		fmt.Fprintf(stdout, "until-decided: the first round, %d repetitions per cell; later rounds go on to the plan's next looks (%s) until every gated metric is decided or --max-repetitions %d\n",
			first, looksAfter(first, *f.maxReps), *f.maxReps)
		return cmdRun(ctx, cl, append(slices.Clone(base), "--repetitions", fmt.Sprint(first), "--dry-run"), stdout, stderr)
	}
	a := &adaptive{
		round: func(ctx context.Context, reps int, resume bool) error {
			rargs := append(slices.Clone(base), "--repetitions", fmt.Sprint(reps))
			if resume {
				rargs = append(rargs, "--resume")
			}
			return cmdRun(ctx, cl, rargs, stdout, stderr)
		},
		load:  func() (*results.Set, error) { return results.Load(dir) },
		gates: gates, min: me, maxReps: *f.maxReps, maxTime: *f.maxTime, now: time.Now,
		resume: resume, firstReps: verdict.Default.FirstN(),
	}
	return a.run(ctx, stdout)
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

// dropFlags removes the boolean flags bools and the flags with a value
// valued ("-x v", "--x v", "--x=v") from args.
func dropFlags(args, bools, valued []string) []string {
	name := func(a string) (string, bool) {
		if !strings.HasPrefix(a, "-") {
			return "", false
		}
		n := strings.TrimLeft(a, "-")
		n, _, eq := strings.Cut(n, "=")
		return n, eq
	}
	var out []string
	for i := 0; i < len(args); i++ {
		n, eq := name(args[i])
		switch {
		case slices.Contains(bools, n):
		case slices.Contains(valued, n):
			if !eq {
				i++ // its value
			}
		default:
			out = append(out, args[i])
		}
	}
	return out
}
