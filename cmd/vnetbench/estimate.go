package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// defaultMaxTime is the estimate above which run refuses (--max-time).
const defaultMaxTime = time.Hour

// addMaxTimeFlag registers --max-time on fs.
func addMaxTimeFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("max-time", defaultMaxTime, "refuse a run whose estimate passes `DURATION` (0 = no limit); plan and run print the estimate and a shorter form")
}

// loadTable reads the host's measured rates; a broken file is a
// warning and the defaults.
func (cl *cli) loadTable(stderr io.Writer, prefix string) *estimate.Table {
	t, err := estimate.Load(cl.estimateDir)
	if err != nil {
		fmt.Fprintf(stderr, "%swarning: estimate: %v\n", prefix, err)
	}
	return t
}

// estimateCells estimates the samples cells (in scenarios.Order: one
// per sample) on a host whose KVM probe gave st. It returns the estimate and the cells in the order the
// run goes through them (its PerSample order).
func estimateCells(cells []scenarios.Cell, labels []string, st qemu.KVMStatus, t *estimate.Table) (*estimate.Estimate, []scenarios.Cell) {
	order := runner.RunOrder(cells, labels)
	return estimate.Of(runner.EstimateSamples(order, st), t), order
}

// notDone drops the cells whose sample the run directory holds already:
// with --resume the estimate is of what is left. A directory it cannot
// read leaves the cells as they are (the run says what is wrong).
func notDone(dir string, cells []scenarios.Cell) []scenarios.Cell {
	set, err := results.Load(dir)
	if err != nil {
		return cells
	}
	done := map[results.Key]bool{}
	for _, s := range set.Samples {
		if !s.Warmup {
			done[results.Key{Cell: s.Cell, Kernel: s.Kernel, Rep: s.Rep}] = true
		}
	}
	var out []scenarios.Cell
	for _, c := range cells {
		if !done[results.Key{Cell: c.Name, Kernel: kernelName(&c), Rep: c.Rep}] {
			out = append(out, c)
		}
	}
	return out
}

// estimateInsideLab is estimateCells for the run inside a lab VM (its
// cells are on the running kernel, the lab's): its guests are nested,
// and figures of nested guests apply.
func estimateInsideLab(cells []scenarios.Cell, st qemu.KVMStatus, t *estimate.Table) *estimate.Estimate {
	ss := runner.EstimateSamples(cells, st)
	for i := range ss {
		ss[i].Class = estimate.Nested(ss[i].Class)
	}
	return estimate.Of(ss, t)
}

// samplesOf is s's samples in run order with seed (the order changes
// the guest boots little).
func samplesOf(s *scenarios.Scenario, seed int64) []scenarios.Cell {
	cells, _ := runner.Distinct(s.Expand())
	return scenarios.Order(cells, seed)
}

func kernelLabels(s *scenarios.Scenario) []string {
	var out []string
	for _, k := range s.Kernels {
		out = append(out, k.Label)
	}
	return out
}

// describeKernel is a kernel label with where it runs and the class its
// guests get, for the estimate's lines.
func describeKernel(s *scenarios.Scenario, st qemu.KVMStatus) func(string) string {
	return func(label string) string {
		for _, k := range s.Kernels {
			if k.Label != label {
				continue
			}
			if k.Running() {
				return label + " (the running kernel)"
			}
			return fmt.Sprintf("%s (in a lab VM under %s)", label, estimate.ClassOf(labAccelOf(st), false))
		}
		return label
	}
}

func labAccelOf(st qemu.KVMStatus) string {
	if st.Usable {
		return "kvm"
	}
	return "tcg"
}

// scenarioArgs is how a command line names a scenario and its changes.
type scenarioArgs struct {
	name    string // built-in name or file, as given
	kernels kernelFlags
	label   string
	sets    setFlags
}

func (a scenarioArgs) load(extra []scenarios.Set) (*scenarios.Scenario, error) {
	sets := append(slices.Clone([]scenarios.Set(a.sets)), extra...)
	s, err := scenarios.Resolve(a.name, sets...)
	if err != nil {
		return nil, err
	}
	if err := a.kernels.apply(s); err != nil {
		return nil, err
	}
	return s, applyLabel(s, a.label)
}

// command is `vnetbench run` with these arguments and extra overrides
// (an extra override replaces a given one of the same key).
func (a scenarioArgs) command(extra []scenarios.Set) string {
	argv := []string{"vnetbench", "run", a.name}
	argv = append(argv, a.kernels.args()...)
	if a.label != "" {
		argv = append(argv, "--label", a.label)
	}
	for _, st := range a.sets {
		if !slices.ContainsFunc(extra, func(x scenarios.Set) bool { return x.Key == st.Key }) {
			argv = append(argv, "--set", st.String())
		}
	}
	for _, st := range extra {
		argv = append(argv, "--set", st.String())
	}
	return proc.Quote(argv)
}

// shorter is a shorter form of a run: its command and estimate.
type shorter struct {
	Command  string        `json:"command"`
	Estimate time.Duration `json:"estimate_ns"`
	Fits     bool          `json:"fits"` // within the limit
}

// shortWindow is the window the shorter form gives count-bound cells.
const shortWindow = 10 * time.Second

// shorterForm finds overrides that bring scenario a's estimate within
// limit: count-bound cells bounded to shortWindow by time (as their
// workload says, workload.Counter) and fewer repetitions, longest first.
// nil when no override shortens it; Fits false when even the shortest
// passes the limit.
func shorterForm(a scenarioArgs, s *scenarios.Scenario, st qemu.KVMStatus, t *estimate.Table, limit time.Duration) *shorter {
	var within []scenarios.Set
	reps := 1
	for _, c := range s.Expand() {
		reps = max(reps, c.Repetitions)
		if _, known := c.Generator.Config.Length(); known {
			continue
		}
		if ct, ok := c.Generator.Config.(workload.Counter); ok {
			for _, kv := range ct.Within(shortWindow) {
				set := scenarios.Set{Key: "generator." + c.Generator.Kind + "." + kv.Key, Value: kv.Value}
				if !slices.Contains(within, set) {
					within = append(within, set)
				}
			}
		}
	}
	var tries [][]scenarios.Set
	for _, r := range []int{3, 2, 1} {
		if r > reps || (r == reps && len(within) == 0) {
			continue
		}
		try := slices.Clone(within)
		if r < reps {
			try = append(try, scenarios.Set{Key: "repetitions", Value: fmt.Sprint(r)})
		}
		tries = append(tries, try)
	}
	var last *shorter
	for _, try := range tries {
		ss, err := a.load(try)
		if err != nil {
			continue // an override the scenario refuses: not a way out
		}
		e, _ := estimateCells(samplesOf(ss, 1), kernelLabels(ss), st, t)
		last = &shorter{Command: a.command(try), Estimate: e.Total, Fits: limit <= 0 || e.Total <= limit}
		if last.Fits {
			return last
		}
	}
	return last
}

// writeShorter says how to get within the limit.
func writeShorter(w io.Writer, prefix string, sh *shorter, limit time.Duration) {
	switch {
	case sh == nil:
		fmt.Fprintf(w, "%sshorter form: none from overrides; raise --max-time, or split the cells over machines with --shard I/N\n", prefix)
	case sh.Fits:
		fmt.Fprintf(w, "%sshorter form (about %s, within %s): %s\n", prefix, estimate.Duration(sh.Estimate), estimate.Duration(limit), sh.Command)
	default:
		fmt.Fprintf(w, "%sshortest form (about %s, still above %s; raise --max-time or use --shard I/N): %s\n", prefix, estimate.Duration(sh.Estimate), estimate.Duration(limit), sh.Command)
	}
}

// addBuilds puts the build part of s's kernels (lab.PlanBuilds, from the
// harness cache alone) into est and returns the build modes.
func addBuilds(ctx context.Context, cache string, est *estimate.Estimate, s *scenarios.Scenario, t *estimate.Table) []lab.BuildMode {
	modes := lab.PlanBuilds(ctx, cache, s.Kernels, kernelLabels(s))
	var items []estimate.BuildItem
	for _, m := range modes {
		items = append(items, m.Items...)
	}
	if est != nil {
		est.AddBuild(items, t)
	}
	return modes
}
