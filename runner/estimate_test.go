package runner

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Two kernels, tap and tap+vhost (one paired guest per kernel), two
// vCPU counts (a guest each): 2 kernels x 2 cells-per-guest x 2 guests
// x 2 repetitions.
const estimateScenario = `
name: est
kernels: [{label: running}, {label: stock, debian: "6.1"}]
backend: [tap, tap+vhost]
guest: {vcpus: [1, 2]}
generator:
  pktgen: {count: 1000000}
repetitions: 2
warmup: 1s
`

func TestGuestBootsAndEstimateSamples(t *testing.T) {
	cells := loadCells(t, estimateScenario)
	order := RunOrder(cells, []string{"running", "stock"})
	if len(order) != 16 || order[0].Kernel.Label != "stock" || order[15].Kernel.Label != "running" {
		t.Fatalf("run order: %d samples, first kernel %s", len(order), order[0].Kernel.Label)
	}
	boots := GuestBoots(order)
	// As Run reuses guests: a boot whenever the guest key changes within a
	// kernel, and at each kernel's first sample.
	for i := range order {
		first := i == 0 || order[i-1].Kernel.Label != order[i].Kernel.Label
		changed := first || order[i-1].Guest.VCPUs != order[i].Guest.VCPUs
		if boots[i] != changed {
			t.Errorf("sample %d (%s %s vcpus %d): boot %v, want %v", i, order[i].Kernel.Label, order[i].Name, order[i].Guest.VCPUs, boots[i], changed)
		}
	}
	st := qemu.KVMStatus{Why: "none"}
	ss := EstimateSamples(order, st, true)
	for i, s := range ss {
		wantClass := estimate.TCGNested
		if order[i].Kernel.Running() {
			wantClass = estimate.TCG
		}
		if s.Class != wantClass || s.Workload != "pktgen" || s.Packets != 1e6 || s.Warmup != time.Second || s.Boot != boots[i] {
			t.Errorf("sample %d: %+v", i, s)
		}
		if s.Lab != (i == 0) || (s.Lab && s.LabClass != estimate.TCG) {
			t.Errorf("sample %d: lab %v %s; want the lab VM's boot on the first sample only", i, s.Lab, s.LabClass)
		}
	}
	// With nested KVM the lab's guests are kvm-nested, the host's kvm.
	ss = EstimateSamples(order, qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: qemu.ModuleKVMIntel, Nested: "Y"}, true)
	if ss[0].Class != estimate.KVMNested || ss[0].LabClass != estimate.KVM || ss[15].Class != estimate.KVM {
		t.Errorf("nested KVM classes: %s (lab %s), %s", ss[0].Class, ss[0].LabClass, ss[15].Class)
	}
}

// Two lab kernels one after the other: the second lab's guests start
// from the states the first lab saved, not booted (the 1- and the 2-vCPU
// guest); side by side, both labs boot theirs. The estimate prints the starts as their own
// line.
const restoreScenario = `
name: est
kernels: [{label: stock, debian: "6.1"}, {label: patched, debian: "6.1"}]
backend: [tap, tap+vhost]
guest: {vcpus: [1, 2]}
generator:
  pktgen: {count: 1000000}
repetitions: 2
`

func TestEstimateRestores(t *testing.T) {
	order := RunOrder(loadCells(t, restoreScenario), []string{"stock", "patched"})
	st := qemu.KVMStatus{Why: "none"}
	for _, inTurn := range []bool{true, false} {
		boots := map[string]int{}
		restores := map[string]int{}
		for _, s := range EstimateSamples(order, st, inTurn) {
			if s.Boot {
				boots[s.Kernel]++
			}
			if s.Restore {
				restores[s.Kernel]++
			}
		}
		// The order interleaves the guests, so each lab boots them more
		// than once; in turn, every one of patched's is a start.
		if boots["stock"] < 2 || restores["stock"] != 0 {
			t.Errorf("labs in turn %v: stock boots %d, starts %d", inTurn, boots["stock"], restores["stock"])
		}
		if inTurn && (boots["patched"] != 0 || restores["patched"] != boots["stock"]) {
			t.Errorf("labs in turn: patched boots %d, starts %d, want %d starts", boots["patched"], restores["patched"], boots["stock"])
		}
		if !inTurn && (boots["patched"] != boots["stock"] || restores["patched"] != 0) {
			t.Errorf("side by side: patched boots %d, starts %d, want %d boots", boots["patched"], restores["patched"], boots["stock"])
		}
	}
	ss := EstimateSamples(order, st, true)
	e := estimate.Of(ss, (*estimate.Table)(nil))
	n := 0
	for _, s := range ss {
		if s.Restore {
			n++
		}
	}
	var lines []string
	for _, l := range e.Kernels[1].Lines {
		lines = append(lines, fmt.Sprintf("%s x%d %v", l.What, l.N, l.Time))
	}
	want := fmt.Sprintf("%s x%d %v", estimate.LineRestores, n, time.Duration(n)*estimate.Defaults[estimate.TCGNested].Restore)
	if !slices.Contains(lines, want) || slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, estimate.LineBoots) }) {
		t.Errorf("patched's lines %q, want %q and no boots", lines, want)
	}
}

// Observations reads a finished run: boots once per guest, count-bound
// rates from the cell's packets and the window, overhead per sample, the
// lab VM's boot and setup; failed and earlier samples are left out.
func TestObservations(t *testing.T) {
	cells := loadCells(t, estimateScenario)
	dir := filepath.Join(t.TempDir(), "run")
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w, err := results.Create(dir, results.Env{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	lab := cells[0]
	for _, c := range cells {
		if !c.Kernel.Running() {
			lab = c
			break
		}
	}
	sample := func(c scenarios.Cell, rep int, start time.Time, boot string, window float64) results.Sample {
		return results.Sample{Run: "r", Cell: c.Name, Rep: rep, Kernel: c.Kernel.Label, Start: start, WindowS: window,
			Metrics: map[metric.Key]float64{"tx_pps": 1, "cell_overhead_s": 2}, Labels: map[string]string{"accel": "tcg", "boot_s": boot, "perf_report_s": "0.5"}}
	}
	failed := sample(lab, 1, since.Add(time.Minute), "200", 1)
	failed.Error = "guest kernel panic"
	for _, s := range []results.Sample{
		sample(lab, 0, since.Add(-time.Hour), "999", 1), // an earlier invocation's (--resume)
		sample(lab, 0, since.Add(time.Minute), "150.5", 1000),
		sample(lab, 1, since.Add(2*time.Minute), "150.5", 500), // the same guest
		failed,
	} {
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	env, err := results.ReadEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	env.Kernels = map[string]*results.Env{"stock": {Extra: map[string]string{"lab_boot_s": "40.0", "lab_setup_s": "5.0"}}}
	if err := results.WriteEnv(dir, *env); err != nil {
		t.Fatal(err)
	}
	obs, err := Observations(dir, cells, qemu.KVMStatus{Why: "none"}, since)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 3 {
		t.Fatalf("observations %+v", obs)
	}
	o := obs[0]
	if o.Workload != "pktgen" || o.Class != estimate.TCGNested || len(o.Boots) != 0 ||
		!slices.Equal(o.PPS, []float64{1000, 2000}) || !slices.Equal(o.Overhead, []float64{2.5, 2.5}) {
		t.Errorf("pktgen: %+v", o)
	}
	// The guest's boot is the guest's, whichever workload's cell booted it.
	if g := obs[1]; g.Workload != estimate.WorkloadGuest || g.Class != estimate.TCGNested || !slices.Equal(g.Boots, []float64{150.5}) {
		t.Errorf("guest: %+v", g)
	}
	if l := obs[2]; l.Workload != "lab" || l.Class != estimate.TCG || !slices.Equal(l.Boots, []float64{45}) {
		t.Errorf("lab: %+v", l)
	}
}

// A guest started from a saved state counts as a start (the table's
// WorkloadRestore), not as a boot of its workload.
func TestObservationsRestore(t *testing.T) {
	cells := loadCells(t, estimateScenario)
	lab := cells[slices.IndexFunc(cells, func(c scenarios.Cell) bool { return !c.Kernel.Running() })]
	dir := filepath.Join(t.TempDir(), "run")
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w, err := results.Create(dir, results.Env{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for rep := range 2 { // one guest: its start counts once
		s := results.Sample{Run: "r", Cell: lab.Name, Rep: rep, Kernel: lab.Kernel.Label, Start: since.Add(time.Minute), WindowS: 1,
			Metrics: map[metric.Key]float64{"tx_pps": 1}, Labels: map[string]string{"accel": "tcg", LabelRestoreS: "12.5", LabelGuestState: "ab"}}
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	obs, err := Observations(dir, cells, qemu.KVMStatus{Why: "none"}, since)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 2 || len(obs[0].Boots) != 0 || obs[1].Workload != estimate.WorkloadRestore || obs[1].Class != estimate.TCGNested || !slices.Equal(obs[1].Boots, []float64{12.5}) {
		t.Errorf("observations %+v", obs)
	}
}
