package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/labvm"
)

// run runs the lab cells (one lab VM per kernel) and the host cells,
// records what it measured for later estimates and prints the table.
func (r *run) run(ctx context.Context) error {
	fmt.Fprintf(r.Stdout, "scenario %s, seed %d%s, %s\n", r.s.Name, r.seed, r.shardNote, units.Plural(len(r.cells), "sample"))
	if len(r.s.Sets) > 0 {
		fmt.Fprintf(r.Stdout, "overrides: %s\n", proc.Quote(Spec{Sets: r.s.Sets}.SetArgs()))
	}
	if r.InsideLab == "" { // the run outside said it for the whole run
		r.est.Write(r.Stdout, "", DescribeKernel(r.s, r.host.KVM))
	}
	runStart := time.Now()                                         // from when the host lock is held (Started)
	prog := newProgress(r.Stdout, len(r.cells), r.InsideLab == "") // a lab's console is a tty, but nobody watches it
	prog.est = r.est
	opts := r.runnerOptions(prog, &runStart)
	measured, err := r.runCells(ctx, opts, prog)
	prog.finish()
	if err != nil {
		return err
	}
	if r.InsideLab == "" { // the run outside records the lab's samples as nested
		if r.RecordEstimates {
			recordRates(r.Stderr, r.tab, r.EstimateDir, r.Dir, r.cells, r.host.KVM, runStart)
		}
		fmt.Fprintf(r.Stdout, "wall time %s (estimate %s)\n", estimate.Duration(time.Since(runStart)), estimate.Duration(r.est.Total))
	}
	if len(r.cells) > 0 {
		printTable(r.Stdout, r.Stderr, r.Dir)
	}
	return measured
}

// runnerOptions are the runner's options for this run; runStart is set
// when the host lock is held.
func (r *run) runnerOptions(prog *progress, runStart *time.Time) runner.Options {
	var started sync.Once
	sets := make([]string, len(r.Scenario.Sets))
	for i, st := range r.Scenario.Sets {
		sets[i] = st.String()
	}
	opts := runner.Options{Dir: r.Dir, ChosenBase: r.chosenBase, Resume: r.Resume, Scenario: r.s.Name, Seed: r.seed, Version: r.Version, Sets: sets,
		Image: runner.VMImagesBuilder(r.AgentBinary), Progress: prog.update, Log: prog.logWriter(), LockWait: r.LockWait,
		Started: func() {
			started.Do(func() {
				*runStart = time.Now()
				fmt.Fprintf(r.Stdout, "run directory %s\n", r.Dir)
			})
		},
		Shard: r.shardSpec, ShardSource: r.shardSource, SeedSource: r.seedSource}
	if r.InsideLab == "" && r.shardSpec == "" { // a shard's: merge's run says it
		opts.Command = r.Scenario.Argv(r.seed)
		if r.Repetitions > 0 {
			opts.Command = append(opts.Command, "--repetitions", strconv.Itoa(r.Repetitions))
		}
	}
	if path := r.Getenv(labvm.TurnEnv); r.InsideLab != "" && path != "" {
		// Labs side by side: this lab measures in its turn.
		opts.Turn = func(ctx context.Context) error { return labvm.AwaitTurn(ctx, r.Stdout, path) }
	}
	if d := r.Getenv(runner.GuestStatesEnv); d != "" {
		// The run inside a lab: start guests from the states earlier labs
		// saved, and save this lab's for the next (the lab keeps them).
		opts.GuestStates = &runner.GuestStates{Dirs: []string{d}, Save: true}
	}
	if r.EditRunner != nil {
		r.EditRunner(&opts)
	}
	return opts
}

// runCells runs the lab cells, then the host cells. measured is the
// cells that failed while the run went on (exit 1); err ends the run.
func (r *run) runCells(ctx context.Context, opts runner.Options, prog *progress) (measured, err error) {
	report1 := func(sum *runner.Summary) {
		if sum == nil {
			return
		}
		for _, w := range sum.Warnings {
			r.warnf("%s", w)
		}
		fmt.Fprintf(r.Stdout, "%s written, %d already there; results in %s\n", units.Plural(sum.Samples, "sample"), sum.Skipped, sum.Dir)
	}
	if len(r.labCells) > 0 {
		sum, err := lab.Run(ctx, r.labCells, opts, r.in)
		report1(sum)
		if err != nil && !CellsFailed(err) {
			return nil, err
		}
		measured = err
	}
	// A shard that gets no cell (more shards than cells) still writes its
	// run directory: env.json and an empty results.jsonl, for merge.
	if len(r.cells) == 0 && r.shardSpec != "" {
		fmt.Fprintf(r.Stdout, "shard %s has no cells of this scenario (%d distinct cells over %s shards): writing an empty run directory for merge\n",
			r.shardSpec, len(r.distinct), r.shardSpec[strings.Index(r.shardSpec, "/")+1:])
	}
	if len(r.hostCells) > 0 || len(r.cells) == 0 {
		if _, serr := os.Stat(filepath.Join(r.Dir, results.ResultsFile)); serr == nil && len(r.labCells) > 0 {
			opts.Resume = true
		}
		sum, err := runner.Run(ctx, r.hostCells, opts)
		prog.finish()
		report1(sum)
		if err != nil && !CellsFailed(err) {
			return nil, err
		}
		measured = errors.Join(measured, err)
	}
	return measured, nil
}

// CellsFailed reports whether err is a run that went to its end with
// some cells failed (a guest kernel fault, or a kernel's lab): the table
// of the others is still printed, and the CLI exits 1.
func CellsFailed(err error) bool {
	var ke *runner.KernelFaultError
	var le *lab.Error
	return errors.As(err, &ke) || errors.As(err, &le)
}
