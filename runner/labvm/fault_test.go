package labvm

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// fakeLab returns a lab Config whose VM is a fake QEMU playing script.
func fakeLab(t *testing.T, script []fakeqemu.Step) (Config, *fakeqemu.Exec) {
	t.Helper()
	dir := t.TempDir()
	img, mods, bin := fakeqemu.Lab(t, dir, "6.1.0-99-fake")
	ex := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step { return script }}
	return Config{Label: "stock", Kernel: Kernel{Image: img, Modules: mods}, RunDir: filepath.Join(dir, "run"),
		Binary: bin, CacheDir: filepath.Join(dir, "cache"), Accel: qemu.TCG, Args: []string{"run", "x"}, Exec: ex}, ex
}

var labUp = []fakeqemu.Step{
	{Line: "[    0.000000] Linux version 6.1.0-99-fake"},
	{After: 50 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvInit, Kernel: "6.1.0-99-fake"})},
	{After: 50 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvModules, StepMS: 12})},
	{After: 50 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvStart})},
}

// A lab kernel that reports a lockup on its console fails the lab in the
// phase it was in, qemu.FaultGrace after the report (not at the run's
// deadline, an hour away here), with the fault and the trace after it
// in the error; the VM is stopped.
func TestLabKernelFaultFailsFast(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []fakeqemu.Step
		phase  string
		want   string
	}{
		{"soft lockup in the run", append(append([]fakeqemu.Step{}, labUp...),
			fakeqemu.Step{After: 300 * time.Millisecond, Line: "perf-stress: 10/200 sessions"},
			fakeqemu.Step{After: 100 * time.Millisecond, Line: "[   48.123456] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [perf:153]"},
			fakeqemu.Step{After: 100 * time.Millisecond, Line: "[   48.123457] RIP: 0010:smp_call_function_many_cond+0xf1/0x330"},
		), "run", "soft lockup - CPU#1 stuck"},
		{"panic at boot", []fakeqemu.Step{
			{Line: "[    0.000000] Linux version 6.1.0-99-fake"},
			{After: 100 * time.Millisecond, Line: "[    1.234567] Kernel panic - not syncing: VFS: Unable to mount root fs"},
		}, "boot", "Kernel panic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ex := fakeLab(t, tc.script)
			c.Timeouts = Timeouts{Run: time.Hour, Boot: time.Hour}
			start := time.Now()
			_, err := Run(t.Context(), c)
			d := time.Since(start)
			var le *Error
			var fe *qemu.FaultError
			if !errors.As(err, &le) || le.Phase != tc.phase || !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a %s-phase lab error with the kernel fault", err, tc.phase)
			}
			if !strings.Contains(fe.Line, tc.want) || !strings.Contains(le.Tail, tc.want) || !strings.Contains(err.Error(), "console.log") {
				t.Errorf("error lacks the fault line or the console:\n%v", err)
			}
			if d > qemu.FaultGrace+10*time.Second {
				t.Errorf("failed after %v, want about qemu.FaultGrace (%v)", d, qemu.FaultGrace)
			}
			if ps := ex.Procs(); len(ps) != 1 || !ps[0].Killed() {
				t.Errorf("the lab VM was not stopped")
			}
		})
	}
}

// A lab kernel that panics ends its VM at once (panic=-1, -no-reboot):
// the lab fails with the fault line as its cause, not as a VM that
// stopped without a word; a VM that powers off without the inner exit
// and without a fault line has stopped (ErrStopped).
func TestLabPanicEndsVM(t *testing.T) {
	panicked := append(append([]fakeqemu.Step{}, labUp...),
		fakeqemu.Step{After: 50 * time.Millisecond, Line: "[  139.204711] Oops: general protection fault, probably for non-canonical address 0xdead000000000122: 0000 [#1] PREEMPT SMP NOPTI"},
		fakeqemu.Step{After: 10 * time.Millisecond, Line: "[  139.215092] Kernel panic - not syncing: Fatal exception in interrupt"},
		fakeqemu.Step{After: 10 * time.Millisecond, PowerOff: true})
	c, _ := fakeLab(t, panicked)
	c.Timeouts = Timeouts{Run: time.Hour}
	start := time.Now()
	_, err := Run(t.Context(), c)
	var le *Error
	var fe *qemu.FaultError
	if !errors.As(err, &le) || le.Phase != "run" || !errors.As(err, &fe) || !strings.Contains(fe.Line, "Oops: general protection fault") ||
		!strings.Contains(le.Tail, "Fatal exception in interrupt") || errors.Is(err, ErrStopped) {
		t.Fatalf("err = %v, want the run phase failed by the oops, with the panic in the tail", err)
	}
	if d := time.Since(start); d >= qemu.FaultGrace {
		t.Errorf("took %v: the VM had ended, no grace to wait", d)
	}
	gone := append(append([]fakeqemu.Step{}, labUp...), fakeqemu.Step{After: 50 * time.Millisecond, PowerOff: true})
	c, _ = fakeLab(t, gone)
	_, err = Run(t.Context(), c)
	if !errors.As(err, &le) || le.Phase != "run" || !errors.Is(err, ErrStopped) || errors.As(err, &fe) || !strings.Contains(err.Error(), "qemu exited") {
		t.Errorf("err = %v, want a run-phase lab that stopped", err)
	}
}

// A lab whose run goes silent (no fault line, no exit) fails at the run
// deadline naming the phase; one that powers off after the inner exit
// passes.
func TestLabSilentRunDeadline(t *testing.T) {
	c, _ := fakeLab(t, labUp)
	c.Timeouts = Timeouts{Run: 2 * time.Second}
	start := time.Now()
	_, err := Run(t.Context(), c)
	var le *Error
	if !errors.As(err, &le) || le.Phase != "run" || !strings.Contains(err.Error(), "timeout after 2s") || errors.Is(err, ErrStopped) {
		t.Fatalf("err = %v, want a run-phase timeout", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
	ok := append(append([]fakeqemu.Step{}, labUp...),
		fakeqemu.Step{After: 100 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
		fakeqemu.Step{After: 100 * time.Millisecond, PowerOff: true})
	c, _ = fakeLab(t, ok)
	res, err := Run(t.Context(), c)
	if err != nil || res.KernelRelease != "6.1.0-99-fake" {
		t.Fatalf("res %+v, err %v", res, err)
	}
}

// A lab VM whose console stays empty through its boot (a kernel hung
// before /init) fails as stopped (ErrStopped, which runner/lab boots
// again once under TCG) after silentBoot, not at the boot timeout; a
// short boot timeout is left to bound it alone.
func TestLabSilentBootStops(t *testing.T) {
	c, ex := fakeLab(t, nil)
	c.Timeouts = Timeouts{Boot: time.Hour, Silence: 1500 * time.Millisecond}
	if b := silentBoot(c.Timeouts.withDefaults()); b != 20*time.Minute {
		t.Fatalf("silentBoot of a 1h boot = %v, want 20m", b)
	}
	c.Timeouts.Boot = 9 * time.Second // silent boot bound: 3s
	start := time.Now()
	_, err := Run(t.Context(), c)
	var le *Error
	if !errors.As(err, &le) || le.Phase != "boot" || !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "hung before /init") {
		t.Fatalf("err = %v, want a boot-phase lab that stopped", err)
	}
	if d := time.Since(start); d < 3*time.Second || d > 8*time.Second {
		t.Errorf("failed after %v, want about 3s (a third of the boot timeout)", d)
	}
	if ps := ex.Procs(); len(ps) != 1 || !ps[0].Killed() {
		t.Errorf("the lab VM was not stopped")
	}
	if b := silentBoot(Timeouts{Boot: 2 * time.Minute, Silence: time.Minute}); b != 0 {
		t.Errorf("silentBoot of a 2m boot with a 1m silence = %v, want 0 (the timeout alone)", b)
	}
}

// A lab whose console stays silent while its run goes on (no heartbeat:
// a kernel stuck on every CPU prints nothing) fails after Timeouts.Silence,
// long before its run deadline; heartbeats keep a quiet run alive.
func TestLabSilenceFailsFast(t *testing.T) {
	const silence = 1500 * time.Millisecond
	c, ex := fakeLab(t, labUp)
	c.Timeouts = Timeouts{Run: time.Hour, Silence: silence}
	start := time.Now()
	_, err := Run(t.Context(), c)
	var le *Error
	if !errors.As(err, &le) || le.Phase != "run" || !strings.Contains(err.Error(), "silent") || !errors.Is(err, ErrStopped) {
		t.Fatalf("err = %v, want a run-phase failure for a silent lab (ErrStopped)", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
	if ps := ex.Procs(); len(ps) != 1 || !ps[0].Killed() {
		t.Errorf("the lab VM was not stopped")
	}
	// Quiet but alive: heartbeats every 500 ms for 3 s, then the exit.
	alive := append([]fakeqemu.Step{}, labUp...)
	for i := 0; i < 6; i++ {
		alive = append(alive, fakeqemu.Step{After: 500 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvAlive})})
	}
	alive = append(alive, fakeqemu.Step{After: 100 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
		fakeqemu.Step{After: 50 * time.Millisecond, PowerOff: true})
	c, _ = fakeLab(t, alive)
	c.Timeouts.Silence = silence
	if _, err := Run(t.Context(), c); err != nil {
		t.Fatalf("a quiet lab with heartbeats failed: %v", err)
	}
}

// A lab whose cells need KVM for their guests (guest.accel: kvm) refuses,
// before its VM starts, a kernel that lacks kvm and the vendor module,
// naming what is missing and the config options (exit 2).
func TestLabNeedKVMRefusedBeforeBoot(t *testing.T) {
	for _, flag := range []string{"vmx", "svm"} {
		c, ex := fakeLab(t, labUp)
		c.Accel, c.Nested, c.NeedKVM = qemu.KVM, flag, true
		_, err := Run(t.Context(), c)
		vendor := map[string]string{"vmx": "KVM_INTEL", "svm": "KVM_AMD"}[flag]
		if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "lacks kvm and kvm_") || !strings.Contains(err.Error(), "CONFIG_"+vendor) {
			t.Errorf("%s: err = %v, want a capability error naming kvm and CONFIG_%s", flag, err, vendor)
		}
		if n := len(ex.Procs()); n != 0 {
			t.Errorf("%s: %d QEMUs started for a refused lab", flag, n)
		}
	}
}

// A lab phase that overruns names what to do: a scenario key only where
// one bounds the phase.
func TestTimeoutHint(t *testing.T) {
	for phase, want := range map[string]string{
		"boot": "timeouts.boot", "run": "timeouts.traffic or timeouts.cell", "setup": "console log", "shutdown": "did not power off",
	} {
		h := timeoutHint(phase)
		if !strings.Contains(h, want) || strings.Contains(h, "timeouts.run") || strings.Contains(h, "timeouts.setup") || strings.Contains(h, "timeouts.shutdown") {
			t.Errorf("timeoutHint(%s) = %q, want %q and no key the schema lacks", phase, h, want)
		}
	}
}

// A lab with PinVCPUs pins its vCPU threads (from QMP query-cpus-fast)
// once QEMU runs; a host CPU that cannot take them fails the boot phase
// with the vCPU and CPU named.
func TestLabPinVCPUs(t *testing.T) {
	done := append(append([]fakeqemu.Step{}, labUp...),
		fakeqemu.Step{After: 100 * time.Millisecond, Line: fakeqemu.LabEvent(vmimages.Event{Ev: vmimages.EvExit})},
		fakeqemu.Step{After: 50 * time.Millisecond, PowerOff: true})
	c, _ := fakeLab(t, done)
	c.CPUs, c.PinVCPUs = 1, []int{0}
	if _, err := Run(t.Context(), c); err != nil {
		t.Fatalf("pinned lab: %v", err)
	}
	c, _ = fakeLab(t, done)
	c.CPUs, c.PinVCPUs = 1, []int{1000}
	_, err := Run(t.Context(), c)
	var le *Error
	if !errors.As(err, &le) || le.Phase != "boot" || !strings.Contains(err.Error(), "pin vCPU 0") || !strings.Contains(err.Error(), "host CPU 1000") {
		t.Errorf("pin to a CPU the host lacks: err = %v", err)
	}
}
