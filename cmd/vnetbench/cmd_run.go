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

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/report"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/proc"
	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdRun runs a scenario for real and writes a run directory.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "SCENARIO [-o DIR] [--kernel LABEL=SPEC]... [--label NAME] [--resume] [--shard I/N] [--dry-run] [--seed N]", stderr)
	out := fs.String("o", "", "run `DIR` (default runs/SCENARIO-TIMESTAMP)")
	resume := fs.Bool("resume", false, "continue the run in -o DIR, skipping the samples it already holds")
	shard := fs.String("shard", "", "run only shard `I/N` of the cells (1-based; join the shards with 'vnetbench merge')")
	dry := fs.Bool("dry-run", false, "print the cells in run order and their commands, change nothing")
	seed := fs.Int64("seed", 0, "seed of the interleaved cell order (default: the scenario's, else random; printed)")
	agentBin := fs.String("agent-binary", "", "vnetbench binary installed as the guest's /init, with its libraries if dynamically linked (default: this executable)")
	lockWait := fs.Duration("lock-wait", 0, "wait up to `DURATION` for another run on this host to finish (default: fail at once)")
	insideLab := fs.String("inside-lab", "", "(internal) run the cells of kernel `LABEL` on the running kernel: the run inside a lab VM")
	kernels := addKernelFlag(fs)
	label := fs.String("label", "", "`NAME` of the running kernel: its column in every table (default: the scenario's label, \"running\"); give each boot of a bare-metal A/B its own")
	scenDir := fs.String("scenario-dir", "", "(internal) with --inside-lab: `DIR` of the original scenario file, for its relative paths (SCENARIO is a copy)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageErrorf("run: want exactly one scenario (a built-in name or a file); 'vnetbench list' shows the built-ins")
	}
	var s *scenarios.Scenario
	if *scenDir != "" {
		s, err = scenarios.LoadFileFrom(pos[0], *scenDir)
	} else {
		s, err = scenarios.Resolve(pos[0])
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
	for _, n := range append(s.Notes, notes...) {
		fmt.Fprintf(stderr, "vnetbench: note: %s\n", n)
	}
	cells := scenarios.Order(distinct, sd)
	shardNote := ""
	if *shard != "" {
		i, n, err := runner.ParseShard(*shard)
		if err != nil {
			return err
		}
		cells = runner.Shard(cells, i, n)
		shardNote = fmt.Sprintf(" (shard %d/%d)", i, n)
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
		dir = filepath.Join("runs", s.Name+"-"+time.Now().Format("20060102-150405"))
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
		if *shard != "" {
			in.Args = append(in.Args, "--shard", *shard)
		}
		in.Args = append(in.Args, kernels.args()...)
	}
	if *dry {
		h := labHost()
		fmt.Fprintf(stdout, "scenario %s, seed %d%s: %d samples in this order\n", s.Name, sd, shardNote, len(cells))
		fmt.Fprintf(stdout, "accelerator: %s\n", accelDesc(h.KVM))
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
	opts := runner.Options{Dir: dir, Resume: *resume, Scenario: s.Name, Seed: sd, Version: version,
		Image: runner.VMImagesBuilder(*agentBin), Progress: prog.update, Log: prog.logWriter(), LockWait: *lockWait,
		Started: func() { started.Do(func() { fmt.Fprintf(stdout, "run directory %s\n", dir) }) }}
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
	if len(hostCells) > 0 {
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
	printTable(stdout, stderr, dir)
	return measured
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
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	start time.Time
	// measured counts samples run in this invocation (not skipped ones).
	measured int
}

func newProgress(w io.Writer, total int, bar bool) *progress {
	p := &progress{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok && bar && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("samples"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionClearOnFinish())
	}
	return p
}

func (p *progress) update(u runner.Progress) {
	if u.Started {
		p.start = time.Now() // the lock is held: work starts now
		if p.bar != nil {
			p.bar.Reset()
		}
		return
	}
	if !u.Skipped {
		p.measured++
	}
	if p.bar != nil {
		p.bar.Describe(u.Cell)
		p.bar.Set(u.Done)
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
	eta := ""
	if p.measured > 0 && u.Done < p.total {
		left := time.Duration(float64(time.Since(p.start)) / float64(p.measured) * float64(p.total-u.Done))
		eta = fmt.Sprintf(" eta %s", left.Round(time.Second))
	}
	fmt.Fprintf(p.w, "[%d/%d] %s rep %d (%s): %s%s%s\n", u.Done, p.total, u.Cell, u.Rep+1, u.Kernel, what, extra, eta)
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
