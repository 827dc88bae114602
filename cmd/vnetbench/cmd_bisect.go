package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/session"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/report"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// bisectOpts are what bisect and bisect-step share: the scenario, the
// kernel tree, the good ref, the metric and the verdict's settings.
type bisectOpts struct {
	scenario, tree, good, metric, out string
	minEffect                         string
	maxReps                           int
	// change is the change to find: "worse" (a regression, the metric's
	// bad direction) or "better" (an improvement: which commit fixed it).
	change   string
	sets     *setFlags
	lockWait time.Duration
}

func addBisectFlags(fsName, synopsis string, stderr io.Writer) (*bisectOpts, *flag.FlagSet) {
	fs := newFlagSet(fsName, synopsis, stderr)
	o := &bisectOpts{}
	pathVar(fs, &o.tree, "tree", "kernel source `DIR` (a git tree); every candidate is built from it with the same config")
	fs.StringVar(&o.good, "good", "", "the good `REF`: the reference every candidate is measured against")
	fs.StringVar(&o.metric, "metric", "", "the `METRIC` that changed (its better direction is the metric's: tx_pps up, lost_pps down)")
	fs.StringVar(&o.out, "o", "", "`DIR` of the run directories, one per candidate, and bisect's state")
	fs.StringVar(&o.minEffect, "min-effect", report.DefaultMinEffect.String(), "smallest change that matters (as compare's)")
	fs.IntVar(&o.maxReps, "max-repetitions", verdict.Default.MaxN(), "budget of repetitions per cell and candidate")
	fs.StringVar(&o.change, "change", "worse", "the change to find (`WHICH`): worse, a regression in the metric's bad direction, or better, an improvement (the commit that brought it)")
	o.sets = addSetFlag(fs)
	fs.DurationVar(&o.lockWait, "lock-wait", 0, "each step's run waits up to `DURATION` for another run on this host to finish (default: fail at once)")
	return o, fs
}

// gate is the metric gated at 0% in the direction of the change to find:
// its bad direction for a regression, its good one for an improvement.
func (o *bisectOpts) gate() (string, error) {
	if o.change != "worse" && o.change != "better" {
		return "", usageErrorf("bisect: --change %q: want worse or better", o.change)
	}
	up := false
	switch results.Describe(metric.Key(o.metric)).Better {
	case metric.HigherIsBetter:
	case metric.LowerIsBetter:
		up = true
	default:
		return "", usageErrorf("bisect: --metric %s has no better direction; name a result metric such as tx_pps or lost_pps", o.metric)
	}
	if o.change == "better" {
		up = !up
	}
	if up {
		return o.metric + ">+0%", nil
	}
	return o.metric + "<+0%", nil
}

// check wants one scenario and every flag a bisection needs, and names
// them all in one line. bad is bisect's --bad, nil for bisect-step, whose
// commit git bisect run checks out.
func (o *bisectOpts) check(args int, bad *string) error {
	if args != 1 || o.tree == "" || o.good == "" || o.metric == "" || o.out == "" || bad != nil && *bad == "" {
		if bad != nil {
			return usageErrorf("bisect: want SCENARIO, --tree DIR, --good REF, --bad REF, --metric M and -o DIR")
		}
		return usageErrorf("bisect: want SCENARIO, --tree DIR, --good REF, --metric M and -o DIR")
	}
	_, err := o.gate()
	return err
}

// checkInputs checks the scenario (with --set), --min-effect,
// --max-repetitions and --tree (a git repository of a kernel tree)
// before anything is listed, built or made: a mistyped scenario name
// made the directory of the first candidate under -o, then printed an
// empty list of candidates and said to resume; a --tree that is no git
// repository read as a --good that is no commit of it.
func (o *bisectOpts) checkInputs(ctx context.Context) error {
	if err := vmimages.CheckCacheDir(); err != nil {
		return err
	}
	if _, err := (session.Spec{Name: o.scenario, Sets: *o.sets}).Load(); err != nil {
		return err
	}
	if _, err := report.ParseMinEffect(o.minEffect); err != nil {
		return usageErrorf("bisect: --min-effect: %v", err)
	}
	// Each step's run checks it too, but only once the first candidate's
	// directory is made and its step has begun.
	if lo, hi := verdict.Default.FirstN(), verdict.Default.MaxN(); o.maxReps < lo || o.maxReps > hi {
		return usageErrorf("bisect: --max-repetitions %d: want %d (the first look that can decide) to %d (the plan's last look)", o.maxReps, lo, hi)
	}
	fi, err := os.Stat(o.tree)
	switch {
	case err != nil:
		return usageErrorf("bisect: --tree %s: %v; give the kernel source tree, a git repository", o.tree, errors.Unwrap(err))
	case !fi.IsDir():
		return usageErrorf("bisect: --tree %s is a file; give the kernel source tree, a git repository", o.tree)
	}
	if _, err := kbuild.Git(ctx, proc.Real{}, o.tree, "rev-parse", "--git-dir"); err != nil {
		return usageErrorf("bisect: --tree %s is not a git repository; bisect lists and checks out its commits (git clone the kernel, or git init and commit the tree)", o.tree)
	}
	// Every build checks this; checked only there, a git tree that is no
	// kernel's printed the estimate, failed the good ref's build and
	// said to resume with the same command.
	if !kbuild.IsKernelTree(o.tree) {
		return usageErrorf("bisect: --tree %s is not a Linux kernel tree (no top-level Makefile with VERSION and PATCHLEVEL, Kconfig and arch/x86); give the top of a kernel source tree", o.tree)
	}
	return nil
}

// judgeOne decides one candidate: cl.judge, or judgeCommit.
func (cl *cli) judgeOne(ctx context.Context, o *bisectOpts, commit string, stdout, stderr io.Writer) (bisect.Outcome, error) {
	// The candidate's run directory, o.out/COMMIT: made here, through
	// safefs, so a link planted at its name is refused, not followed.
	out, err := safefs.MkdirAll(o.out)
	if err != nil {
		return bisect.Outcome{}, fmt.Errorf("bisect: %w", err)
	}
	err = out.MkdirAll(commit)
	out.Close()
	if err != nil {
		return bisect.Outcome{}, fmt.Errorf("bisect: %w", err)
	}
	if cl.judge != nil {
		return cl.judge(ctx, o, commit, stdout, stderr)
	}
	return cl.judgeCommit(ctx, o, commit, stdout, stderr)
}

// judgeCommit runs the scenario with the good ref and the candidate as
// two kernels of one run (built by the kernel-build cache, measured in
// interleaved rounds until decided) and judges the candidate from the
// gated metric. A failed run (a build failure most often) is ErrBuild:
// the commit is skipped.
func (cl *cli) judgeCommit(ctx context.Context, o *bisectOpts, commit string, stdout, stderr io.Writer) (bisect.Outcome, error) {
	g, err := o.gate()
	if err != nil {
		return bisect.Outcome{}, err
	}
	gates, err := report.ParseGates(g)
	if err != nil {
		return bisect.Outcome{}, err
	}
	me, err := report.ParseMinEffect(o.minEffect)
	if err != nil {
		return bisect.Outcome{}, usageErrorf("bisect: --min-effect: %v", err)
	}
	dir := filepath.Join(o.out, commit)
	run := session.Options{
		Scenario: session.Spec{Name: o.scenario, Sets: *o.sets, Kernels: []scenarios.Kernel{
			{Label: "good", Tree: o.tree, Ref: o.good}, {Label: "candidate", Tree: o.tree, Ref: commit}}},
		Dir: dir, LockWait: o.lockWait, MaxTime: session.DefaultMaxTime, Version: version, Stdout: stdout, Stderr: stderr,
	}
	if _, err := os.Stat(filepath.Join(dir, results.ResultsFile)); err == nil {
		run.Resume = true
	}
	cl.machine(&run)
	defer forceOnSecondSignal(ctx, stderr)()
	_, err = session.UntilDecided(ctx, run, session.Until{Gates: gates, MinEffect: me, MaxReps: o.maxReps})
	if err != nil && !errors.As(err, new(*report.UndecidedError)) {
		return bisect.Outcome{}, stepError(err)
	}
	set, lerr := results.Load(dir)
	if lerr != nil {
		return bisect.Outcome{}, fmt.Errorf("%w: %v", bisect.ErrBuild, lerr)
	}
	p, derr := report.Decide(set, gates, me, nil)
	if derr != nil {
		return bisect.Outcome{}, derr
	}
	if len(p.Decisions) == 0 {
		// Judged good on no evidence, every step would be: the bad ref
		// would come out as the culprit.
		return bisect.Outcome{}, usageErrorf("bisect: the runs of %s have no %s in any cell; name a metric the scenario measures (vnetbench report %s shows them)", short(commit), o.metric, dir)
	}
	return p.BisectOutcome(), nil
}

// stepError sorts a step's failed run: the candidate not building, or its
// lab failing (a kernel that does not boot), skips the commit; anything
// else (the good ref not building, a busy host, bad input, an interrupt)
// is no fact about the commit and ends the search, to be resumed.
func stepError(err error) error {
	var be *kbuild.BuildError
	if errors.As(err, &be) && be.Label == "candidate" || candidateLabFailed(err) {
		return fmt.Errorf("%w: %v", bisect.ErrBuild, err)
	}
	return err
}

// candidateLabFailed reports whether err is a lab run in which the
// candidate's kernel failed (no boot, its run inside failing): the good
// ref's failing is no fact about the commit.
func candidateLabFailed(err error) bool {
	var le *lab.Error
	if !errors.As(err, &le) {
		return false
	}
	for _, f := range le.Failed {
		var ve *labvm.Error
		var ie *labvm.InnerError
		if errors.As(f, &ve) && ve.Label == "candidate" || errors.As(f, &ie) && ie.Label == "candidate" {
			return true
		}
	}
	return false
}

// stepExit is bisect-step's exit code for git bisect run: 0 good, 1 bad,
// 125 skip; never 128 or above, which would abort the bisection.
type stepExit struct {
	code int
	msg  string
}

func (e *stepExit) Error() string { return e.msg }

func cmdBisectStep(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	if !cl.stepInline {
		return isolateStep(ctx, args, stdout, stderr)
	}
	return judgeStep(ctx, cl, args, stdout, stderr)
}

// judgeStep is bisect-step's work: anything but a measurement of HEAD
// (help, bad usage, a failed run, a panic) is a skip.
func judgeStep(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &stepExit{125, fmt.Sprintf("skip: bisect-step panicked: %v", p)}
		}
	}()
	o, fs := addBisectFlags("bisect-step", "SCENARIO --tree DIR --good REF --metric M -o DIR  (under: git bisect run vnetbench bisect-step ...)", stderr)
	pos, err := parseFlags(fs, args)
	if errors.Is(err, errHelp) {
		return &stepExit{125, "skip: help shown, nothing measured"}
	}
	if err != nil {
		return &stepExit{125, err.Error()}
	}
	if err := o.check(len(pos), nil); err != nil {
		fs.Usage()
		return &stepExit{125, err.Error()}
	}
	o.scenario = pos[0]
	if err := o.checkInputs(ctx); err != nil {
		return &stepExit{125, err.Error()}
	}
	if o.good, err = verifyCommit(ctx, o.tree, "--good", o.good); err != nil {
		return &stepExit{125, err.Error()}
	}
	head, err := kbuild.Commit(ctx, proc.Real{}, o.tree, "HEAD")
	if err != nil {
		return &stepExit{125, fmt.Sprintf("HEAD of %s: %v", o.tree, err)}
	}
	out, err := cl.judgeOne(ctx, o, head, stdout, stderr)
	return stepResult(out, err)
}

// stepResult maps a judgment to bisect-step's exit.
func stepResult(o bisect.Outcome, err error) error {
	switch {
	case err != nil:
		return &stepExit{125, fmt.Sprintf("skip: %v", err)}
	case o.Skip:
		return &stepExit{125, fmt.Sprintf("skip: %s (%s)", o.Why, o.Verdict)}
	case o.Bad:
		return &stepExit{1, fmt.Sprintf("bad: %s %s after %d runs per side", o.Verdict, fmtPct(o.Pct), o.Reps)}
	}
	return nil
}

func fmtPct(p float64) string { return fmt.Sprintf("%+.2f%%", p) }

// verifyCommit resolves a user's ref to the full hash of a commit of the
// tree (kbuild.Commit, which never lets git read the ref as an option).
func verifyCommit(ctx context.Context, tree, flag, ref string) (string, error) {
	c, err := kbuild.Commit(ctx, proc.Real{}, tree, ref)
	if err != nil || len(c) != 40 && len(c) != 64 {
		return "", usageErrorf("bisect: %s %q is not a commit of %s; give a branch, tag or commit hash of the tree", flag, ref, tree)
	}
	return c, nil
}

// stateFile holds the outcomes of a bisection, for resuming it.
const stateFile = "bisect.json"

func cmdBisect(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	o, fs := addBisectFlags("bisect", "SCENARIO --tree DIR --good REF --bad REF --metric M -o DIR", stderr)
	bad := fs.String("bad", "", "the bad `REF`")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := o.check(len(pos), bad); err != nil {
		fs.Usage()
		return err
	}
	o.scenario = pos[0]
	if err := o.checkInputs(ctx); err != nil {
		return err
	}
	good, err := verifyCommit(ctx, o.tree, "--good", o.good)
	if err != nil {
		return err
	}
	o.good = good
	badc, err := verifyCommit(ctx, o.tree, "--bad", *bad)
	if err != nil {
		return err
	}
	list, err := kbuild.Git(ctx, proc.Real{}, o.tree, "rev-list", "--reverse", "--ancestry-path", "--end-of-options", good+".."+badc)
	if err != nil || strings.TrimSpace(list) == "" {
		return usageErrorf("bisect: no commits from --good %s to --bad %s (is good an ancestor of bad?)", good, *bad)
	}
	commits := append([]string{good}, strings.Fields(list)...)
	out, err := safefs.MkdirAll(o.out)
	if err != nil {
		return fmt.Errorf("bisect: %w", err)
	}
	defer out.Close()
	done, err := loadState(out, commits)
	if err != nil {
		return err
	}
	if len(done) > 0 {
		fmt.Fprintf(stdout, "bisect: resuming with %s\n", units.Plural(len(done), "judged commit"))
	}
	save := func(steps []bisect.Outcome) error {
		b, _ := json.MarshalIndent(steps, "", "  ")
		return out.WriteFile(stateFile, b, 0o644)
	}
	fmt.Fprintf(stdout, "bisect: %s between %s (good) and %s (bad)\n", units.Plural(len(commits)-1, "commit"), short(good), *bad)
	judge := func(ctx context.Context, c string) (bisect.Outcome, error) {
		return cl.judgeOne(ctx, o, c, stdout, stderr)
	}
	res, err := bisect.Run(ctx, commits, judge, done, save)
	if res != nil {
		bisect.WriteEvidence(stdout, res)
	}
	if err != nil {
		return fmt.Errorf("bisect: %w (resume with the same command)", err)
	}
	if res.Culprit == "" {
		return fmt.Errorf("bisect: skipped commits hide the first bad commit (one of the candidates above): %w", fault.ErrUndecided)
	}
	return nil
}

// loadState reads an interrupted bisection's outcomes. Each must be of a
// commit strictly between good and bad (commits[1:len-1]) and either bad,
// skipped or good: a state file from another tree or range, or written by
// hand, is refused rather than trusted.
func loadState(out *safefs.Dir, commits []string) (map[string]bisect.Outcome, error) {
	done := map[string]bisect.Outcome{}
	path := out.Join(stateFile)
	b, err := out.ReadFile(stateFile, safefs.MaxSmall)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bisect: %w", err)
	}
	var prev []bisect.Outcome
	if err := json.Unmarshal(b, &prev); err != nil {
		return nil, usageErrorf("bisect: %s: %v; remove it to start over", path, err)
	}
	inner := map[string]bool{}
	for _, c := range commits[1 : len(commits)-1] {
		inner[c] = true
	}
	for _, p := range prev {
		if !inner[p.Commit] || p.Bad && p.Skip || done[p.Commit] != (bisect.Outcome{}) {
			return nil, usageErrorf("bisect: %s: step %.50q is not a judged commit between --good and --bad of this tree; remove the file to start over", path, p.Commit)
		}
		done[p.Commit] = p
	}
	return done, nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
