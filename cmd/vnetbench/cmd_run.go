package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/report"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdRun runs a scenario for real and writes a run directory: it parses
// the flags, loads the scenario, orders (and shards) its cells, checks the
// estimate against --max-time, and then either prints the dry run or runs
// the lab cells and the host cells and prints the table.
func cmdRun(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "SCENARIO [-o DIR] [--kernel LABEL=SPEC]... [--label NAME] [--set KEY=VALUE]... [--max-time D] [--resume] [--shard I/N] [--dry-run] [--seed N] [--until-decided]", stderr)
	f := addRunFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *f.until.on {
		return runUntilDecided(ctx, cl, args, f.until, *f.out, *f.shard != "" || *f.insideLab != "", *f.resume, *f.dry, stdout, stderr)
	}
	if *f.reps < 0 {
		return usageErrorf("run: --repetitions %d: want a positive count", *f.reps)
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageErrorf("run: want exactly one scenario (a built-in name or a file); 'vnetbench list' shows the built-ins")
	}
	r := &runCmd{runFlags: f, cl: cl, name: pos[0], stdout: stdout, stderr: stderr}
	if err := r.load(); err != nil {
		return err
	}
	if err := r.order(); err != nil {
		return err
	}
	if err := r.prepare(ctx); err != nil {
		return err
	}
	if *f.dry {
		return r.dryRun()
	}
	return r.run(ctx)
}

// runFlags are run's flags.
type runFlags struct {
	sets                      *setFlags
	out, shard, agentBin      *string
	insideLab, label, scenDir *string
	resume, dry               *bool
	seed                      *int64
	lockWait, maxTime         *time.Duration
	kernels                   *kernelFlags
	reps                      *int
	until                     untilFlags
}

func addRunFlags(fs *flag.FlagSet) runFlags {
	var f runFlags
	f.sets = addSetFlag(fs)
	f.out = pathFlag(fs, "o", "run `DIR` (default runs/SCENARIO-TIMESTAMP)")
	f.resume = fs.Bool("resume", false, "continue the run in -o DIR, skipping the samples it already holds")
	f.shard = fs.String("shard", "", "run only shard `I/N` of the cells (1-based; join the shards with 'vnetbench merge'); auto or auto/N: from the CI's variables (JOB_COMPLETION_INDEX, CI_NODE_INDEX/CI_NODE_TOTAL, VNETBENCH_SHARD_INDEX/VNETBENCH_SHARD_TOTAL; docs/ci.md)")
	f.dry = fs.Bool("dry-run", false, "print the cells in run order and their commands, change nothing")
	f.seed = fs.Int64("seed", 0, "seed of the interleaved cell order (default: the scenario's, else random; printed)")
	f.agentBin = pathFlag(fs, "agent-binary", "vnetbench binary installed as the guest's /init, with its libraries if dynamically linked (default: this executable)")
	f.lockWait = fs.Duration("lock-wait", 0, "wait up to `DURATION` for another run on this host to finish (default: fail at once)")
	f.insideLab = fs.String("inside-lab", "", "(internal) run the cells of kernel `LABEL` on the running kernel: the run inside a lab VM")
	f.kernels = addKernelFlag(fs)
	f.label = fs.String("label", "", "`NAME` of the running kernel: its column in every table (default: the scenario's label, \"running\"); give each boot of a bare-metal A/B its own")
	f.maxTime = addMaxTimeFlag(fs)
	f.scenDir = pathFlag(fs, "scenario-dir", "(internal) with --inside-lab: `DIR` of the original scenario file, for its relative paths (SCENARIO is a copy)")
	f.reps = fs.Int("repetitions", 0, "`N` repetitions of every cell, replacing the scenario's (0: the scenario's)")
	f.until = addUntilFlags(fs)
	return f
}

// runCmd is one `vnetbench run`: its flags and what each phase works out
// for the next.
type runCmd struct {
	runFlags
	cl             *cli
	name           string // the scenario as given
	stdout, stderr io.Writer

	s                    *scenarios.Scenario
	seedUsed             int64
	distinct, cells      []scenarios.Cell
	hostCells, labCells  []scenarios.Cell
	shardNote, shardSpec string
	shardSource, dir     string
	in                   lab.Inner
	host                 lab.Host
	tab                  *estimate.Table
	est                  *estimate.Estimate
}

func (r *runCmd) warnf(format string, a ...any) {
	fmt.Fprintf(r.stderr, "vnetbench: warning: "+format+"\n", a...)
}

// load reads the scenario with its overrides, kernels and label, and
// checks it against this host.
func (r *runCmd) load() error {
	var err error
	if *r.scenDir != "" {
		r.s, err = scenarios.LoadFileFrom(r.name, *r.scenDir, *r.sets...)
	} else {
		r.s, err = scenarios.Resolve(r.name, *r.sets...)
	}
	if err != nil {
		return err
	}
	if err := r.kernels.apply(r.s); err != nil {
		return err
	}
	if err := applyLabel(r.s, *r.label); err != nil {
		return err
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

// order expands the cells, orders them by the seed and keeps this
// shard's, or this lab's.
func (r *runCmd) order() error {
	r.seedUsed = *r.seed
	if r.seedUsed == 0 {
		r.seedUsed = r.s.Seed
	}
	if r.seedUsed == 0 {
		r.seedUsed = rand.Int64N(1<<31-1) + 1
	}
	var notes []string
	r.distinct, notes = runner.Distinct(r.s.Expand())
	if *r.reps > 0 {
		for i := range r.distinct {
			r.distinct[i].Repetitions = *r.reps
		}
	}
	for _, n := range append(r.s.Notes, notes...) {
		fmt.Fprintf(r.stderr, "vnetbench: note: %s\n", n)
	}
	r.cells = scenarios.Order(r.distinct, r.seedUsed)
	if err := r.keepShard(); err != nil {
		return err
	}
	if *r.insideLab != "" {
		r.cells = lab.Inside(r.cells, *r.insideLab)
		if len(r.cells) == 0 {
			return usageErrorf("run: --inside-lab %s: the scenario has no kernel labelled %s", *r.insideLab, *r.insideLab)
		}
	}
	r.hostCells, r.labCells = scenarios.SplitRunning(r.cells)
	// Cells whose guest kernel is too old for their workload read n/a:
	// said before the run, not discovered after it.
	for _, n := range runner.GuestKernelNotes(r.cells) {
		r.warnf("%s", n)
	}
	return nil
}

// keepShard keeps the cells of --shard (I/N, or auto from the CI's
// variables).
func (r *runCmd) keepShard() error {
	if *r.shard == "" {
		return nil
	}
	i, n, src, err := runner.ParseShardFlag(*r.shard, os.Getenv)
	if err != nil {
		return err
	}
	r.cells = runner.Shard(r.cells, i, n)
	r.shardSpec, r.shardSource = fmt.Sprintf("%d/%d", i, n), src
	r.shardNote = " (shard " + r.shardSpec + ")"
	if src != "" {
		fmt.Fprintf(r.stdout, "shard %s from %s\n", r.shardSpec, src)
	}
	return nil
}

// prepare picks the run directory and the lab VMs' inner command, and
// estimates the run, refusing one past --max-time.
func (r *runCmd) prepare(ctx context.Context) error {
	r.dir = *r.out
	if r.dir == "" {
		if *r.resume {
			return usageErrorf("run: --resume needs -o DIR (the run directory to continue)")
		}
		r.dir = absPath(filepath.Join("runs", r.s.Name+"-"+time.Now().Format("20060102-150405")))
	}
	if err := r.labInner(); err != nil {
		return err
	}
	r.host = r.cl.host()
	r.tab = r.cl.loadTable(r.stderr, "vnetbench: ")
	todo := r.cells
	if *r.resume {
		todo = notDone(r.dir, r.cells)
	}
	r.est, _ = estimateCells(todo, kernelLabels(r.s), r.host.KVM, r.tab)
	if *r.insideLab != "" {
		r.est = estimateInsideLab(todo, r.host.KVM, r.tab)
	} else {
		addBuilds(ctx, r.cl.estimateDir, r.est, r.s, r.tab)
	}
	if *r.dry || *r.insideLab != "" || *r.resume {
		return nil
	}
	if *r.maxTime > 0 && r.est.Total > *r.maxTime && len(r.hostCells) > 0 {
		// A host that cannot run the cells at all says so first: that,
		// not the time, is what to fix (doctor, or lab mode).
		if err := runner.Preflight(ctx, r.hostCells, proc.Real{}); err != nil {
			return err
		}
	}
	a := scenarioArgs{name: r.name, kernels: *r.kernels, label: *r.label, sets: *r.sets}
	return checkMaxTime(r.stderr, r.est, a, r.s, r.host.KVM, r.tab, *r.maxTime)
}

// labInner is the command each lab VM runs (--inside-lab): kernels other
// than the running one run the same scenario inside one lab VM each.
func (r *runCmd) labInner() error {
	r.in = lab.Inner{Binary: *r.agentBin}
	if len(r.labCells) == 0 {
		return nil
	}
	for _, k := range r.s.Kernels {
		r.in.Labels = append(r.in.Labels, k.Label)
	}
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
	r.in.Args = append(r.in.Args, r.kernels.args()...)
	if *r.reps > 0 {
		r.in.Args = append(r.in.Args, "--repetitions", fmt.Sprint(*r.reps))
	}
	r.in.Args = append(r.in.Args, r.sets.args()...)
	return nil
}

// dryRun prints the cells in run order with their commands and the lab
// VMs' command lines, changing nothing; what run would refuse, it refuses.
func (r *runCmd) dryRun() error {
	fmt.Fprintf(r.stdout, "scenario %s, seed %d%s: %d samples in this order\n", r.s.Name, r.seedUsed, r.shardNote, len(r.cells))
	fmt.Fprintf(r.stdout, "accelerator: %s\n", accelDesc(r.host.KVM))
	r.est.Write(r.stdout, "", describeKernel(r.s, r.host.KVM))
	cmds := lab.PlanCommands(r.cells, r.in.Labels, r.host)
	labVMs := map[string][]string{} // label -> the lab VM's QEMU argv
	for _, vm := range cmds.LabVMs {
		if vm.Err != nil {
			return vm.Err // run refuses it: so does its dry run
		}
		for _, w := range vm.Warnings {
			r.warnf("%s", w)
		}
		labVMs[vm.Label] = vm.Argv
	}
	if err := r.printCellCommands(cmds.Cells); err != nil {
		return err
	}
	if len(r.labCells) > 0 {
		return r.printLabVMs(labVMs)
	}
	return nil
}

// printCellCommands prints each cell's commands (cmds[i] are r.cells[i]'s),
// as plan does.
func (r *runCmd) printCellCommands(cmds []lab.CellCommands) error {
	var warned []string
	for i := range r.cells {
		c, cc := &r.cells[i], &cmds[i]
		if cc.Err != nil {
			return cc.Err // run refuses it: so does its dry run
		}
		if cc.Warning != "" && c.Kernel.Running() && !slices.Contains(warned, cc.Warning) {
			warned = append(warned, cc.Warning)
			r.warnf("%s", cc.Warning)
		}
		fmt.Fprintf(r.stdout, "\n%3d. %s rep %d (kernel %s, %s)\n", i+1, c.Name, c.Rep+1, kernelName(c), cc.Accel)
		for _, l := range cc.Lines {
			fmt.Fprintf(r.stdout, "     %s\n", l)
		}
	}
	return nil
}

// printLabVMs prints the command each lab VM runs inside and its QEMU
// command line, in the order the labs run.
func (r *runCmd) printLabVMs(labVMs map[string][]string) error {
	abs, err := filepath.Abs(r.dir)
	if err != nil {
		return err
	}
	in := r.in
	if in.ScenarioData != nil { // the copy the run would write
		in.Scenario = filepath.Join(abs, results.LabScenario)
	}
	fmt.Fprintf(r.stdout, "\nlab VMs, one per kernel, each running the cells of its kernel:\n")
	have := scenarios.KernelLabels(r.labCells)
	for _, l := range in.Labels {
		if !slices.Contains(have, l) {
			continue
		}
		_, args := lab.InnerArgs(abs, l, r.seedUsed, in)
		fmt.Fprintf(r.stdout, "  %s: vnetbench %s\n", l, strings.Join(args, " "))
		fmt.Fprintf(r.stdout, "    in %s\n", proc.Quote(labVMs[l]))
	}
	return nil
}

// run runs the lab cells (one lab VM per kernel) and the host cells,
// records what it measured for later estimates and prints the table.
func (r *runCmd) run(ctx context.Context) error {
	fmt.Fprintf(r.stdout, "scenario %s, seed %d%s, %d samples\n", r.s.Name, r.seedUsed, r.shardNote, len(r.cells))
	if len(r.s.Sets) > 0 {
		fmt.Fprintf(r.stdout, "overrides: %s\n", setArgs(setStrings(r.s.Sets)))
	}
	if *r.insideLab == "" { // the run outside said it for the whole run
		r.est.Write(r.stdout, "", describeKernel(r.s, r.host.KVM))
	}
	defer forceOnSecondSignal(ctx, r.stderr)()
	runStart := time.Now()                                          // from when the host lock is held (Started)
	prog := newProgress(r.stdout, len(r.cells), *r.insideLab == "") // a lab's console is a tty, but nobody watches it
	prog.est = r.est
	opts := r.options(prog, &runStart)
	measured, err := r.runCells(ctx, opts, prog)
	prog.finish()
	if err != nil {
		return err
	}
	if *r.insideLab == "" { // the run outside records the lab's samples as nested
		if r.cl.recordEstimates {
			recordRates(r.stderr, r.tab, r.cl.estimateDir, r.dir, r.cells, r.host.KVM, runStart)
		}
		fmt.Fprintf(r.stdout, "wall time %s (estimate %s)\n", estimate.Duration(time.Since(runStart)), estimate.Duration(r.est.Total))
	}
	if len(r.cells) > 0 {
		printTable(r.stdout, r.stderr, r.dir)
	}
	return measured
}

// options are the runner's options for this run; runStart is set when
// the host lock is held.
func (r *runCmd) options(prog *progress, runStart *time.Time) runner.Options {
	var started sync.Once
	opts := runner.Options{Dir: r.dir, Resume: *r.resume, Scenario: r.s.Name, Seed: r.seedUsed, Version: version, Sets: r.sets.strings(),
		Image: runner.VMImagesBuilder(*r.agentBin), Progress: prog.update, Log: prog.logWriter(), LockWait: *r.lockWait,
		Started: func() {
			started.Do(func() {
				*runStart = time.Now()
				fmt.Fprintf(r.stdout, "run directory %s\n", r.dir)
			})
		},
		Shard: r.shardSpec, ShardSource: r.shardSource}
	if r.cl.runOptions != nil {
		r.cl.runOptions(&opts)
	}
	return opts
}

// runCells runs the lab cells, then the host cells. measured is the
// cells that failed while the run went on (exit 1); err ends the run.
func (r *runCmd) runCells(ctx context.Context, opts runner.Options, prog *progress) (measured, err error) {
	report1 := func(sum *runner.Summary) {
		if sum == nil {
			return
		}
		for _, w := range sum.Warnings {
			r.warnf("%s", w)
		}
		fmt.Fprintf(r.stdout, "%d samples written, %d already there; results in %s\n", sum.Samples, sum.Skipped, sum.Dir)
	}
	if len(r.labCells) > 0 {
		sum, err := lab.Run(ctx, r.labCells, opts, r.in)
		report1(sum)
		if err != nil && !cellsFailed(err) {
			return nil, err
		}
		measured = err
	}
	// A shard that gets no cell (more shards than cells) still writes its
	// run directory: env.json and an empty results.jsonl, for merge.
	if len(r.cells) == 0 && r.shardSpec != "" {
		fmt.Fprintf(r.stdout, "shard %s has no cells of this scenario (%d distinct cells over %s shards): writing an empty run directory for merge\n",
			r.shardSpec, len(r.distinct), r.shardSpec[strings.Index(r.shardSpec, "/")+1:])
	}
	if len(r.hostCells) > 0 || len(r.cells) == 0 {
		if _, serr := os.Stat(filepath.Join(r.dir, results.ResultsFile)); serr == nil && len(r.labCells) > 0 {
			opts.Resume = true
		}
		sum, err := runner.Run(ctx, r.hostCells, opts)
		prog.finish()
		report1(sum)
		if err != nil && !cellsFailed(err) {
			return nil, err
		}
		measured = errors.Join(measured, err)
	}
	return measured, nil
}

// forceOnSecondSignal: the first SIGINT/SIGTERM cancels ctx (from main)
// and the runner tears down; a second one exits at once. The returned
// function ends the watch.
func forceOnSecondSignal(ctx context.Context, stderr io.Writer) (stop func()) {
	forced := make(chan os.Signal, 1)
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		fmt.Fprintln(stderr, "vnetbench: interrupted: tearing down (press Ctrl-C again to exit at once)")
		signal.Notify(forced, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(forced)
		select {
		case <-forced:
			fmt.Fprintln(stderr, "vnetbench: second signal: exiting without finishing teardown (check 'ip netns' for vnb-* leftovers)")
			os.Exit(130)
		case <-finished:
		}
	}()
	return func() { close(finished) }
}

// recordRates adds what the run measured to the host's estimate table.
func recordRates(stderr io.Writer, tab *estimate.Table, tableDir, dir string, cells []scenarios.Cell, st qemu.KVMStatus, since time.Time) {
	obs, err := runner.Observations(dir, cells, st, since)
	if err == nil {
		tab.Add(obs, time.Now())
		err = tab.Save(tableDir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: estimate table not updated: %v\n", err)
	}
}

// checkMaxTime refuses, before anything starts, a run whose estimate
// passes limit (0 = none): the estimate and the shorter form on stderr,
// a bad-input error.
func checkMaxTime(stderr io.Writer, est *estimate.Estimate, a scenarioArgs, s *scenarios.Scenario, st qemu.KVMStatus, tab *estimate.Table, limit time.Duration) error {
	if limit <= 0 || est.Total <= limit {
		return nil
	}
	est.Write(stderr, "vnetbench: ", describeKernel(s, st))
	writeShorter(stderr, "vnetbench: ", shorterForm(a, s, st, tab, limit), limit)
	return usageErrorf("run: the estimate, about %s, passes --max-time %s; run the shorter form above, or raise --max-time (e.g. --max-time %s)",
		estimate.Duration(est.Total), estimate.Duration(limit), roundUpHours(est.Total))
}

// roundUpHours is d rounded up to whole hours, as --max-time takes it.
func roundUpHours(d time.Duration) string {
	return fmt.Sprintf("%dh", (d+time.Hour-1)/time.Hour)
}

// cellsFailed reports whether err is a run that went to its end with some
// cells failed (a guest kernel fault, or a kernel's lab): the table of
// the others is still printed, and the run exits 1.
func cellsFailed(err error) bool {
	var ke *runner.KernelFaultError
	var le *lab.Error
	return errors.As(err, &ke) || errors.As(err, &le)
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

func kernelName(c *scenarios.Cell) string {
	if c.Kernel.Label != "" {
		return c.Kernel.Label
	}
	return "host"
}

// printTable renders the run with the report package's text renderer.
func printTable(stdout, stderr io.Writer, dir string) {
	set, err := results.Load(dir)
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: report: %v\n", err)
		return
	}
	r, err := report.Build(set, report.Options{By: "kernel", Top: 10})
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: report: %v\n", err)
		return
	}
	st, _ := report.ParseStyle("ascii")
	fmt.Fprintln(stdout)
	if err := report.Render(stdout, set, r, "text", st); err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: report: %v\n", err)
	}
	if len(r.LatencyRuns) > 0 {
		writePlots(stdout, stderr, dir, r)
	}
}

// plotsFile is the HTML report a run with the latency probe writes into
// its run directory: the tables and the probe's plots.
const plotsFile = "report.html"

func writePlots(stdout, stderr io.Writer, dir string, r *report.Report) {
	var b bytes.Buffer
	path := filepath.Join(dir, plotsFile)
	err := report.WriteHTML(&b, r)
	if err == nil {
		err = os.WriteFile(path, b.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: warning: latency plots: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "latency plots (RTT CDF, time series per sample): %s\n", path)
}

// progress shows a bar with ETA on a terminal, plain lines otherwise.
// The ETA comes from the estimate from the start, scaled by how the
// samples measured so far compared with their estimate.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	start time.Time
	// started is set by the first Started report. A run of lab and
	// running kernels reports twice (the labs' run, then the host's),
	// each counting from 0: base is the samples reported before the
	// second, seen all reported so far.
	started    bool
	base, seen int
	// measured counts samples run in this invocation (not skipped ones);
	// estDone is their estimated time.
	measured int
	estDone  time.Duration
	// est is the run's estimate, its PerSample in progress order (nil =
	// the ETA waits for a measured sample).
	est *estimate.Estimate
	now func() time.Time
}

func newProgress(w io.Writer, total int, bar bool) *progress {
	p := &progress{w: w, total: total, start: time.Now(), now: time.Now}
	if f, ok := w.(*os.File); ok && bar && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("samples"),
			progressbar.OptionShowCount(), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionClearOnFinish())
	}
	return p
}

// eta is the time left after done samples ("" when unknown or done).
func (p *progress) eta(done int) string {
	if done >= p.total {
		return ""
	}
	if p.est != nil && len(p.est.PerSample) == p.total {
		left := estimate.ETA(p.est.Left(done), p.estDone, p.now().Sub(p.start))
		if p.measured == 0 {
			return "eta " + estimate.Duration(left) + " (estimate)"
		}
		return "eta " + estimate.Duration(left)
	}
	if p.measured == 0 {
		return ""
	}
	left := time.Duration(float64(p.now().Sub(p.start)) / float64(p.measured) * float64(p.total-done))
	return "eta " + estimate.Duration(left)
}

func (p *progress) update(u runner.Progress) {
	if u.Started {
		if p.started {
			p.base = p.seen
			return
		}
		p.started = true
		p.start = p.now() // the lock is held: work starts now
		if p.bar != nil {
			p.bar.Reset()
			p.bar.Describe("samples, " + p.eta(0))
			return
		}
		if eta := p.eta(0); eta != "" {
			fmt.Fprintf(p.w, "[0/%d] started, %s\n", p.total, eta)
		}
		return
	}
	p.seen++
	done := p.base + u.Done
	if !u.Skipped {
		p.measured++
		if p.est != nil && done >= 1 && done <= len(p.est.PerSample) {
			p.estDone += p.est.PerSample[done-1]
		}
	}
	eta := p.eta(done)
	if p.bar != nil {
		p.bar.Describe(strings.TrimSpace(u.Cell + " " + eta))
		p.bar.Set(done)
		return
	}
	what := "done"
	switch {
	case u.Skipped:
		what = "already in the run, skipped"
	case u.Failed != nil:
		what = "FAILED (recorded as failed; the run goes on)"
	}
	extra := ""
	if s := u.Sample; s != nil {
		var parts []string
		for _, k := range []string{"tx_pps", "rx_pps", "throughput_bps", "lost_pps"} {
			if v, ok := s.Metrics[k]; ok {
				parts = append(parts, fmt.Sprintf("%s=%.4g", k, v))
			}
		}
		extra = " " + strings.Join(parts, " ")
	}
	if eta != "" {
		eta = " " + eta
	}
	fmt.Fprintf(p.w, "[%d/%d] %s rep %d (%s): %s%s%s\n", done, p.total, u.Cell, u.Rep+1, u.Kernel, what, extra, eta)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// logWriter prints runner log lines (above the bar on a terminal).
func (p *progress) logWriter() io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		if p.bar != nil {
			p.bar.Clear()
		}
		return p.w.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
