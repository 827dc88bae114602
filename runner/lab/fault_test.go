package lab

import (
	"errors"
	"fmt"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/runner"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Two kernels in lab mode, on fake QEMUs: kernel a's lab kernel locks up
// in the middle of its run, in both of its lab VMs (under TCG a lab whose
// kernel faulted is booted again once), kernel b's lab finishes. The run
// fails (Error) but kernel b's cells still ran; a's cells are recorded as
// failed with the lockup and both lab consoles; a's labs ended seconds
// after the report, not at their deadline.
func TestRunLabKernelFaultOtherKernelsRun(t *testing.T) {
	dir := t.TempDir()
	img, mods, bin := fakeqemu.Lab(t, dir, "6.1.0-99-fake")
	cells := loadCells(t, fmt.Sprintf(`
name: labfault
kernels:
  - {label: a, image: %[1]s, modules: %[2]s}
  - {label: b, image: %[1]s, modules: %[2]s}
backend: tap
guest: {kernel: {image: %[1]s}}
generator:
  trafgen: {duration: 1s}
repetitions: 2
timeouts: {boot: 1m, traffic: 1m}
`, img, mods))
	run := filepath.Join(dir, "run")
	up := []fakeqemu.Step{
		{Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvInit, Kernel: "6.1.0-99-fake"})},
		{After: 50 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvModules, StepMS: 12})},
		{After: 50 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvStart})},
	}
	ex := &fakeqemu.Exec{Script: func(name string) []fakeqemu.Step {
		switch name {
		case "vnb-lab-a":
			return append(up,
				fakeqemu.Step{After: 200 * time.Millisecond, Line: "[  25.485293] rcu: INFO: rcu_preempt self-detected stall on CPU"},
				fakeqemu.Step{After: 10 * time.Millisecond, Line: "[  25.485293]  text_poke_bp_batch+0x29f/0x300"})
		case "vnb-lab-b":
			// The run inside writes its samples into the shared run
			// directory, then lab init reports its exit and powers off.
			inner := filepath.Join(run, results.LabDir("b"))
			iw, err := results.Create(inner, results.Env{Run: "inner-b", KernelRelease: "6.1.0-99-fake"})
			if err != nil {
				t.Error(err)
				return nil
			}
			for _, c := range Inside(cells, "b") {
				iw.Append(results.Sample{Cell: c.Name, Rep: c.Rep, Kernel: "b", Axes: c.Axes, Start: time.Now(), WindowS: 1,
					Metrics: map[metric.Key]float64{"tx_pps": 1000}})
			}
			iw.Close()
			return append(up, fakeqemu.Step{After: 100 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
				fakeqemu.Step{After: 50 * time.Millisecond, PowerOff: true})
		}
		t.Errorf("unexpected VM %s", name)
		return nil
	}}
	var prog []runner.Progress
	o := runner.Options{Dir: run, Scenario: "labfault", Seed: 1, LockPath: filepath.Join(dir, "lock"), Exec: ex, Accel: qemu.TCG,
		Progress: func(p runner.Progress) { prog = append(prog, p) }}
	start := time.Now()
	sum, err := Run(t.Context(), cells, o, Inner{Scenario: "labfault.yaml", Binary: bin, Labels: []string{"a", "b"}, SideBySide: 2})
	var le *Error
	if !errors.As(err, &le) || len(le.Failed) != 1 || le.Of != 2 {
		t.Fatalf("err = %v, want a Error with 1 of 2 kernels failed", err)
	}
	var labErr *labvm.Error
	var fe *qemu.FaultError
	if !errors.As(le.Failed[0], &labErr) || labErr.Label != "a" || labErr.Phase != "run" || !errors.As(err, &fe) {
		t.Errorf("failure %v: want lab a's run phase and the kernel fault", le.Failed[0])
	}
	if d := time.Since(start); d > 2*qemu.FaultGrace+20*time.Second {
		t.Errorf("took %v", d)
	}
	if sum == nil || sum.Samples != 2 {
		t.Errorf("summary %+v, want kernel b's 2 samples", sum)
	}
	set, lerr := results.Load(run)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(set.Samples) != 2 || len(set.Failed) != 2 {
		t.Fatalf("%d samples, %d failed; want b's 2 and a's 2", len(set.Samples), len(set.Failed))
	}
	for _, s := range set.Samples {
		if s.Kernel != "b" {
			t.Errorf("measured sample of kernel %s", s.Kernel)
		}
	}
	for _, f := range set.Failed {
		if f.Kernel != "a" || !strings.Contains(f.Error, "self-detected stall") || !strings.Contains(f.Error, "text_poke_bp_batch") ||
			f.Labels["phase"] != "lab run" || !slices.Equal(f.Artifacts, []string{"lab/a/console.log", "lab/a/console-1.log"}) {
			t.Errorf("failed sample %+v", f)
		}
	}
	// One progress step per sample: the labs boot side by side (forced,
	// whatever this host's CPUs hold), and
	// neither says it is ready to measure (no turn event): b's two
	// measured, then a's two failed (with the lab's error) after the
	// fault's grace.
	var steps []string
	for _, p := range prog[1:] {
		switch {
		case p.Failed != nil:
			steps = append(steps, fmt.Sprintf("%d %s failed", p.Done, p.Kernel))
		case p.Sample != nil:
			steps = append(steps, fmt.Sprintf("%d %s", p.Done, p.Kernel))
		default:
			steps = append(steps, fmt.Sprintf("%d %s ?", p.Done, p.Cell))
		}
	}
	if got := strings.Join(steps, ", "); got != "1 b, 2 b, 3 a failed, 4 a failed" {
		t.Errorf("progress %s", got)
	}
	boots := map[string]int{}
	for _, p := range ex.Procs() {
		boots[p.Name]++
	}
	if boots["vnb-lab-a"] != 2 || boots["vnb-lab-b"] != 1 {
		t.Errorf("lab VMs booted %v, want a's twice, b's once", boots)
	}
	for _, p := range ex.Procs() {
		select {
		case <-p.Done():
		default:
			t.Errorf("fake QEMU %s still running", p.Name)
		}
	}
}

// A lab's run deadline is the sum of its cells' own (each repetition
// counted) plus a margin, never a fixed hour.
func TestLabRunTimeout(t *testing.T) {
	cells := loadCells(t, `
name: t
kernels: [{label: a, debian: "6.1"}]
backend: [tap, tap+vhost]
generator:
  trafgen: {duration: 10s}
repetitions: 3
timeouts: {boot: 2m, setup: 30s, teardown: 10s}
`)
	// Per cell: boot 2m + setup 30s + traffic (10s + 1m) + teardown 10s,
	// plus 30s for the closing counters; 6 cells; plus the margin.
	want := 6*(2*time.Minute+30*time.Second+70*time.Second+10*time.Second+30*time.Second) + labRunMargin
	if got := labRunTimeout(cells); got != want {
		t.Errorf("labRunTimeout = %v, want %v", got, want)
	}
	// On a TCG host the guests nest under TCG: each boot deadline is
	// raised to NestedTCGBoot (NestedBoot), 7 min more a cell, setup to
	// NestedTCGSetup (counted twice: the closing counters' too), and
	// traffic by NestedTCGTraffic.
	want += 6 * (NestedTCGBoot - 2*time.Minute + 2*(NestedTCGSetup-30*time.Second) + NestedTCGTraffic)
	if got := labConfigT(t, "a", cells, runner.Options{}, Inner{}, nil).Timeouts.Run; got != want {
		t.Errorf("labConfig's run timeout = %v, want %v", got, want)
	}
}
