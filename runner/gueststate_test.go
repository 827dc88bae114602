package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

const stateScenario = `
name: states
backend: tap
guest: {vcpus: 1, memory: 128MiB, accel: tcg}
generator:
  trafgen: {duration: 1s}
repetitions: 1
timeouts: {boot: 20s, teardown: 10s}
`

// stateRun runs stateScenario with a fake QEMU and saved guest states in
// dirs, saving into the run directory's; it returns the fake's QEMUs and
// the run's env.json note on guest states.
func stateRun(t *testing.T, img *GuestImage, dirs ...string) (*harness, []*fakeqemu.Proc, string) {
	t.Helper()
	return stateRunWith(t, img, stateScenario, nil, dirs...)
}

// stateRunWith is stateRun of scenario, with setup changing the harness
// before the run.
func stateRunWith(t *testing.T, img *GuestImage, scenario string, setup func(*harness), dirs ...string) (*harness, []*fakeqemu.Proc, string) {
	t.Helper()
	h := newHarness(t)
	fake := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step { return nil }}
	h.opts.Exec = qemuRouter{fake}
	h.opts.KVM = &qemu.KVMStatus{Why: "test: no KVM"}
	h.opts.Image = func(context.Context, scenarios.Guest, GuestContents) (*GuestImage, error) { return img, nil }
	h.opts.GuestStates = &GuestStates{Dirs: dirs, Save: true}
	if setup != nil {
		setup(h)
	}
	sum, err := Run(t.Context(), loadCells(t, scenario), h.opts)
	checkNothingLeft(t, sum)
	if err != nil {
		t.Fatal(err)
	}
	if s := readSamples(t, h.opts.Dir); len(s) != 1 || s[0].Error != "" {
		t.Fatalf("samples %+v, want one that succeeded", s)
	}
	env, err := results.ReadEnv(h.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return h, fake.Procs(), env.Extra[results.ExtraGuestState]
}

// fakeImage writes a guest image of files named as vmimages names them.
func fakeImage(t *testing.T) *GuestImage {
	dir := filepath.Join(t.TempDir(), "0123456789abcdef")
	os.MkdirAll(dir, 0o755)
	img := &GuestImage{Kernel: filepath.Join(dir, "vmlinux"), Initrd: filepath.Join(dir, "initramfs-0123456789abcdef01234567.cpio")}
	for _, f := range []string{img.Kernel, img.Initrd} {
		if err := os.WriteFile(f, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// TestGuestStates: a run that boots a TCG guest saves its state once the
// agent is ready (QMP stop, migrate, cont) under its run directory; a
// run that finds that state starts QEMU paused for it (-incoming defer),
// loads it and never boots; a state QEMU cannot load is logged and the
// guest booted instead. env.json says which happened.
func TestGuestStates(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	img := fakeImage(t)
	states := t.TempDir()

	h, procs, note := stateRun(t, img, states)
	if len(procs) != 1 || slices.Contains(procs[0].Argv, "-incoming") {
		t.Fatalf("first run: %d QEMUs, want one booted", len(procs))
	}
	if q := strings.Join(procs[0].QMP(), " "); !strings.Contains(q, "stop migrate-set-parameters migrate query-migrate query-status cont") {
		t.Errorf("first run's QMP %q: no state saved between stop and cont", q)
	}
	saved, _ := filepath.Glob(filepath.Join(h.opts.Dir, GuestStateDir, "*"))
	if len(saved) != 1 || !strings.HasPrefix(note, "saved "+filepath.Base(saved[0])) {
		t.Fatalf("saved %q, env.json %q: want one state and its note", saved, note)
	}
	key := filepath.Base(saved[0])
	b, _ := os.ReadFile(saved[0])
	os.WriteFile(filepath.Join(states, key), b, 0o644)

	_, procs, note = stateRun(t, img, states)
	if len(procs) != 1 || !slices.Contains(procs[0].Argv, "-incoming") {
		t.Fatalf("second run: %d QEMUs, want one started for the saved state", len(procs))
	}
	if q := strings.Join(procs[0].QMP(), " "); !strings.Contains(q, "migrate-incoming query-migrate cont") || slices.Contains(procs[0].QMP(), "migrate") {
		t.Errorf("second run's QMP %q: want the state loaded, not saved again", q)
	}
	if note != "restored "+key {
		t.Errorf("second run's env.json note %q, want restored %s", note, key)
	}

	os.WriteFile(filepath.Join(states, key), []byte("not a state"), 0o644)
	_, procs, note = stateRun(t, img, states)
	if len(procs) != 2 || !slices.Contains(procs[0].Argv, "-incoming") || slices.Contains(procs[1].Argv, "-incoming") {
		t.Fatalf("bad state: %d QEMUs, want the restore, then a boot", len(procs))
	}
	if !strings.HasPrefix(note, "not restored "+key+": load guest state") || !strings.HasSuffix(note, "; saved "+key) {
		t.Errorf("bad state: env.json note %q, want the state not restored and the booted guest's saved", note)
	}
}

// TestGuestStateNotResumed: a guest whose state was saved but that QEMU
// would not resume (a lab in CI met "Migration is not finalized yet") is
// stopped and booted again, and the run saves no more states: its cell
// runs, and env.json says why nothing was saved.
func TestGuestStateNotResumed(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	var log syncBuffer
	h, procs, note := stateRunWith(t, fakeImage(t), stateScenario, func(h *harness) {
		h.opts.Log = &log
		h.opts.Exec.(qemuRouter).fake.NoResume = true
	}, t.TempDir())
	if len(procs) != 2 {
		t.Fatalf("%d QEMUs, want the saved guest, then a boot", len(procs))
	}
	if slices.Contains(procs[1].QMP(), "migrate") {
		t.Errorf("second guest's QMP %q: saved again", procs[1].QMP())
	}
	if saved, _ := filepath.Glob(filepath.Join(h.opts.Dir, GuestStateDir, "*")); len(saved) != 0 {
		t.Errorf("states left in the run directory: %q", saved)
	}
	if !strings.HasPrefix(note, "not saved ") || !strings.HasSuffix(note, ": the guest could not be resumed") {
		t.Errorf("env.json note %q, want the state not saved and why", note)
	}
	if !strings.Contains(log.String(), "booting the guest again") {
		t.Errorf("the run's log does not say the guest was booted again:\n%s", log.String())
	}
}

// A guest started from a saved state whose kernel reports a fault on its
// console while its agent is awaited is given up within seconds, as a
// booted guest is, not at the boot deadline (a minute here): the fault is
// logged, the faulted console kept under its own name, and the guest
// booted instead, its state saved anew. So is a lockup: the restored
// kernel's clock goes on from the saved uptime (95 s in a lab), so its
// stamp runs far ahead of its QEMU's age without having jumped.
func TestGuestStateFault(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	img := fakeImage(t)
	states := t.TempDir()
	key := stateSaved(t, img, states)
	for _, fault := range []string{
		"[   97.000001] Kernel panic - not syncing: Fatal exception (restored guest)",
		"[  118.000001] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [init:1]",
	} {
		var faultAt, bootAt atomic.Int64
		var log syncBuffer
		h, procs, note := stateRunWith(t, img, strings.Replace(stateScenario, "boot: 20s", "boot: 60s", 1), func(h *harness) {
			h.opts.Log = &log
			h.opts.DialAgent = func(_ context.Context, vm *qemu.VM) (Agent, error) {
				if !vm.Config.Incoming {
					bootAt.Store(time.Now().UnixNano())
					return h.agent, nil
				}
				go func() {
					time.Sleep(300 * time.Millisecond)
					faultAt.Store(time.Now().UnixNano())
					appendLine(t, vm.Config.ConsoleLog, fault)
				}()
				return &fakeAgent{never: true}, nil
			}
		}, states)
		if len(procs) != 2 || !slices.Contains(procs[0].Argv, "-incoming") || slices.Contains(procs[1].Argv, "-incoming") {
			t.Fatalf("%s: %d QEMUs, want the restore, then a boot", fault, len(procs))
		}
		if f, b := faultAt.Load(), bootAt.Load(); f == 0 || b == 0 {
			t.Errorf("%s: fault printed at %d, guest booted at %d", fault, f, b)
		} else if d := time.Duration(b - f); d > 15*time.Second {
			t.Errorf("the guest booted %v after its restored kernel printed %q, want within 15s (the boot deadline is 60s, the restore's agent wait 30s)", d, fault)
		} else {
			t.Logf("the guest booted %v after its restored kernel printed %q", d.Round(time.Millisecond), fault)
		}
		if b, err := os.ReadFile(filepath.Join(h.opts.Dir, results.ConsoleLog(0))); err != nil || !strings.Contains(string(b), fault) {
			t.Errorf("%s: %v, %q; want the restored guest's console kept", results.ConsoleLog(0), err, b)
		}
		if argv := strings.Join(procs[1].Argv, " "); !strings.Contains(argv, results.ConsoleLog(1)) {
			t.Errorf("the booted guest's argv %q, want its console in %s", argv, results.ConsoleLog(1))
		}
		for _, want := range []string{fault[15:], key, results.ConsoleLog(0), "booting it"} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("the run's log lacks %q:\n%s", want, log.String())
			}
		}
		if want := "not restored " + key + ": kernel fault; saved " + key; note != want {
			t.Errorf("env.json note %q, want %q", note, want)
		}
	}
}

// A guest started from a saved state whose agent stays silent, with no
// fault on its console, is given up after the restore's own agent wait
// (restoreWait: its floor is 3 s here), not at the boot deadline, and
// booted with a whole boot timeout of its own (10 s here, and the boot
// takes 8 s: more than the deadline leaves after the restore). The run's
// log says why and env.json that the state was not used.
func TestGuestStateSilent(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	old := restoreWaitFloor
	restoreWaitFloor = 3 * time.Second
	t.Cleanup(func() { restoreWaitFloor = old })
	img := fakeImage(t)
	states := t.TempDir()
	key := stateSaved(t, img, states)

	const bootAgent = 8 * time.Second
	var restoreAt, bootAt atomic.Int64
	var log syncBuffer
	h, procs, note := stateRunWith(t, img, strings.Replace(stateScenario, "boot: 20s", "boot: 10s", 1), func(h *harness) {
		h.opts.Log = &log
		h.opts.DialAgent = func(_ context.Context, vm *qemu.VM) (Agent, error) {
			if vm.Config.Incoming {
				restoreAt.Store(time.Now().UnixNano())
				appendLine(t, vm.Config.ConsoleLog, "[   95.100000] virtio_net virtio0 eth0: link up")
				return &fakeAgent{never: true}, nil
			}
			bootAt.Store(time.Now().UnixNano())
			return readyAfter{h.agent, bootAgent}, nil
		}
	}, states)
	if len(procs) != 2 || !slices.Contains(procs[0].Argv, "-incoming") || slices.Contains(procs[1].Argv, "-incoming") {
		t.Fatalf("%d QEMUs, want the restore, then a boot", len(procs))
	}
	if r, b := restoreAt.Load(), bootAt.Load(); r == 0 || b == 0 {
		t.Errorf("restored agent awaited at %d, booted one at %d", r, b)
	} else if d := time.Duration(b - r); d < 3*time.Second || d > 8*time.Second {
		t.Errorf("the guest booted %v after its restored agent was awaited, want 3-8s (the restore's agent wait is 3s)", d)
	} else {
		t.Logf("the guest booted %v after its restored agent was awaited", d.Round(time.Millisecond))
	}
	if b, err := os.ReadFile(filepath.Join(h.opts.Dir, results.ConsoleLog(0))); err != nil || !strings.Contains(string(b), "link up") {
		t.Errorf("%s: %v, %q; want the restored guest's console kept", results.ConsoleLog(0), err, b)
	}
	for _, want := range []string{"guest not started from saved state " + key, "its agent did not answer within 3s", "no kernel fault", results.ConsoleLog(0), "booting it"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the run's log lacks %q:\n%s", want, log.String())
		}
	}
	if want := "not restored " + key + ": agent silent for 3s; saved " + key; note != want {
		t.Errorf("env.json note %q, want %q", note, want)
	}
}

// A restore can make the guest kernel's clock jump: its first console
// line after the load is then stamped days ahead (the clocksource
// watchdog's skew report), and its soft lockup watchdog reports the jump
// as a CPU stuck for as long. That is the restore's own doing: the guest
// is started from its state, not booted. A lockup reported after the
// jump, stamped half a minute later, is a fault: the guest is booted.
func TestGuestStateClockJump(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	old := guestFaultGrace
	guestFaultGrace = 200 * time.Millisecond
	t.Cleanup(func() { guestFaultGrace = old })
	img := fakeImage(t)
	states := t.TempDir()
	key := stateSaved(t, img, states)
	jump := []string{
		"[462436.100000] clocksource: timekeeping watchdog on CPU0: Marking clocksource 'tsc' as unstable because the skew is too large:",
		"[462436.144491] watchdog: BUG: soft lockup - CPU#0 stuck for 430630s! [swapper/0:0]",
	}
	for _, tc := range []struct {
		name    string
		console []string
		qemus   int
		note    string
	}{
		{"the restore's jump", jump, 1, "restored " + key},
		{"a lockup after it", append(slices.Clone(jump), "[462466.500000] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [init:1]"), 2,
			"not restored " + key + ": kernel fault; saved " + key},
	} {
		_, procs, note := stateRunWith(t, img, stateScenario, func(h *harness) {
			h.opts.DialAgent = func(_ context.Context, vm *qemu.VM) (Agent, error) {
				if vm.Config.Incoming {
					for _, l := range tc.console {
						appendLine(t, vm.Config.ConsoleLog, l)
					}
					// Ready once the watch has read the console and
					// a fault's grace has passed.
					return readyAfter{h.agent, 1500 * time.Millisecond}, nil
				}
				return h.agent, nil
			}
		}, states)
		if len(procs) != tc.qemus {
			t.Errorf("%s: %d QEMUs, want %d", tc.name, len(procs), tc.qemus)
		}
		if note != tc.note {
			t.Errorf("%s: env.json note %q, want %q", tc.name, note, tc.note)
		}
	}
}

// A state whose load hangs (QEMU's migrate-incoming never completes) is
// given up after the restore's own load bound (restoreLoad: its floor is
// 2 s here), not at the boot deadline (20 s), and the guest booted; the
// log and env.json say so.
func TestGuestStateStuckLoad(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	old := restoreLoadFloor
	restoreLoadFloor = 2 * time.Second
	t.Cleanup(func() { restoreLoadFloor = old })
	img := fakeImage(t)
	states := t.TempDir()
	key := stateSaved(t, img, states)
	os.WriteFile(filepath.Join(states, key), []byte(fakeqemu.StuckState), 0o644)

	var bootAt atomic.Int64
	var log syncBuffer
	start := time.Now()
	_, procs, note := stateRunWith(t, img, stateScenario, func(h *harness) {
		h.opts.Log = &log
		h.opts.DialAgent = func(_ context.Context, vm *qemu.VM) (Agent, error) {
			if vm.Config.Incoming {
				t.Error("the agent of a guest whose state never loaded was dialled")
			}
			bootAt.Store(time.Now().UnixNano())
			return h.agent, nil
		}
	}, states)
	if len(procs) != 2 || !slices.Contains(procs[0].Argv, "-incoming") || slices.Contains(procs[1].Argv, "-incoming") {
		t.Fatalf("%d QEMUs, want the restore, then a boot", len(procs))
	}
	if b := bootAt.Load(); b == 0 {
		t.Error("the guest was not booted")
	} else if d := time.Duration(b - start.UnixNano()); d > 8*time.Second {
		t.Errorf("the guest booted %v after the run began, want within 8s (the load's bound is 2s, the boot deadline 20s)", d)
	}
	for _, want := range []string{"guest not started from saved state " + key, "the state did not load within 2s", "booting it"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the run's log lacks %q:\n%s", want, log.String())
		}
	}
	if want := "not restored " + key + ": state not loaded within 2s; saved " + key; note != want {
		t.Errorf("env.json note %q, want %q", note, want)
	}
}

// stateSaved runs stateScenario once for a saved state, puts the fake's
// state under its key in states and returns the key.
func stateSaved(t *testing.T, img *GuestImage, states string) string {
	t.Helper()
	h, _, _ := stateRun(t, img, states)
	saved, _ := filepath.Glob(filepath.Join(h.opts.Dir, GuestStateDir, "*"))
	if len(saved) != 1 {
		t.Fatalf("saved %q, want one state", saved)
	}
	key := filepath.Base(saved[0])
	os.WriteFile(filepath.Join(states, key), []byte(fakeqemu.State), 0o644)
	return key
}

// appendLine appends line to a console log, as QEMU's file chardev does.
func appendLine(t *testing.T, path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	fmt.Fprintln(f, line)
	f.Close()
}

// readyAfter is an agent whose ready event comes d after WaitReady is
// called (a slow boot).
type readyAfter struct {
	Agent
	d time.Duration
}

func (a readyAfter) WaitReady(ctx context.Context) error {
	select {
	case <-time.After(a.d):
		return a.Agent.WaitReady(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestGuestStateKey: the key leaves out what differs between runs of the
// same guest (its name, sockets, console log) and changes with what the
// guest is: its devices, and a kernel file rebuilt in place (one not named
// by its hash) even at the same size.
func TestGuestStateKey(t *testing.T) {
	dir := t.TempDir()
	kernel := filepath.Join(dir, "bzImage")
	os.WriteFile(kernel, []byte("kernel 1"), 0o644)
	img := fakeImage(t)
	cfg := qemu.Config{Name: "a", Accel: qemu.TCG, Kernel: img.Kernel, Initrd: img.Initrd, QMPSocket: "/x/qmp", AgentSocket: "/x/agent",
		ConsoleLog: "/x/console-0.log", NICs: []qemu.NIC{{Tap: "vnbt0", MAC: GuestMAC}}}
	key := guestStateKey(cfg)
	if len(key) != 32 {
		t.Fatalf("key %q", key)
	}
	other := cfg
	other.Name, other.QMPSocket, other.AgentSocket, other.ConsoleLog = "b", "/y/qmp", "/y/agent", "/y/console-3.log"
	if k := guestStateKey(other); k != key {
		t.Errorf("another run's paths changed the key")
	}
	other = cfg
	other.NICs = append(other.NICs, qemu.NIC{Tap: "vnbt1", Vhost: true})
	if k := guestStateKey(other); k == key {
		t.Errorf("a second NIC kept the key")
	}
	other = cfg
	other.Kernel = kernel
	k1 := guestStateKey(other)
	os.WriteFile(kernel, []byte("kernel 2"), 0o644)
	os.Chtimes(kernel, time.Now(), time.Now().Add(time.Hour))
	if k2 := guestStateKey(other); k2 == k1 {
		t.Errorf("a kernel rebuilt in place kept the key")
	}
	other.Kernel = filepath.Join(dir, "gone")
	if k := guestStateKey(other); k != "" {
		t.Errorf("a missing kernel gave key %q", k)
	}
}
