package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// The oops and panic of the CI run whose TCG lab kernel failed (Debian
// 6.12, corrupt EFLAGS 1fcf1772: the emulator's fault, not the kernel's).
const (
	tcgOops  = "[  139.204711] Oops: general protection fault, probably for non-canonical address 0xdead000000000122: 0000 [#1] PREEMPT SMP NOPTI"
	tcgPanic = "[  139.215092] Kernel panic - not syncing: Fatal exception in interrupt"
	tcgBug   = "[   88.310440] BUG: kernel NULL pointer dereference, address: 0000000000000008"
)

// retryLab is a lab of kernel a (3 repetitions of one cell) on fake
// QEMUs: boot i (from 0) runs the inner run's samples[i] more samples
// (-1: all that are left), as the inner run does, skipping those its
// results hold (--resume), then prints fault[i] (a kernel panic, which
// with panic=-1 ends QEMU) or reports the inner exit.
type retryLab struct {
	t       *testing.T
	dir     string
	cells   []scenarios.Cell
	samples []int
	fault   [][]string
	args    [][]string // each boot's inner command line
	ex      *fakeqemu.Exec
	bin     string
}

func newRetryLab(t *testing.T, samples []int, fault [][]string) *retryLab {
	l := &retryLab{t: t, dir: t.TempDir(), samples: samples, fault: fault}
	img, mods, bin := fakeqemu.Lab(t, l.dir, "6.12.57+deb12-amd64")
	l.bin = bin
	l.cells = loadCells(t, fmt.Sprintf(`
name: labretry
kernels: [{label: a, image: %[1]s, modules: %[2]s}]
backend: tap
guest: {kernel: {image: %[1]s}}
generator: {trafgen: {duration: 1s}}
repetitions: 3
timeouts: {boot: 1m, traffic: 1m}
`, img, mods))
	l.ex = &fakeqemu.Exec{Script: l.script}
	return l
}

func (l *retryLab) run(accel qemu.Accel) (*runner.Summary, error) {
	boot := func(ctx context.Context, c labvm.Config) (*labvm.Result, error) {
		l.args = append(l.args, c.Args)
		return labvm.Run(ctx, c)
	}
	o := runner.Options{Dir: filepath.Join(l.dir, "run"), Seed: 1, LockPath: filepath.Join(l.dir, "lock"), Exec: l.ex, Accel: accel}
	return Run(l.t.Context(), l.cells, o, Inner{Scenario: "labretry.yaml", Binary: l.bin, Labels: []string{"a"}, Boot: boot})
}

// script is boot len(l.args)-1's console.
func (l *retryLab) script(string) []fakeqemu.Step {
	i := len(l.args) - 1
	l.innerRun(l.samples[i], slices.Contains(l.args[i], "--resume"))
	steps := []fakeqemu.Step{
		{Line: "[    0.000000] Linux version 6.12.57+deb12-amd64"},
		{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvInit, Kernel: "6.12.57+deb12-amd64"})},
		{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvModules, StepMS: 12})},
		{After: 20 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvStart})},
	}
	if i < len(l.fault) && l.fault[i] != nil {
		for _, line := range l.fault[i] {
			steps = append(steps, fakeqemu.Step{After: 20 * time.Millisecond, Line: line})
		}
		return append(steps, fakeqemu.Step{After: 20 * time.Millisecond, PowerOff: true})
	}
	return append(steps, fakeqemu.Step{After: 50 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
		fakeqemu.Step{After: 20 * time.Millisecond, PowerOff: true})
}

// innerRun appends n samples (-1: all) of the cells the inner run does
// not hold yet, as `vnetbench run --inside-lab a` (with resume) does.
func (l *retryLab) innerRun(n int, resume bool) {
	inner := filepath.Join(l.dir, "run", results.LabDir("a"))
	var w *results.Writer
	var err error
	if resume {
		w, err = results.Open(inner)
	} else {
		w, err = results.Create(inner, results.Env{Run: "inner-a", KernelRelease: "6.12.57+deb12-amd64"})
	}
	if err != nil {
		l.t.Errorf("inner run (resume %v): %v", resume, err)
		return
	}
	defer w.Close()
	for _, c := range Inside(l.cells, "a") {
		if n == 0 {
			return
		}
		if w.Done(c.Name, "a", c.Rep) {
			continue
		}
		w.Append(results.Sample{Cell: c.Name, Rep: c.Rep, Kernel: "a", Axes: c.Axes, Start: time.Now(), WindowS: 1,
			Metrics: map[metric.Key]float64{"tx_pps": 1000}})
		n--
	}
}

// noDuplicates fails on two samples of one cell, kernel and repetition.
func noDuplicates(t *testing.T, samples []results.Sample) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range samples {
		k := fmt.Sprintf("%s %s %d", s.Cell, s.Kernel, s.Rep)
		if seen[k] {
			t.Errorf("sample %s twice", k)
		}
		seen[k] = true
	}
}

// A TCG lab whose kernel panics in the middle of its run (the CI run's
// "Fatal exception in interrupt") is booted again once: the inner run
// resumes, the sample the first lab finished is kept and not run again,
// the other two are measured in the second lab and say why, the first
// console is kept as console-1.log, and the run passes.
func TestLabTCGFaultRetriedOnce(t *testing.T) {
	l := newRetryLab(t, []int{1, -1}, [][]string{{tcgOops, "[  139.204790] RIP: 0010:kmem_cache_alloc_noprof+0x6e/0x2f0", tcgPanic}})
	sum, err := l.run(qemu.TCG)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(l.args) != 2 || slices.Contains(l.args[0], "--resume") || !slices.Contains(l.args[1], "--resume") {
		t.Fatalf("inner command lines %q, want two boots, the second resuming", l.args)
	}
	run := filepath.Join(l.dir, "run")
	set, err := results.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 3 || len(set.Failed) != 0 || sum.Samples != 3 {
		t.Fatalf("%d samples, %d failed, summary %d; want 3 measured", len(set.Samples), len(set.Failed), sum.Samples)
	}
	noDuplicates(t, set.Samples)
	for i, s := range set.Samples {
		noted := slices.ContainsFunc(s.Warnings, func(w string) bool {
			return strings.Contains(w, "Oops: general protection fault") && strings.Contains(w, "lab/a/console-1.log") && strings.Contains(w, "TCG")
		})
		if noted != (i > 0) {
			t.Errorf("sample %d (rep %d) warnings %q: want the retry noted only in the second lab's samples", i, s.Rep, s.Warnings)
		}
	}
	if !slices.ContainsFunc(sum.Warnings, func(w string) bool {
		return strings.Contains(w, "kernel a") && strings.Contains(w, "Oops: general protection fault") && strings.Contains(w, "lab/a/console-1.log")
	}) {
		t.Errorf("summary warnings %q lack the retry", sum.Warnings)
	}
	if r := set.Env["a"].LabRetry; r == nil || !strings.Contains(r.Why, "Oops: general protection fault") || r.Console != "lab/a/console-1.log" {
		t.Errorf("kernel a's env lab_retry %+v, want the oops and the kept console", r)
	}
	first, err := os.ReadFile(filepath.Join(run, "lab", "a", "console-1.log"))
	if err != nil || !strings.Contains(string(first), "Fatal exception in interrupt") {
		t.Errorf("first console kept: %v %q", err, first)
	}
	if second, err := os.ReadFile(filepath.Join(run, results.LabConsole("a"))); err != nil || strings.Contains(string(second), "Fatal exception") {
		t.Errorf("second console: %v %q", err, second)
	}
}

// A second fault fails the kernel as one fault did before, with both
// faults in its error and in the failed samples (both consoles among
// their artifacts); the samples the labs finished are kept.
func TestLabTCGFaultTwiceFails(t *testing.T) {
	l := newRetryLab(t, []int{1, 1}, [][]string{{tcgOops, tcgPanic}, {tcgBug}})
	_, err := l.run(qemu.TCG)
	var le *Error
	if !errors.As(err, &le) || len(le.Failed) != 1 || le.Of != 1 {
		t.Fatalf("err = %v, want 1 of 1 kernels failed", err)
	}
	var fe *qemu.FaultError
	if msg := le.Failed[0].Error(); !strings.Contains(msg, "Oops: general protection fault") || !strings.Contains(msg, "BUG: kernel NULL pointer") ||
		!errors.As(le.Failed[0], &fe) || !strings.Contains(fe.Line, "BUG: kernel NULL") {
		t.Errorf("failure %v: want both faults, the second as its cause", le.Failed[0])
	}
	var te *runner.TCGRetryError
	if !errors.As(le.Failed[0], &te) || te.VM != runner.LabVM || te.Console != "lab/a/console-1.log" ||
		!strings.Contains(te.Error(), "the lab VM's kernel failed under TCG") || !strings.Contains(te.Why, "Oops: general protection fault") {
		t.Errorf("failure %v: want the runner's TCGRetryError of a lab VM", le.Failed[0])
	}
	if len(l.args) != 2 {
		t.Errorf("%d boots, want 2", len(l.args))
	}
	set, lerr := results.Load(filepath.Join(l.dir, "run"))
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(set.Samples) != 2 || len(set.Failed) != 1 {
		t.Fatalf("%d samples, %d failed; want 2 kept and 1 failed", len(set.Samples), len(set.Failed))
	}
	noDuplicates(t, append(set.Samples, set.Failed...))
	f := set.Failed[0]
	first, _, _ := strings.Cut(f.Error, "\n")
	if !strings.Contains(first, "Oops: general protection fault") || !strings.Contains(first, "BUG: kernel NULL") ||
		!slices.Equal(f.Artifacts, []string{"lab/a/console.log", "lab/a/console-1.log"}) {
		t.Errorf("failed sample: error's first line %q, artifacts %q", first, f.Artifacts)
	}
}

// Under KVM a lab kernel's fault is a finding, not the emulator's: the
// kernel fails at once, its lab not booted again.
func TestLabKVMFaultNotRetried(t *testing.T) {
	l := newRetryLab(t, []int{1, -1}, [][]string{{tcgOops, tcgPanic}})
	boots := 0
	boot := func(_ context.Context, c labvm.Config) (*labvm.Result, error) {
		boots++
		l.innerRun(1, false)
		return &labvm.Result{Accel: qemu.KVM}, &labvm.Error{Label: c.Label, Phase: "run", Err: &qemu.FaultError{VM: "lab a", Line: tcgOops}}
	}
	o := runner.Options{Dir: filepath.Join(l.dir, "run"), Seed: 1, LockPath: filepath.Join(l.dir, "lock"), Exec: l.ex, Accel: qemu.KVM, KVM: &qemu.KVMStatus{}}
	_, err := Run(t.Context(), l.cells, o, Inner{Scenario: "labretry.yaml", Labels: []string{"a"}, Boot: boot})
	var le *Error
	if !errors.As(err, &le) || len(le.Failed) != 1 || boots != 1 {
		t.Fatalf("err = %v after %d boots, want the kernel failed after 1", err, boots)
	}
	if strings.Contains(err.Error(), "booted again") {
		t.Errorf("err = %v", err)
	}
	if env, err := results.ReadEnv(o.Dir); err != nil || env.Kernels["a"] != nil && env.Kernels["a"].LabRetry != nil {
		t.Errorf("env.json: %v; kernel a's lab recorded as booted again under KVM", err)
	}
}

// Only a lab VM's own kernel faulting or stopping under TCG is booted
// again: not under KVM, not a failed inner run, a deadline, a report of
// lab init, or an interrupted run.
func TestLabRetryReason(t *testing.T) {
	fault := &labvm.Error{Label: "a", Phase: "run", Err: &qemu.FaultError{VM: "lab a", Line: tcgPanic}}
	stopped := &labvm.Error{Label: "a", Phase: "run", Err: fmt.Errorf("qemu exited: %w", labvm.ErrStopped)}
	for _, tc := range []struct {
		name  string
		err   error
		accel qemu.Accel
		want  string
	}{
		{"fault under TCG", fault, qemu.TCG, "Fatal exception in interrupt"},
		{"stopped under TCG", stopped, qemu.TCG, "qemu exited"},
		{"fault under KVM", fault, qemu.KVM, ""},
		{"stopped under KVM", stopped, qemu.KVM, ""},
		{"inner run failed", &labvm.InnerError{Label: "a", Code: 1}, qemu.TCG, ""},
		{"deadline", &labvm.Error{Label: "a", Phase: "run", Err: errors.New("timeout after 1h0m0s")}, qemu.TCG, ""},
		{"interrupted", &labvm.Error{Label: "a", Phase: "run", Err: context.Canceled}, qemu.TCG, ""},
	} {
		got := retryReason(tc.err, tc.accel)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: retryReason = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Before a lab is booted again, its console is kept as console-1.log and
// an inner run directory without results (the lab died before the inner
// run created them) is removed, so the inner run can start there; one
// with results stays, for the inner run to resume.
func TestKeepFirstLab(t *testing.T) {
	for _, withResults := range []bool{false, true} {
		dir := t.TempDir()
		inner := filepath.Join(dir, results.LabDir("a"))
		os.MkdirAll(filepath.Join(inner, results.ArtifactsDir), 0o755)
		os.WriteFile(filepath.Join(inner, results.EnvFile), []byte("{}"), 0o644)
		if withResults {
			os.WriteFile(filepath.Join(inner, results.ResultsFile), nil, 0o644)
		}
		os.WriteFile(filepath.Join(dir, results.LabConsole("a")), []byte(tcgPanic+"\n"), 0o644)
		kept, err := keepFirstLab(dir, "a")
		if err != nil || kept != "lab/a/console-1.log" {
			t.Fatalf("keepFirstLab = %q, %v", kept, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, kept)); err != nil || string(b) != tcgPanic+"\n" {
			t.Errorf("kept console %q, %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(dir, results.LabConsole("a"))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("console.log still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(inner, results.EnvFile)); (err == nil) != withResults {
			t.Errorf("results %v: inner env.json: %v", withResults, err)
		}
	}
}
