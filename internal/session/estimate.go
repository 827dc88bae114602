package session

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// DefaultMaxTime is the estimate above which `vnetbench run` refuses a
// run unless told otherwise (--max-time).
const DefaultMaxTime = time.Hour

// LoadTable reads the host's measured rates from dir; a broken file is a
// warning on w (after prefix) and the defaults.
func LoadTable(w io.Writer, prefix, dir string) *estimate.Table {
	t, err := estimate.Load(dir)
	if err != nil {
		fmt.Fprintf(w, "%swarning: estimate: %v\n", prefix, err)
	}
	return t
}

// EstimateCells estimates the samples cells (in scenarios.Order: one per
// sample) on a host whose KVM probe gave st, its lab VMs one after the
// other when labsInTurn (runner.EstimateSamples). It returns the
// estimate and the cells in the order the run goes through them (its
// PerSample order).
func EstimateCells(cells []scenarios.Cell, labels []string, st qemu.KVMStatus, t *estimate.Table, labsInTurn bool) (*estimate.Estimate, []scenarios.Cell) {
	order := runner.RunOrder(cells, labels)
	return estimate.Of(runner.EstimateSamples(order, st, labsInTurn), t), order
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

// estimateInsideLab is EstimateCells for the run inside a lab VM (its
// cells are on the running kernel, the lab's): its guests are nested,
// and figures of nested guests apply.
func estimateInsideLab(cells []scenarios.Cell, st qemu.KVMStatus, t *estimate.Table) *estimate.Estimate {
	ss := runner.EstimateSamples(cells, st, false)
	for i := range ss {
		ss[i].Class = estimate.Nested(ss[i].Class)
	}
	return estimate.Of(ss, t)
}

// SamplesOf is s's samples in run order with seed (the order changes
// the guest boots little).
func SamplesOf(s *scenarios.Scenario, seed int64) []scenarios.Cell {
	cells, _ := runner.Distinct(s.Expand())
	return scenarios.Order(cells, seed)
}

// DescribeKernel is a kernel label with where it runs and the class its
// guests get, for the estimate's lines.
func DescribeKernel(s *scenarios.Scenario, st qemu.KVMStatus) func(string) string {
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

// AccelDesc describes a host's KVM for the headers of plan and the dry
// run.
func AccelDesc(st qemu.KVMStatus) string {
	if !st.Usable {
		return "tcg (KVM is not usable: " + st.Why + ")"
	}
	nested := st.Nested
	if nested == "" {
		nested = "unknown"
	}
	return fmt.Sprintf("kvm (a test vCPU ran; %s, nested=%s)", st.Vendor, nested)
}

// Shorter is a shorter form of a run: its command and estimate.
type Shorter struct {
	Command  string        `json:"command"`
	Estimate time.Duration `json:"estimate_ns"`
	Fits     bool          `json:"fits"` // within the limit
}

// shortWindow is the window the shorter form gives count-bound cells.
const shortWindow = 10 * time.Second

// ShorterForm finds overrides that bring the estimate of sp (loaded as
// s) within limit: count-bound cells bounded to shortWindow by time (as
// their workload says, workload.Counter) and fewer repetitions, longest
// first. nil when no override shortens it; Fits false when even the
// shortest passes the limit.
func ShorterForm(sp Spec, s *scenarios.Scenario, st qemu.KVMStatus, t *estimate.Table, limit time.Duration) *Shorter {
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
	var last *Shorter
	for _, try := range tries {
		ss, err := sp.load(try)
		if err != nil {
			continue // an override the scenario refuses: not a way out
		}
		e, _ := EstimateCells(SamplesOf(ss, 1), KernelLabels(ss), st, t, true)
		last = &Shorter{Command: sp.Command(try), Estimate: e.Total, Fits: limit <= 0 || e.Total <= limit}
		if last.Fits {
			return last
		}
	}
	return last
}

// WriteShorter says how to get within the limit.
func WriteShorter(w io.Writer, prefix string, sh *Shorter, limit time.Duration) {
	switch {
	case sh == nil:
		fmt.Fprintf(w, "%sshorter form: none from overrides; raise --max-time, or split the cells over machines with --shard I/N\n", prefix)
	case sh.Fits:
		fmt.Fprintf(w, "%sshorter form (about %s, within %s): %s\n", prefix, estimate.Duration(sh.Estimate), estimate.Duration(limit), sh.Command)
	default:
		fmt.Fprintf(w, "%sshortest form (about %s, still above %s; raise --max-time or use --shard I/N): %s\n", prefix, estimate.Duration(sh.Estimate), estimate.Duration(limit), sh.Command)
	}
}

// checkMaxTime refuses, before anything starts, a run whose estimate
// passes limit (0 = none): the estimate and the shorter form on stderr,
// a bad-input error.
func checkMaxTime(stderr io.Writer, est *estimate.Estimate, sp Spec, s *scenarios.Scenario, st qemu.KVMStatus, tab *estimate.Table, limit time.Duration) error {
	if limit <= 0 || est.Total <= limit {
		return nil
	}
	est.Write(stderr, "vnetbench: ", DescribeKernel(s, st))
	sh := ShorterForm(sp, s, st, tab, limit)
	WriteShorter(stderr, "vnetbench: ", sh, limit)
	if sh == nil || !sh.Fits {
		// No shorter form fits: pointing at one would send the user
		// into a second refusal.
		return fault.Input("run: the estimate, about %s, passes --max-time %s, and no shorter form fits; raise --max-time (e.g. --max-time %s), or split the cells over machines with --shard I/N",
			estimate.Duration(est.Total), estimate.Duration(limit), roundUpHours(est.Total))
	}
	return fault.Input("run: the estimate, about %s, passes --max-time %s; run the shorter form above, or raise --max-time (e.g. --max-time %s)",
		estimate.Duration(est.Total), estimate.Duration(limit), roundUpHours(est.Total))
}

// roundUpHours is d rounded up to whole hours, as --max-time takes it.
func roundUpHours(d time.Duration) string {
	return fmt.Sprintf("%dh", (d+time.Hour-1)/time.Hour)
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

// AddBuilds puts the build part of s's kernels (lab.PlanBuilds, from the
// harness cache in cache alone) into est and returns the build modes.
func AddBuilds(ctx context.Context, cache string, est *estimate.Estimate, s *scenarios.Scenario, t *estimate.Table) []lab.BuildMode {
	modes := lab.PlanBuilds(ctx, cache, s.Kernels, KernelLabels(s))
	var items []estimate.BuildItem
	for _, m := range modes {
		items = append(items, m.Items...)
	}
	if est != nil {
		est.AddBuild(items, t)
	}
	return modes
}
