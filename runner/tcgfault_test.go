package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// A guest kernel fault under TCG is most likely the emulator's (a Debian
// 6.12 kernel died of "Fatal exception in interrupt" with EFLAGS bits no
// x86 CPU sets): the sample runs once more on a fresh guest. Under KVM it
// is a finding and fails the cell at once. These tests play QEMU with
// fakeqemu (query-kvm answers by -accel) and write the fault into the
// guest's console while the second sample's traffic runs.

const refaultScenario = `
name: refault
backend: tap
guest: {vcpus: 1, memory: 128MiB, accel: %s}
generator:
  trafgen: {duration: 1s}
repetitions: 2
timeouts: {boot: 20s, teardown: 10s}
`

// faultLine is the fault the n-th generator's guest prints.
func faultLine(n int) string {
	return fmt.Sprintf("[  %d.000001] Kernel panic - not syncing: Fatal exception in interrupt (generator %d)", 139+n, n)
}

// loadRun loads the results of the run in dir and fails t unless they
// hold samples measured and failed failed samples.
func loadRun(t *testing.T, dir string, samples, failed int) *results.Set {
	t.Helper()
	set, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != samples || len(set.Failed) != failed {
		t.Fatalf("results: %d samples, %d failed; want %d and %d", len(set.Samples), len(set.Failed), samples, failed)
	}
	return set
}

// runFaulting runs refaultScenario under accel on a fake QEMU; the
// generators numbered in faulting (from 0) find their guest's kernel
// faulting 300 ms into their traffic, which would last a minute.
func runFaulting(t *testing.T, accel string, faulting ...int) (*harness, *fakeqemu.Exec, *Summary, error) {
	t.Helper()
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	h := newHarness(t)
	fake := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step { return nil }}
	h.opts.Exec = qemuRouter{fake}
	h.opts.KVM = &qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: qemu.ModuleKVMIntel, Nested: "Y"}
	h.opts.Image = func(context.Context, scenarios.Guest, GuestContents) (*GuestImage, error) {
		return &GuestImage{Kernel: "/fake/vmlinuz", Initrd: "/fake/initramfs"}, nil
	}
	h.mkGen = func(n int) *fakeGen {
		g := &fakeGen{d: 200 * time.Millisecond}
		if slices.Contains(faulting, n) {
			g.d, g.started = time.Minute, make(chan struct{})
			go func() {
				<-g.started
				time.Sleep(300 * time.Millisecond)
				appendConsole(t, h.opts.Dir, faultLine(n), "[  140.000002] RIP: 0010:kmem_cache_alloc_noprof+0x5d/0x2a0",
					"[  140.000003] EFLAGS: 1fcf1772")
			}()
		}
		return g
	}
	sum, err := Run(t.Context(), loadCells(t, fmt.Sprintf(refaultScenario, accel)), h.opts)
	checkNothingLeft(t, sum)
	return h, fake, sum, err
}

// Under TCG a guest kernel fault in the second sample runs that sample
// once more on a fresh guest: both samples are there once, the first as
// measured, the second saying why it ran again (the fault line, TCG, the
// kept console), and the faulted guest's console is kept under its own
// name among the second sample's artifacts.
func TestRunTCGGuestFaultRetried(t *testing.T) {
	h, fake, _, err := runFaulting(t, "tcg", 1)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	set := loadRun(t, h.opts.Dir, 2, 0)
	if n := len(fake.Procs()); n != 2 {
		t.Errorf("%d guests started, want 2 (a fresh one after the fault)", n)
	}
	for rep, s := range set.Samples {
		if s.Rep != rep {
			t.Fatalf("sample %d is rep %d: a sample is missing or twice", rep, s.Rep)
		}
	}
	first, second := set.Samples[0], set.Samples[1]
	kept := results.FaultConsole(second.Cell, second.Kernel, 1)
	for _, w := range first.Warnings {
		if strings.Contains(w, "fresh guest") {
			t.Errorf("the sample measured before the fault says it ran again: %q", w)
		}
	}
	var note string
	for _, w := range second.Warnings {
		if strings.Contains(w, "fresh guest") {
			note = w
		}
	}
	for _, want := range []string{"Kernel panic - not syncing: Fatal exception in interrupt (generator 1)", "TCG", kept} {
		if !strings.Contains(note, want) {
			t.Errorf("the second sample's warning %q lacks %q (warnings %q)", note, want, second.Warnings)
		}
	}
	if first.FaultRerun != "" || second.FaultRerun != strings.TrimSpace(faultLine(1)) {
		t.Errorf("fault_rerun %q and %q, want none and the fault line", first.FaultRerun, second.FaultRerun)
	}
	if !slices.Contains(second.Artifacts, kept) {
		t.Errorf("second sample's artifacts %q lack the kept console %s", second.Artifacts, kept)
	}
	b, rerr := os.ReadFile(filepath.Join(h.opts.Dir, kept))
	if rerr != nil || !strings.Contains(string(b), "EFLAGS: 1fcf1772") {
		t.Errorf("kept console %s: %v, %q; want the faulted guest's console", kept, rerr, b)
	}
}

// Under TCG a second fault in the same cell fails it as before, naming
// both fault lines; the failed sample lists both guests' consoles.
func TestRunTCGGuestFaultTwice(t *testing.T) {
	h, fake, sum, err := runFaulting(t, "tcg", 1, 2)
	var ke *KernelFaultError
	if !errors.As(err, &ke) || len(ke.Failed) != 1 || ke.Of != 2 {
		t.Fatalf("err = %v, want a KernelFaultError with 1 of 2 cells failed", err)
	}
	var ce *CellError
	if !errors.As(ke.Failed[0], &ce) || ce.Phase != "traffic" || ce.Rep != 1 {
		t.Errorf("failure %v: want rep 2's traffic phase", ke.Failed[0])
	}
	for _, want := range []string{faultLine(1), faultLine(2), "TCG"} {
		if !strings.Contains(err.Error(), strings.TrimSpace(want)) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	var te *TCGRetryError
	if !errors.As(err, &te) || te.VM != GuestVM || !strings.Contains(te.Error(), "the guest's kernel failed under TCG") {
		t.Errorf("err = %v, want a TCGRetryError of the guest", err)
	}
	if sum.Samples != 1 || len(fake.Procs()) != 2 {
		t.Errorf("%d samples, %d guests started; want 1 and 2 (no third attempt)", sum.Samples, len(fake.Procs()))
	}
	set := loadRun(t, h.opts.Dir, 1, 1)
	f := set.Failed[0]
	kept := results.FaultConsole(f.Cell, f.Kernel, 1)
	for _, want := range []string{"(generator 1)", "(generator 2)", kept} {
		if !strings.Contains(f.Error, want) {
			t.Errorf("failed sample's error lacks %q:\n%s", want, f.Error)
		}
	}
	if !slices.Contains(f.Artifacts, kept) || !slices.Contains(f.Artifacts, results.ConsoleLog(1)) {
		t.Errorf("failed sample's artifacts %q, want the kept console %s and %s", f.Artifacts, kept, results.ConsoleLog(1))
	}
}

// Under KVM a guest kernel fault is a finding: the cell fails at once,
// nothing runs again and no console is moved.
func TestRunKVMGuestFaultNotRetried(t *testing.T) {
	h, fake, sum, err := runFaulting(t, "kvm", 1)
	var ke *KernelFaultError
	if !errors.As(err, &ke) || len(ke.Failed) != 1 || ke.Of != 2 {
		t.Fatalf("err = %v, want a KernelFaultError with 1 of 2 cells failed", err)
	}
	if !strings.Contains(err.Error(), "(generator 1)") || strings.Contains(err.Error(), "once more") {
		t.Errorf("err = %v, want the fault, not retried", err)
	}
	if sum.Samples != 1 || len(fake.Procs()) != 1 || !fake.Procs()[0].KVM {
		t.Errorf("%d samples, %d guests started; want 1 and 1 KVM guest", sum.Samples, len(fake.Procs()))
	}
	set, lerr := results.Load(h.opts.Dir)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(set.Failed) != 1 || !slices.Equal(set.Failed[0].Artifacts, []string{results.ConsoleLog(0)}) {
		t.Errorf("failed samples %+v, want one naming console-0.log only", set.Failed)
	}
	kept, _ := filepath.Glob(filepath.Join(h.opts.Dir, results.ArtifactsDir, "*", "*", "*-fault-console.log"))
	if len(kept) != 0 {
		t.Errorf("consoles kept under KVM: %q", kept)
	}
}

// KeepConsole moves a console within the run directory, making the kept
// one's directory; a missing console wraps fs.ErrNotExist (runner/lab
// boots a lab whose VM wrote none) and a path out of the directory is
// refused.
func TestKeepConsole(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, results.ArtifactsDir), 0o755)
	os.WriteFile(filepath.Join(dir, results.ConsoleLog(0)), []byte(faultLine(1)), 0o644)
	kept := results.FaultConsole("tap/pktgen", "host", 0)
	if err := KeepConsole(dir, results.ConsoleLog(0), kept); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, kept)); err != nil || string(b) != faultLine(1) {
		t.Errorf("kept console: %q, %v", b, err)
	}
	if err := KeepConsole(dir, results.ConsoleLog(0), kept); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("keep a missing console: %v, want fs.ErrNotExist", err)
	}
	if err := KeepConsole(dir, "../console.log", kept); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("keep a console out of the run directory: %v, want refused", err)
	}
}
