package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Options are one run of a scenario: what `vnetbench run`'s flags say,
// and what the run takes from the machine.
type Options struct {
	// BootGuests boots every lab's nested guests instead of starting a
	// later lab's from the state the first saved (lab.Inner.BootGuests).
	BootGuests bool
	// Scenario is the scenario and the command line's changes to it.
	Scenario Spec
	// Dir is the run directory ("" = runs/NAME-TIMESTAMP under the
	// working directory; Resume needs it).
	Dir string
	// Resume continues Dir, skipping the samples it holds.
	Resume bool
	// DryRun prints the cells in run order and their commands, and
	// changes nothing.
	DryRun bool
	// Seed orders the cells; SeedAuto takes it from the CI pipeline's id
	// (--seed auto). Neither: the scenario's, else for a shard the
	// pipeline's id, else random (runner.ResolveSeed; printed).
	Seed     int64
	SeedAuto bool
	// Repetitions replaces every cell's repetitions (0 = the scenario's).
	Repetitions int
	// Shard runs only shard "I/N" of the cells; "auto" and "auto/N" take
	// it from the CI's variables (runner.ParseShardFlag). "" = all.
	Shard string
	// InsideLab runs the cells of this kernel label on the running
	// kernel: the run inside a lab VM.
	InsideLab string
	// AgentBinary is the vnetbench binary installed as the guests' and
	// lab VMs' /init ("" = this executable).
	AgentBinary string
	// LockWait is how long to wait for another run's host lock.
	LockWait time.Duration
	// MaxTime refuses a run whose estimate passes it (0 = no limit).
	MaxTime time.Duration
	// Version is vnetbench's version, for env.json.
	Version string
	// Stdout receives what the CLI prints (the estimate, progress, the
	// table), Stderr its warnings and notes (nil = discarded).
	Stdout, Stderr io.Writer

	// Host describes this machine's KVM, CPUs and memory (nil =
	// lab.ThisHost, whose KVM probe runs a test vCPU).
	Host func() lab.Host
	// EstimateDir holds the host's measured rates (estimate.File);
	// RecordEstimates adds what the run measured to them.
	EstimateDir     string
	RecordEstimates bool
	// Getenv reads the CI's shard and pipeline variables and, inside a
	// lab, labvm.TurnEnv (nil = os.Getenv).
	Getenv func(string) string
	// EditRunner, when set, edits the runner's options before the run
	// (tests: a fake guest agent and generator).
	EditRunner func(*runner.Options)
}

// Result is what a run did.
type Result struct {
	// Dir is the run directory (absolute).
	Dir string
	// Seed is the seed the cells were ordered with.
	Seed int64
	// Samples is the samples of this run (this shard's, this lab's).
	Samples int
}

// Run runs the scenario of o (see the package doc). A run that went to
// its end with some cells failed (a guest kernel fault, a kernel's lab:
// CellsFailed) prints the table of the others and returns the cells'
// error with the Result; any other error ends it.
func Run(ctx context.Context, o Options) (Result, error) {
	o.setDefaults()
	r := &run{Options: o}
	if err := r.load(); err != nil {
		return Result{}, err
	}
	if err := r.order(); err != nil {
		return Result{}, err
	}
	if err := r.prepare(ctx); err != nil {
		return r.result(), err
	}
	if o.DryRun {
		return r.result(), r.dryRun()
	}
	return r.result(), r.run(ctx)
}

func (o *Options) setDefaults() {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Host == nil {
		o.Host = lab.ThisHost
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
}

// run is one Run: its options and what each phase works out for the
// next.
type run struct {
	Options
	s                    *scenarios.Scenario
	seed                 int64
	seedSource           string
	shardI, shardN       int
	distinct, cells      []scenarios.Cell
	hostCells, labCells  []scenarios.Cell
	shardNote, shardSpec string
	shardSource          string
	in                   lab.Inner
	host                 lab.Host
	tab                  *estimate.Table
	est                  *estimate.Estimate
	// dirErr is why run would refuse Dir, spaceErr why it would refuse
	// the disks' free space; the dry run reports them last.
	dirErr, spaceErr error
	// chosenBase is the working directory when Dir is the default
	// runs/NAME under it (defaultDir); "" with -o.
	chosenBase string
}

func (r *run) result() Result {
	return Result{Dir: r.Dir, Seed: r.seed, Samples: len(r.cells)}
}

func (r *run) warnf(format string, a ...any) {
	fmt.Fprintf(r.Stderr, "vnetbench: warning: "+format+"\n", a...)
}

// load reads the scenario with its overrides, kernels and label, and
// checks it against this host.
func (r *run) load() error {
	if r.Repetitions < 0 {
		return fault.Input("run: --repetitions %d: want a positive count", r.Repetitions)
	}
	if err := r.checkAgent(); err != nil {
		return err
	}
	var err error
	if r.s, err = r.Scenario.Load(); err != nil {
		return err
	}
	if r.BootGuests && !slices.ContainsFunc(r.s.Kernels, func(k scenarios.Kernel) bool { return !k.Running() }) {
		// As run's other flags that work only with another (--fail-on
		// without --until-decided): refused, not ignored in silence.
		return fault.Input("run: --boot-guests boots the nested guests of lab VMs, and scenario %s runs every cell on the running kernel: leave --boot-guests out, or give a kernel to boot in a lab VM (--kernel LABEL=SPEC)", r.s.Name)
	}
	host := scenarios.Host{NumCPU: runtime.NumCPU()}
	if err := r.s.CheckHost(host); err != nil {
		return err
	}
	for _, w := range r.s.HostWarnings(host) {
		r.warnf("%s", w)
	}
	return nil
}

// checkAgent refuses an --agent-binary that cannot be the guests' /init,
// before anything is printed or made: the image build found it only
// after the run directory (and a lab's kernels), and the dry run never.
func (r *run) checkAgent() error {
	if r.AgentBinary == "" {
		return nil
	}
	if _, err := os.Stat(r.AgentBinary); err != nil {
		return fault.Input("run: --agent-binary %s: %v; pass the path of a vnetbench binary (make build writes bin/vnetbench), or leave the flag out to install this one", r.AgentBinary, errors.Unwrap(err))
	}
	if err := vmimages.CheckAgent(r.AgentBinary); err != nil {
		return fmt.Errorf("run: --agent-binary: %w", err)
	}
	return nil
}

// order expands the cells, orders them by the seed and keeps this
// shard's, or this lab's (prepare splits them by kernel).
func (r *run) order() error {
	if err := r.resolveShard(); err != nil {
		return err
	}
	var err error
	if !r.resumeSeed() {
		r.seed, r.seedSource, err = runner.ResolveSeed(runner.SeedFlag{N: r.Seed, Auto: r.SeedAuto}, r.s.Seed, r.shardSpec, r.Getenv)
	}
	if err != nil {
		return err
	}
	if r.seedSource != runner.SeedFromFlag && r.seedSource != runner.SeedFromScenario && r.seedSource != runner.SeedRandom && r.seedSource != seedResumed {
		fmt.Fprintf(r.Stdout, "seed %d from %s\n", r.seed, r.seedSource)
	}
	var notes []string
	r.distinct, notes = runner.Distinct(r.s.Expand())
	if r.Repetitions > 0 {
		for i := range r.distinct {
			r.distinct[i].Repetitions = r.Repetitions
		}
	}
	for _, n := range append(r.s.Notes, notes...) {
		fmt.Fprintf(r.Stderr, "vnetbench: note: %s\n", n)
	}
	r.cells = scenarios.Order(r.distinct, r.seed)
	if r.shardSpec != "" {
		r.cells = runner.Shard(r.cells, r.shardI, r.shardN)
	}
	if r.InsideLab != "" {
		r.cells = lab.Inside(r.cells, r.InsideLab)
		if len(r.cells) == 0 {
			return fault.Input("run: --inside-lab %s: the scenario has no kernel labelled %s", r.InsideLab, r.InsideLab)
		}
	}
	// Cells whose guest kernel is too old for their workload read n/a:
	// said before the run, not discovered after it.
	for _, n := range runner.GuestKernelNotes(r.cells) {
		r.warnf("%s", n)
	}
	return nil
}

// seedResumed is the seed source of a resumed run (resumeSeed).
const seedResumed = "the run being resumed"

// resumeSeed takes a resumed run's seed from its env.json, so that its
// remaining cells run in the order its first part was drawn from (and
// its reproduce.sh, until-decided's later rounds, a lab's inner runs and
// a bisect step's resumed run keep one seed). It reports false, leaving
// the seed to ResolveSeed, for a new run or a run directory that
// recorded none. A --seed or --seed auto that names another is
// overruled, with a warning.
func (r *run) resumeSeed() bool {
	if !r.Resume || r.Dir == "" {
		return false
	}
	env, err := results.ReadEnv(r.Dir)
	if err != nil || env.Seed == 0 {
		return false
	}
	if given := r.givenSeed(); given != "" && given != strconv.FormatInt(env.Seed, 10) {
		r.warnf("run --resume: %s was made with seed %d: its remaining cells run in that order (--seed %s not used)", r.Dir, env.Seed, given)
	}
	r.seed, r.seedSource = env.Seed, seedResumed
	return true
}

// givenSeed is the seed --seed names ("" without one): its number, or
// with --seed auto the pipeline's (or "auto" outside a pipeline).
func (r *run) givenSeed() string {
	switch {
	case r.SeedAuto:
		if seed, _, ok := runner.SeedFromEnv(r.Getenv); ok {
			return strconv.FormatInt(seed, 10)
		}
		return "auto"
	case r.Seed != 0:
		return strconv.FormatInt(r.Seed, 10)
	}
	return ""
}

// resolveShard reads Shard (I/N, or auto from the CI's variables): the
// seed depends on whether the run is a shard.
func (r *run) resolveShard() error {
	if r.Shard == "" {
		return nil
	}
	i, n, src, err := runner.ParseShardFlag(r.Shard, r.Getenv)
	if err != nil {
		return err
	}
	r.shardI, r.shardN = i, n
	r.shardSpec, r.shardSource = fmt.Sprintf("%d/%d", i, n), src
	r.shardNote = " (shard " + r.shardSpec + ")"
	if src != "" {
		fmt.Fprintf(r.Stdout, "shard %s from %s\n", r.shardSpec, src)
	}
	return nil
}

// prepare picks the run directory, probes the host, splits the cells
// into the running kernel's and the lab VMs', picks the lab VMs' inner
// command, and estimates the run, refusing one past MaxTime.
func (r *run) prepare(ctx context.Context) error {
	chosen, err := r.defaultDir()
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(r.Dir); err == nil {
		r.Dir = abs
	}
	if r.InsideLab == "" {
		// As runner.Run and lab.Run will (CheckRunDir), before the host
		// probe and the estimate are printed: one line, nothing else.
		// The dry run refuses it after its commands, as it does what
		// else run would refuse (it printed them and exited 0).
		if err := cmp.Or(chosen, results.CheckDir(r.Dir, r.Resume)); err != nil {
			if !r.DryRun {
				return err
			}
			r.dirErr = err
		}
	}
	r.split()
	if !r.DryRun && r.InsideLab == "" {
		// What plan and the dry run say run refuses, it refuses, before
		// a kernel is fetched or built (the dry run prints them all).
		if rs := runner.LabRefusals(r.labCells, r.host.Look); len(rs) > 0 {
			return rs[0].Err()
		}
	}
	if err := r.labInner(); err != nil {
		return err
	}
	r.tab = LoadTable(r.Stderr, "vnetbench: ", r.EstimateDir)
	todo := r.cells
	if r.Resume {
		todo = notDone(r.Dir, r.cells)
	}
	side := lab.PlanSideBySide(todo, r.host)
	r.est, _ = EstimateCells(todo, KernelLabels(r.s), r.host.KVM, r.tab, side < 2 && !r.BootGuests)
	if r.InsideLab != "" {
		r.est = estimateInsideLab(todo, r.host.KVM, r.tab)
	} else {
		r.est.SideBySide(side, len(r.host.CPUs))
		need := needOf(AddBuilds(ctx, r.EstimateDir, r.est, r.s, r.tab), todo)
		if ps := spaceProblems(need, r.EstimateDir, r.Dir); len(ps) > 0 {
			// Refused before a fetch or build could fill the disk and
			// fail minutes later, half done; the dry run says it last.
			r.spaceErr = fault.Capability("run: not enough disk space: %s; free some there, or give VNETBENCH_CACHE or -o a larger disk", strings.Join(ps, "; "))
			if !r.DryRun {
				return r.spaceErr
			}
		}
	}
	if r.DryRun || r.InsideLab != "" || r.Resume {
		return nil
	}
	if r.MaxTime > 0 && r.est.Total > r.MaxTime && len(r.hostCells) > 0 {
		// A host that cannot run the cells at all says so first: that,
		// not the time, is what to fix (doctor, or lab mode).
		if err := runner.Preflight(ctx, r.hostCells, proc.Real{}); err != nil {
			return err
		}
	}
	return checkMaxTime(r.Stderr, r.est, r.Scenario, r.s, r.host.KVM, r.tab, r.MaxTime)
}

// defaultDir picks runs/NAME-TIMESTAMP when no -o was given. It returns
// why run refuses that choice: a link at runs or below (vnetbench's
// choice, not the user's, so not followed as a -o would be). This check
// says so before the slow steps; the run makes the directory later
// following no link (runner.Options.ChosenBase), so a link put there
// meanwhile is refused then, not followed.
func (r *run) defaultDir() (chosen error, err error) {
	if r.Dir != "" {
		return nil, nil
	}
	if r.Resume {
		return nil, fault.Input("run: --resume needs -o DIR (the run directory to continue)")
	}
	wd, err := filepath.Abs(".")
	if err != nil {
		return nil, fmt.Errorf("run: the working directory for the default runs/ directory: %w; give -o DIR", err)
	}
	rel := filepath.Join("runs", r.s.Name+"-"+time.Now().Format("20060102-150405"))
	r.Dir, r.chosenBase = filepath.Join(wd, rel), wd
	return safefs.ChosenLink(wd, rel, "give -o DIR"), nil
}

// split probes the host, whose KVM inside a lab VM decides the guests'
// boot deadlines (lab.NestedBoot, which keeps the order), and then splits
// the cells, once, into the running kernel's and the lab VMs'.
func (r *run) split() {
	r.host = r.Host()
	if r.InsideLab != "" {
		var notes []string
		r.cells, notes = lab.NestedBoot(r.cells, r.host.KVM.Usable)
		for _, n := range notes {
			fmt.Fprintf(r.Stderr, "vnetbench: note: %s\n", n)
		}
	}
	r.hostCells, r.labCells = scenarios.SplitRunning(r.cells)
}

// labInner is the command each lab VM runs (--inside-lab): kernels other
// than the running one run the same scenario inside one lab VM each.
func (r *run) labInner() error {
	r.in = lab.Inner{Binary: r.AgentBinary, BootGuests: r.BootGuests}
	if len(r.labCells) == 0 {
		return nil
	}
	r.in.Labels = KernelLabels(r.s)
	var err error
	if r.in.Scenario, r.in.ScenarioData, err = labScenario(r.s); err != nil {
		return err
	}
	if !r.s.Builtin {
		if d, err := filepath.Abs(filepath.Dir(r.s.File)); err == nil {
			r.in.Args = append(r.in.Args, "--scenario-dir", d)
		}
	}
	if r.shardSpec != "" { // resolved: the lab VM has no CI variables
		r.in.Args = append(r.in.Args, "--shard", r.shardSpec)
	}
	r.in.Args = append(r.in.Args, r.innerKernelArgs()...)
	if r.Repetitions > 0 {
		r.in.Args = append(r.in.Args, "--repetitions", fmt.Sprint(r.Repetitions))
	}
	r.in.Args = append(r.in.Args, r.Scenario.SetArgs()...)
	if r.s.PerPatch {
		// The columns as expanded here: inside, the series' files may
		// be out of sight (a glob under /root is the lab's tmpfs).
		r.in.Args = append(r.in.Args, "--set", "per_patch=false")
	}
	return nil
}

// innerKernelArgs are the --kernel arguments of the run inside a lab VM:
// the command line's, or a per-patch run's columns, each as expanded.
func (r *run) innerKernelArgs() []string {
	if !r.s.PerPatch {
		return r.Scenario.KernelArgs()
	}
	return Spec{Kernels: r.s.Kernels}.KernelArgs()
}

// labScenario is how the run inside a lab VM finds the scenario: a
// built-in by name, or a file's content, which lab.Run copies into
// the run directory once the run has started (the lab sees the host root
// read-only, without /tmp, and the run directory; bad input must leave no
// run directory behind).
func labScenario(s *scenarios.Scenario) (name string, data []byte, err error) {
	if s.Builtin {
		return s.Name, nil, nil
	}
	data, err = os.ReadFile(s.File)
	return "", data, err
}
