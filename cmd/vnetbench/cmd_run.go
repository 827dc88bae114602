package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/session"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/report"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/vmimages"
)

// cmdRun runs a scenario for real and writes a run directory: it parses
// the flags into session.Options and runs them (session.Run), or runs them in
// rounds until decided (session.UntilDecided).
func cmdRun(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "SCENARIO [-o DIR] [--kernel LABEL=SPEC]... [--label NAME] [--set KEY=VALUE]... [--max-time D] [--resume] [--shard I/N|auto] [--dry-run] [--seed N|auto] [--lock-wait D] [--repetitions N] [--until-decided] [--boot-guests]", stderr)
	f := addRunFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageErrorf("run: want exactly one scenario (a built-in name or a file); 'vnetbench list' shows the built-ins")
	}
	if err := f.until.check(); err != nil {
		return err
	}
	if err := vmimages.CheckCacheDir(); err != nil {
		return err
	}
	o, err := f.options(cl, pos[0], stdout, stderr)
	if err != nil {
		return err
	}
	if !o.DryRun {
		defer forceOnSecondSignal(ctx, stderr)()
	}
	if !*f.until.on {
		_, err = session.Run(ctx, o)
		return err
	}
	u, err := f.until.value(ctx, stderr)
	if err != nil {
		return err
	}
	_, err = session.UntilDecided(ctx, o, u)
	return err
}

// runFlags are run's flags.
type runFlags struct {
	sets                      *setFlags
	out, shard, agentBin      *string
	insideLab, label, scenDir *string
	resume, dry               *bool
	seed                      *runner.SeedFlag
	lockWait, maxTime         *time.Duration
	kernels                   *kernelFlags
	reps                      *int
	until                     untilFlags
	bootGuests                *bool
}

func addRunFlags(fs *flag.FlagSet) runFlags {
	var f runFlags
	f.sets = addSetFlag(fs)
	addPerPatchFlag(fs, f.sets)
	f.out = pathFlag(fs, "o", "run `DIR` (default runs/SCENARIO-TIMESTAMP)")
	f.resume = fs.Bool("resume", false, "continue the run in -o DIR, skipping the samples it already holds")
	f.shard = fs.String("shard", "", "run only shard `I/N` of the cells (1-based; join the shards with 'vnetbench merge'); auto or auto/N: from the CI's variables (JOB_COMPLETION_INDEX, CI_NODE_INDEX/CI_NODE_TOTAL, VNETBENCH_SHARD_INDEX/VNETBENCH_SHARD_TOTAL; docs/ci.md)")
	f.dry = fs.Bool("dry-run", false, "print the cells in run order and their commands, change nothing")
	f.seed = addSeedFlag(fs)
	f.agentBin = pathFlag(fs, "agent-binary", "vnetbench binary installed as the guest's /init, with its libraries if dynamically linked (default: this executable)")
	f.lockWait = fs.Duration("lock-wait", 0, "wait up to `DURATION` for another run on this host to finish (default: fail at once)")
	f.insideLab = fs.String("inside-lab", "", "(internal) run the cells of kernel `LABEL` on the running kernel: the run inside a lab VM")
	f.kernels = addKernelFlag(fs)
	f.label = fs.String("label", "", "`NAME` of the running kernel: its column in every table (default: the scenario's label, \"running\"); give each boot of a bare-metal A/B its own")
	f.maxTime = addMaxTimeFlag(fs)
	f.scenDir = pathFlag(fs, "scenario-dir", "(internal) with --inside-lab: `DIR` of the original scenario file, for its relative paths (SCENARIO is a copy)")
	f.reps = fs.Int("repetitions", 0, "`N` repetitions of every cell, replacing the scenario's (0: the scenario's)")
	f.until = addUntilFlags(fs)
	f.bootGuests = fs.Bool("boot-guests", false, "boot every lab's nested guests; by default a later lab starts a guest the first lab booted from that lab's saved state, in seconds (docs/lab.md)")
	return f
}

// options turns the flags into the run's options: a plain value, with
// what the run takes from this machine (cl).
func (f runFlags) options(cl *cli, scenario string, stdout, stderr io.Writer) (session.Options, error) {
	ks, err := f.kernels.parse()
	if err != nil {
		return session.Options{}, err
	}
	o := session.Options{
		Scenario: session.Spec{Name: scenario, Dir: *f.scenDir, Sets: *f.sets, Kernels: ks, Label: *f.label},
		Dir:      *f.out, Resume: *f.resume, DryRun: *f.dry, Seed: f.seed.N, SeedAuto: f.seed.Auto, Repetitions: *f.reps,
		Shard: *f.shard, InsideLab: *f.insideLab, AgentBinary: *f.agentBin,
		LockWait: *f.lockWait, MaxTime: *f.maxTime, Version: version, Stdout: stdout, Stderr: stderr, BootGuests: *f.bootGuests,
	}
	cl.machine(&o)
	return o, nil
}

// untilFlags are run's flags of --until-decided.
type untilFlags struct {
	on        *bool
	maxReps   *int
	maxTime   *time.Duration
	minEffect *string
	failOn    *string
	noiseFrom *string
	fs        *flag.FlagSet // to tell an empty --fail-on from none
}

func addUntilFlags(fs *flag.FlagSet) untilFlags {
	return untilFlags{
		fs:        fs,
		on:        fs.Bool("until-decided", false, "repeat the cells in interleaved rounds until every gated metric of every kernel against the first is SAME or DIFFERENT, or a budget runs out (docs/compare.md); exit 3 when some stay UNKNOWN"),
		maxReps:   fs.Int("max-repetitions", verdict.Default.MaxN(), "with --until-decided: budget of repetitions per cell"),
		maxTime:   fs.Duration("time-budget", 0, "with --until-decided: budget of wall time; no new round starts after it (default: none)"),
		minEffect: fs.String("min-effect", report.DefaultMinEffect.String(), "with --until-decided: smallest change that matters (as compare's)"),
		failOn:    fs.String("fail-on", "", "with --until-decided: the gated metrics, as compare's --fail-on (default: compare's default gates)"),
		noiseFrom: fs.String("noise-from", "", "with --until-decided: "+noiseFromUsage),
	}
}

// check refuses a flag of --until-decided without it: run --fail-on
// 'tx_pps<-3%' ran and exited 0, gating nothing, where a CI job meant a
// gate.
func (f untilFlags) check() error {
	if *f.on {
		return nil
	}
	for _, name := range []string{"fail-on", "max-repetitions", "time-budget", "min-effect", "noise-from"} {
		if given(f.fs, name) {
			return usageErrorf("run: --%s works only with --until-decided: add it, or leave --%s out and gate the finished run with 'vnetbench compare RUN_DIR --fail-on ...'", name, name)
		}
	}
	return nil
}

// value is the flags as session.UntilDecided takes them.
func (f untilFlags) value(ctx context.Context, stderr io.Writer) (session.Until, error) {
	u := session.Until{MaxReps: *f.maxReps, MaxTime: *f.maxTime}
	var err error
	if u.Noise, err = noiseFrom(ctx, *f.noiseFrom, stderr); err != nil {
		return u, err
	}
	if u.MinEffect, err = report.ParseMinEffect(*f.minEffect); err != nil {
		return u, usageErrorf("run: --min-effect: %v", err)
	}
	if given(f.fs, "fail-on") {
		if u.Gates, err = report.ParseGates(*f.failOn); err != nil {
			return u, err
		}
	}
	return u, checkGateMetrics(u.Gates)
}

// checkGateMetrics refuses a gate whose metric no run can have (not in
// the catalogue, nor a perf counter, CPU per packet or drop reason):
// compare would refuse it once the first round had measured, minutes of
// VMs later.
func checkGateMetrics(gates []report.Gate) error {
	for _, g := range gates {
		if _, ok := results.Lookup(metric.Key(g.Metric)); ok {
			continue
		}
		var known []string
		for _, m := range metric.All() {
			known = append(known, string(m.Key))
		}
		for k := range results.Metrics {
			known = append(known, string(k))
		}
		return usageErrorf("run: --fail-on %s: vnetbench measures no metric %q%s; gate one the scenario measures ('vnetbench compare RUN_DIR' of an earlier run names them)", g, g.Metric, schema.DidYouMean(g.Metric, known))
	}
	return nil
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
		case sig := <-forced:
			fmt.Fprintln(stderr, "vnetbench: second signal: exiting without finishing teardown ('vnetbench doctor' lists what is left, 'vnetbench doctor --clean' removes it)")
			os.Exit(128 + int(sig.(syscall.Signal)))
		case <-finished:
		}
	}()
	return func() { close(finished) }
}
