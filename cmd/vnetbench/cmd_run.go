package main

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdRun runs a scenario for real and writes a run directory.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "SCENARIO [-o DIR] [--kernel LABEL=SPEC]... [--label NAME] [--set KEY=VALUE]... [--max-time D] [--resume] [--shard I/N] [--dry-run] [--seed N] [--until-decided]", stderr)
	sets := addSetFlag(fs)
	out := pathFlag(fs, "o", "run `DIR` (default runs/SCENARIO-TIMESTAMP)")
	resume := fs.Bool("resume", false, "continue the run in -o DIR, skipping the samples it already holds")
	shard := fs.String("shard", "", "run only shard `I/N` of the cells (1-based; join the shards with 'vnetbench merge'); auto or auto/N: from the CI's variables (JOB_COMPLETION_INDEX, CI_NODE_INDEX/CI_NODE_TOTAL, VNETBENCH_SHARD_INDEX/VNETBENCH_SHARD_TOTAL; docs/ci.md)")
	dry := fs.Bool("dry-run", false, "print the cells in run order and their commands, change nothing")
	seed := fs.Int64("seed", 0, "seed of the interleaved cell order (default: the scenario's, else random; printed)")
	agentBin := pathFlag(fs, "agent-binary", "vnetbench binary installed as the guest's /init, with its libraries if dynamically linked (default: this executable)")
	lockWait := fs.Duration("lock-wait", 0, "wait up to `DURATION` for another run on this host to finish (default: fail at once)")
	insideLab := fs.String("inside-lab", "", "(internal) run the cells of kernel `LABEL` on the running kernel: the run inside a lab VM")
	kernels := addKernelFlag(fs)
	label := fs.String("label", "", "`NAME` of the running kernel: its column in every table (default: the scenario's label, \"running\"); give each boot of a bare-metal A/B its own")
	maxTime := addMaxTimeFlag(fs)
	scenDir := pathFlag(fs, "scenario-dir", "(internal) with --inside-lab: `DIR` of the original scenario file, for its relative paths (SCENARIO is a copy)")
	reps := fs.Int("repetitions", 0, "`N` repetitions of every cell, replacing the scenario's (0: the scenario's)")
	until := addUntilFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *until.on {
		return runUntilDecided(ctx, args, until, *out, *shard != "" || *dry || *insideLab != "", *resume, stdout, stderr)
	}
	if *reps < 0 {
		return usageErrorf("run: --repetitions %d: want a positive count", *reps)
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageErrorf("run: want exactly one scenario (a built-in name or a file); 'vnetbench list' shows the built-ins")
	}
	var s *scenarios.Scenario
	if *scenDir != "" {
		s, err = scenarios.LoadFileFrom(pos[0], *scenDir, *sets...)
	} else {
		s, err = scenarios.Resolve(pos[0], *sets...)
	}
	if err != nil {
		return err
	}
	if err := kernels.apply(s); err != nil {
		return err
	}
	if err := applyLabel(s, *label); err != nil {
		return err
	}
	if err := s.CheckHost(scenarios.Host{NumCPU: runtime.NumCPU()}); err != nil {
		return err
	}
	for _, w := range s.HostWarnings(scenarios.Host{NumCPU: runtime.NumCPU()}) {
		fmt.Fprintf(stderr, "vnetbench: warning: %s\n", w)
	}
	sd := *seed
	if sd == 0 {
		sd = s.Seed
	}
	if sd == 0 {
		sd = rand.Int64N(1<<31-1) + 1
	}
	distinct, notes := runner.Distinct(s.Expand())
	if *reps > 0 {
		for i := range distinct {
			distinct[i].Repetitions = *reps
		}
	}
	for _, n := range append(s.Notes, notes...) {
		fmt.Fprintf(stderr, "vnetbench: note: %s\n", n)
	}
	cells := scenarios.Order(distinct, sd)
	shardNote, shardSpec, shardSource := "", "", ""
	if *shard != "" {
		i, n, src, err := runner.ParseShardFlag(*shard, os.Getenv)
		if err != nil {
			return err
		}
		cells = runner.Shard(cells, i, n)
		shardSpec, shardSource = fmt.Sprintf("%d/%d", i, n), src
		shardNote = " (shard " + shardSpec + ")"
		if src != "" {
			fmt.Fprintf(stdout, "shard %s from %s\n", shardSpec, src)
		}
	}
	if *insideLab != "" {
		cells = runner.InsideLab(cells, *insideLab)
		if len(cells) == 0 {
			return usageErrorf("run: --inside-lab %s: the scenario has no kernel labelled %s", *insideLab, *insideLab)
		}
	}
	hostCells, labCells := runner.SplitLab(cells)
	// Cells whose guest kernel is too old for their workload read n/a:
	// said before the run, not discovered after it.
	for _, n := range runner.GuestKernelNotes(cells) {
		fmt.Fprintf(stderr, "vnetbench: warning: %s\n", n)
	}
	dir := *out
	if dir == "" {
		if *resume {
			return usageErrorf("run: --resume needs -o DIR (the run directory to continue)")
		}
		dir = absPath(filepath.Join("runs", s.Name+"-"+time.Now().Format("20060102-150405")))
	}
	// Kernels other than the running one: one lab VM per label runs the
	// same scenario inside (--inside-lab).
	in := runner.LabInner{Binary: *agentBin}
	if len(labCells) > 0 {
		for _, k := range s.Kernels {
			in.Labels = append(in.Labels, k.Label)
		}
		if in.Scenario, in.ScenarioData, err = labScenario(s); err != nil {
			return err
		}
		if !s.Builtin {
			if d, err := filepath.Abs(filepath.Dir(s.File)); err == nil {
				in.Args = append(in.Args, "--scenario-dir", d)
			}
		}
		if shardSpec != "" { // resolved: the lab VM has no CI variables
			in.Args = append(in.Args, "--shard", shardSpec)
		}
		in.Args = append(in.Args, kernels.args()...)
		if *reps > 0 {
			in.Args = append(in.Args, "--repetitions", fmt.Sprint(*reps))
		}
		in.Args = append(in.Args, sets.args()...)
	}
	h := labHost()
	tab := loadTable(stderr, "vnetbench: ")
	est, _ := estimateCells(cells, kernelLabels(s), h.KVM, tab)
	if *insideLab != "" {
		est = estimateInsideLab(cells, h.KVM, tab)
	}
	if !*dry && *insideLab == "" && !*resume {
		a := scenarioArgs{name: pos[0], kernels: *kernels, label: *label, sets: *sets}
		if err := checkMaxTime(stderr, est, a, s, h.KVM, tab, *maxTime); err != nil {
			return err
		}
	}
	if *dry {
		fmt.Fprintf(stdout, "scenario %s, seed %d%s: %d samples in this order\n", s.Name, sd, shardNote, len(cells))
		fmt.Fprintf(stdout, "accelerator: %s\n", accelDesc(h.KVM))
		est.Write(stdout, "", describeKernel(s, h.KVM))
		labVMs := map[string][]string{} // label -> the lab VM's QEMU argv
		for _, label := range runner.LabKernels(labCells) {
			argv, warnings, err := runner.LabVMArgs(label, runner.KernelCells(labCells, label), h)
			if err != nil {
				return err // run refuses it: so does its dry run
			}
			for _, w := range warnings {
				fmt.Fprintf(stderr, "vnetbench: warning: %s\n", w)
			}
			labVMs[label] = argv
		}
		var warned []string
		for i := range cells {
			c := &cells[i]
			accel, warn, err := runner.PlanAccel(c, h.KVM)
			if err != nil {
				return err // run refuses it: so does its dry run
			}
			if warn != "" && c.Kernel.Running() && !slices.Contains(warned, warn) {
				warned = append(warned, warn)
				fmt.Fprintf(stderr, "vnetbench: warning: %s\n", warn)
			}
			fmt.Fprintf(stdout, "\n%3d. %s rep %d (kernel %s, %s)\n", i+1, c.Name, c.Rep+1, kernelName(c), accel)
			for _, l := range runner.Commands(c, accel, cells...) {
				fmt.Fprintf(stdout, "     %s\n", l)
			}
		}
		if len(labCells) > 0 {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if in.ScenarioData != nil { // the copy the run would write
				in.Scenario = filepath.Join(abs, results.LabScenario)
			}
			fmt.Fprintf(stdout, "\nlab VMs, one per kernel, each running the cells of its kernel:\n")
			have := runner.LabKernels(labCells)
			for _, l := range in.Labels { // the order the labs run in
				if !slices.Contains(have, l) {
					continue
				}
				_, args := runner.LabInnerArgs(abs, l, sd, in)
				fmt.Fprintf(stdout, "  %s: vnetbench %s\n", l, strings.Join(args, " "))
				fmt.Fprintf(stdout, "    in %s\n", proc.Quote(labVMs[l]))
			}
		}
		return nil
	}
	fmt.Fprintf(stdout, "scenario %s, seed %d%s, %d samples\n", s.Name, sd, shardNote, len(cells))
	if len(s.Sets) > 0 {
		fmt.Fprintf(stdout, "overrides: %s\n", setArgs(setStrings(s.Sets)))
	}
	if *insideLab == "" { // the run outside said it for the whole run
		est.Write(stdout, "", describeKernel(s, h.KVM))
	}
	runStart := time.Now() // from when the host lock is held (Started)
	var started sync.Once

	// First SIGINT/SIGTERM: ctx (from main) is cancelled and the runner
	// tears down. A second one forces an exit.
	forced := make(chan os.Signal, 1)
	finished := make(chan struct{})
	defer close(finished)
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

	prog := newProgress(stdout, len(cells), *insideLab == "") // a lab's console is a tty, but nobody watches it
	prog.est = est
	opts := runner.Options{Dir: dir, Resume: *resume, Scenario: s.Name, Seed: sd, Version: version, Sets: sets.strings(),
		Image: runner.VMImagesBuilder(*agentBin), Progress: prog.update, Log: prog.logWriter(), LockWait: *lockWait,
		Started: func() {
			started.Do(func() {
				runStart = time.Now()
				fmt.Fprintf(stdout, "run directory %s\n", dir)
			})
		},
		Shard: shardSpec, ShardSource: shardSource}
	if runOptionsHook != nil {
		runOptionsHook(&opts)
	}
	report1 := func(sum *runner.Summary) {
		if sum == nil {
			return
		}
		for _, w := range sum.Warnings {
			fmt.Fprintf(stderr, "vnetbench: warning: %s\n", w)
		}
		fmt.Fprintf(stdout, "%d samples written, %d already there; results in %s\n", sum.Samples, sum.Skipped, sum.Dir)
	}
	var measured error // cells failed, the run went on (exit code 1)
	if len(labCells) > 0 {
		sum, err := runner.RunLab(ctx, labCells, opts, in)
		report1(sum)
		if err != nil && !cellsFailed(err) {
			prog.finish()
			return err
		}
		measured = err
	}
	// A shard that gets no cell (more shards than cells) still writes its
	// run directory: env.json and an empty results.jsonl, for merge.
	if len(cells) == 0 && shardSpec != "" {
		fmt.Fprintf(stdout, "shard %s has no cells of this scenario (%d distinct cells over %s shards): writing an empty run directory for merge\n",
			shardSpec, len(distinct), shardSpec[strings.Index(shardSpec, "/")+1:])
	}
	if len(hostCells) > 0 || len(cells) == 0 {
		if _, serr := os.Stat(filepath.Join(dir, results.ResultsFile)); serr == nil && len(labCells) > 0 {
			opts.Resume = true
		}
		sum, err := runner.Run(ctx, hostCells, opts)
		prog.finish()
		report1(sum)
		if err != nil && !cellsFailed(err) {
			return err
		}
		measured = errors.Join(measured, err)
	}
	prog.finish()
	if *insideLab == "" { // the run outside records the lab's samples as nested
		if recordEstimates {
			recordRates(stderr, tab, dir, cells, h.KVM, runStart)
		}
		fmt.Fprintf(stdout, "wall time %s (estimate %s)\n", estimate.Duration(time.Since(runStart)), estimate.Duration(est.Total))
	}
	if len(cells) > 0 {
		printTable(stdout, stderr, dir)
	}
	return measured
}

// runOptionsHook, when set, edits the runner's options before a run: a
// test seam (cmd_shard_test.go runs the CLI as separate processes with a
// fake guest agent and generator). Nil in the real binary.
var runOptionsHook func(*runner.Options)

// recordEstimates: a run adds what it measured to the host's estimate
// table (tests turn it off).
var recordEstimates = true

// recordRates adds what the run measured to the host's estimate table.
func recordRates(stderr io.Writer, tab *estimate.Table, dir string, cells []scenarios.Cell, st qemu.KVMStatus, since time.Time) {
	obs, err := runner.Observations(dir, cells, st, since)
	if err == nil {
		tab.Add(obs, time.Now())
		err = tab.Save(estimateDir())
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
	var le *runner.LabError
	return errors.As(err, &ke) || errors.As(err, &le)
}

// labScenario is how the run inside a lab VM finds the scenario: a
// built-in by name, or a file's content, which runner.RunLab copies into
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
	r, err := report.Build(set, report.Options{By: "kernel", Alpha: report.DefaultAlpha, Top: 10})
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
