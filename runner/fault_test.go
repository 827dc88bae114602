package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// appendConsole appends lines to the newest guest console log of a run,
// as the guest kernel would print them.
func appendConsole(t *testing.T, dir string, lines ...string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "artifacts", "console-*.log"))
	if len(logs) == 0 {
		t.Errorf("no guest console log in %s", dir)
		return
	}
	sort.Strings(logs)
	f, err := os.OpenFile(logs[len(logs)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
}

// A guest kernel that reports a soft lockup on its console in the middle
// of a cell's traffic fails that attempt within seconds (not at the
// traffic deadline, a minute away here). Under TCG (pinned here; under
// KVM the first fault fails the cell: TestRunKVMGuestFaultNotRetried) the
// cell runs once more on a fresh guest; when that one's kernel faults
// too, the cell fails naming the phase and both console lines, is
// recorded as failed with the console tail and both consoles in
// results.jsonl, and the run goes on with the other cells on a fresh
// guest.
func TestRunGuestKernelFault(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.opts.Accel = qemu.TCG
	var injected atomic.Int64
	h.mkGen = func(n int) *fakeGen {
		g := &fakeGen{d: 200 * time.Millisecond}
		if n == 1 || n == 2 { // cell 2 and its second attempt
			g.d = time.Minute
			g.started = make(chan struct{})
			go func() {
				<-g.started
				time.Sleep(300 * time.Millisecond)
				injected.Store(time.Now().UnixNano())
				appendConsole(t, h.opts.Dir,
					fmt.Sprintf("[   48.123456] watchdog: BUG: soft lockup - CPU#0 stuck for %ds! [kpktgend_0:91]", 21+n),
					"[   48.123457] CPU: 0 PID: 91 Comm: kpktgend_0 Not tainted 6.1.0-47-amd64 #1",
					"[   48.123458] RIP: 0010:pktgen_thread_worker+0x1b2/0x1f0 [pktgen]")
			}()
		}
		return g
	}
	var failedAt atomic.Int64
	h.opts.Progress = func(p Progress) {
		if p.Failed != nil {
			failedAt.Store(time.Now().UnixNano())
		}
	}
	start := time.Now()
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var ke *KernelFaultError
	if !errors.As(err, &ke) || len(ke.Failed) != 1 || ke.Of != 4 {
		t.Fatalf("err = %v, want a KernelFaultError with 1 of 4 cells failed", err)
	}
	var ce *CellError
	if !errors.As(ke.Failed[0], &ce) || ce.Phase != "traffic" {
		t.Fatalf("failure %v does not name the traffic phase", ke.Failed[0])
	}
	for _, want := range []string{"soft lockup - CPU#0 stuck for 22s", "soft lockup - CPU#0 stuck for 23s", "under TCG",
		"pktgen_thread_worker", "console-1.log", "/0-fault-console.log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if in, at := injected.Load(), failedAt.Load(); in == 0 || at == 0 {
		t.Errorf("fault injected at %d, cell failed at %d", in, at)
	} else if d := time.Duration(at - in); d > 30*time.Second {
		t.Errorf("the cell failed %v after the fault line, want within 30s", d)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("run took %v", d)
	}
	if sum.Samples != 3 {
		t.Errorf("%d samples measured, want the 3 other cells", sum.Samples)
	}
	set := loadRun(t, h.opts.Dir, 3, 1)
	f := set.Failed[0]
	kept := results.FaultConsole(f.Cell, f.Kernel, f.Rep)
	if !strings.Contains(f.Error, "soft lockup") || !strings.Contains(f.Error, "RIP: 0010:pktgen_thread_worker") ||
		f.Labels["phase"] != "traffic" || !slices.Equal(f.Artifacts, []string{results.ConsoleLog(1), kept}) {
		t.Errorf("failed sample %+v lacks the console tail, phase or console logs", f)
	}
	if !strings.Contains(strings.Join(set.Warnings, "\n"), "failed: ") {
		t.Errorf("report warnings do not name the failed cell: %v", set.Warnings)
	}
	// Each faulted guest was replaced by a fresh one.
	if n := strings.Count(readFile(t, filepath.Join(h.opts.Dir, "reproduce.sh")), "qemu-system-x86_64"); n != 3 {
		t.Errorf("guest started %d times, want 3 (rebooted after each fault)", n)
	}
	// --resume runs the failed cell again.
	h.mkGen = func(int) *fakeGen { return &fakeGen{d: 100 * time.Millisecond} }
	h.opts.Resume = true
	sum, err = Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil || sum.Samples != 1 || sum.Skipped != 3 {
		t.Fatalf("resume: %+v %v; want the failed cell run again", sum, err)
	}
	if set, _ := results.Load(h.opts.Dir); len(set.Samples) != 4 || len(set.Failed) != 0 {
		t.Errorf("after resume: %d samples, %d failed; want 4 and 0", len(set.Samples), len(set.Failed))
	}
}

// silentGuest is a guest agent on the other end of a pipe: the guest of
// the i-th dial answers ready and the first answers[i] stats requests,
// then stops answering (a guest whose kernel hangs without a word on its
// console); guests past len(answers) answer every request. Each stats
// request gets at least attempt.
func silentGuest(t *testing.T, attempt time.Duration, answers ...int32) AgentDialer {
	var dials atomic.Int32
	return func(context.Context, *qemu.VM) (Agent, error) {
		answer := int32(1 << 30)
		if i := int(dials.Add(1)) - 1; i < len(answers) {
			answer = answers[i]
		}
		host, guest := net.Pipe()
		t.Cleanup(func() { host.Close(); guest.Close() })
		var stats atomic.Int32
		go func() {
			fmt.Fprintln(guest, `{"ev":"ready","boot_ms":900,"init_ms":500}`)
			sc := bufio.NewScanner(guest)
			for sc.Scan() {
				var req vmimages.Request
				if json.Unmarshal(sc.Bytes(), &req) != nil || req.Op != vmimages.OpStats {
					continue
				}
				if stats.Add(1) <= answer {
					fmt.Fprintf(guest, `{"ev":"stats","id":%d,"eth0":{"rx_packets":%d}}`+"\n", req.ID, 1000*stats.Load())
				}
			}
		}()
		c := vmimages.NewClient(host)
		c.SetAttempt(attempt)
		return &vmAgent{c: c, least: attempt}, nil
	}
}

// A guest that stops answering its agent (no console line at all) is the
// harness's trouble, not a measurement: the cell runs once more on a fresh
// guest, and its sample says so.
func TestRunGuestStopsAnsweringRetried(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	// The first guest: cell 1 asks 2 requests; cell 2 the one before its
	// window, then none is answered. The second guest answers all.
	h.opts.DialAgent = silentGuest(t, 3*time.Second, 3) // 2 attempts: 6 s (30 s by default)
	start := time.Now()
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("run took %v, want under a minute", d)
	}
	set := loadRun(t, h.opts.Dir, 4, 0)
	retried := 0
	for _, smp := range set.Samples {
		for _, w := range smp.Warnings {
			if strings.Contains(w, "ran on a fresh guest after the previous one stopped answering") &&
				strings.Contains(w, "answered none of 2 stats requests") {
				retried++
			}
		}
	}
	if retried != 1 {
		t.Errorf("%d samples say they were retried on a fresh guest, want 1", retried)
	}
	if n := strings.Count(readFile(t, filepath.Join(h.opts.Dir, "reproduce.sh")), "qemu-system-x86_64"); n != 2 {
		t.Errorf("guest started %d times, want 2 (a fresh one after the silent one)", n)
	}
}

// A guest that stops answering again on the retry fails that cell only,
// in the phase that asked it, within a minute, saying so; the other cells
// run on a fresh guest.
func TestRunGuestStopsAnswering(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	// The first guest fails cell 2 as above; the second (its retry)
	// answers nothing; the third answers all.
	h.opts.DialAgent = silentGuest(t, 3*time.Second, 3, 0)
	start := time.Now()
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var ke *KernelFaultError
	if !errors.As(err, &ke) || len(ke.Failed) != 1 || ke.Of != 4 {
		t.Fatalf("err = %v, want a KernelFaultError with 1 of 4 cells failed", err)
	}
	var ce *CellError
	if !errors.As(ke.Failed[0], &ce) || ce.Phase != "counters" || !errors.Is(err, ErrGuestUnresponsive) ||
		!strings.Contains(err.Error(), "answered none of 2 stats requests") {
		t.Fatalf("err = %v, want the counters phase and a guest that stopped answering", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("run took %v, want under a minute", d)
	}
	set, lerr := results.Load(h.opts.Dir)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(set.Samples) != 3 || len(set.Failed) != 1 || set.Failed[0].Labels["phase"] != "counters" {
		t.Errorf("results: %d samples, %d failed (%+v); want 3 and 1 failed in counters", len(set.Samples), len(set.Failed), set.Failed)
	}
	if n := strings.Count(readFile(t, filepath.Join(h.opts.Dir, "reproduce.sh")), "qemu-system-x86_64"); n != 3 {
		t.Errorf("guest started %d times, want 3 (the silent one, its retry, a fresh one)", n)
	}
}

// A guest that booted slowly gets more time per stats request before it
// is called unresponsive.
func TestAgentScaleToBoot(t *testing.T) {
	a := &vmAgent{}
	a.scaleToBoot(10 * time.Second)
	if a.attempt != statsAttempt {
		t.Errorf("a 10 s boot: %v per request, want %v", a.attempt, statsAttempt)
	}
	a.scaleToBoot(384 * time.Second)
	if a.attempt != 48*time.Second {
		t.Errorf("a 384 s boot: %v per request, want 48s", a.attempt)
	}
}

// A guest whose agent connection closes in the middle of a cell (its
// agent, PID 1, was killed by a kernel oops, or ended and powered the
// guest off) fails that cell with the guest console's last lines in the
// error and in results.jsonl, the console log among its artifacts; the
// other cells run on a fresh guest. An oops on the console makes it a
// kernel fault naming the oops (under TCG, pinned here, the cell then runs
// once more on a fresh guest); without one, the agent's last words and
// what became of QEMU (still running, or killed) are the reason.
func TestRunGuestAgentConnectionClosed(t *testing.T) {
	needHost(t, "perf")
	cells := loadCells(t, loopScenario)
	h := newHarness(t)
	h.opts.Accel = qemu.TCG
	closed := func(lines ...string) func() error {
		return func() error {
			appendConsole(t, h.opts.Dir, lines...)
			return fmt.Errorf("vsock guest side: stop: agent vsock: %w (stream: EOF)", vmimages.ErrClosed)
		}
	}
	h.mkGen = func(n int) *fakeGen {
		g := &fakeGen{d: 200 * time.Millisecond}
		switch n {
		case 1: // an oops in the agent's close(2): the kernel panics; n 2 runs the cell again
			g.waitErr = closed(
				"[  397.120001] BUG: kernel NULL pointer dereference, address: 0000000000000008",
				"[  397.120002] RIP: 0010:sock_map_close+0x3a/0x120",
				"[  397.120003] Call Trace:",
				"[  397.120004]  vsock_release+0x2c/0x50 [vsock]",
				"[  397.120900] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009")
		case 3: // the agent ended without a kernel fault
			g.waitErr = closed("vnetbench agent: fatal: serve on vport0p1: read: input/output error; powering off",
				"[  397.722978] reboot: Power down")
		case 4: // QEMU itself died (a crash: killed here)
			g.waitErr = func() error {
				for _, pid := range proc.Children(os.Getpid()) {
					if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.HasPrefix(string(b), "qemu-system") {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return fmt.Errorf("vsock guest side: stop: agent vsock: %w (stream: EOF)", vmimages.ErrClosed)
			}
		}
		return g
	}
	start := time.Now()
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	var ke *KernelFaultError
	if !errors.As(err, &ke) || len(ke.Failed) != 2 || ke.Of != 4 {
		t.Fatalf("err = %v, want a KernelFaultError with 2 of 4 cells failed", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("run took %v", d)
	}
	var ge *GuestGoneError
	if !errors.As(ke.Failed[0], &ge) || !errors.Is(ke.Failed[0], vmimages.ErrClosed) {
		t.Errorf("first failure %v: want a GuestGoneError wrapping ErrClosed", ke.Failed[0])
	}
	if !errors.As(ke.Failed[1], &ge) || !strings.Contains(ge.QEMU, "QEMU exited: ") || !strings.Contains(ge.QEMU, "killed by signal") {
		t.Errorf("second failure %v: want QEMU's death named", ke.Failed[1])
	}
	if sum.Samples != 2 {
		t.Errorf("%d samples measured, want the 2 other cells", sum.Samples)
	}
	set := loadRun(t, h.opts.Dir, 2, 2)
	// The oops is a kernel fault: under TCG its cell ran once more, its
	// sample names the oops, and the first guest's console is kept.
	again := set.Samples[1]
	kept := results.FaultConsole(again.Cell, again.Kernel, again.Rep)
	if w := strings.Join(again.Warnings, "\n"); !strings.Contains(w, "BUG: kernel NULL pointer dereference") || !strings.Contains(w, kept) {
		t.Errorf("the retried sample's warnings %q lack the oops or the kept console %s", again.Warnings, kept)
	}
	if c := readFile(t, filepath.Join(h.opts.Dir, kept)); !strings.Contains(c, "sock_map_close+0x3a") || !strings.Contains(c, "Attempted to kill init") {
		t.Errorf("kept console %s lacks the oops:\n%s", kept, c)
	}
	for i, want := range [][]string{
		{"agent connection closed", "QEMU is still running", "vnetbench agent: fatal: serve on vport0p1", "reboot: Power down"},
		{"agent connection closed", "QEMU exited: ", "killed by signal"},
	} {
		f := set.Failed[i]
		for _, w := range want {
			if !strings.Contains(f.Error, w) {
				t.Errorf("failed sample %d: error lacks %q:\n%s", i, w, f.Error)
			}
		}
		if f.Labels["phase"] != "traffic" || len(f.Artifacts) != 1 || !strings.HasPrefix(f.Artifacts[0], "artifacts/console-") {
			t.Errorf("failed sample %d: phase %q, artifacts %v; want traffic and the console log", i, f.Labels["phase"], f.Artifacts)
		}
	}
	if n := strings.Count(readFile(t, filepath.Join(h.opts.Dir, "reproduce.sh")), "qemu-system-x86_64"); n != 3 {
		t.Errorf("guest started %d times, want 3 (a fresh one after the oops and after the agent ended)", n)
	}
}

// A guest kernel that crashes during its boot (an oops, then the panic
// that ends QEMU with panic=-1 and -no-reboot) ends QEMU before the
// console watch's grace: the boot still fails as the fault (CI met a
// Debian 6.12 guest's "Oops: int3" under TCG), so under TCG the cell runs
// once more on a fresh guest and the run succeeds. A kernel that panics
// by choice with nothing before it (no init) is a boot error, as on
// every boot: the run ends.
func TestBootCrashRetried(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	img := fakeImage(t)
	for _, tc := range []struct {
		lines []string
		retry bool
	}{
		{[]string{"[    3.130094] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI",
			"[    3.130184] RIP: 0010:sched_clock_cpu+0x9/0x190",
			"[    3.130556] Kernel panic - not syncing: Fatal exception in interrupt"}, true},
		{[]string{"[    1.201000] Kernel panic - not syncing: No working init found."}, false},
	} {
		var boots, dials atomic.Int32
		crash := []fakeqemu.Step{}
		for _, l := range tc.lines {
			crash = append(crash, fakeqemu.Step{After: 50 * time.Millisecond, Line: l})
		}
		crash = append(crash, fakeqemu.Step{After: 50 * time.Millisecond, PowerOff: true})
		fake := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step {
			if boots.Add(1) == 1 {
				return crash
			}
			return nil
		}}
		var log syncBuffer
		h := newHarness(t)
		h.opts.Exec, h.opts.Log = qemuRouter{fake}, &log
		h.opts.KVM = &qemu.KVMStatus{Why: "test: no KVM"}
		h.opts.Image = func(context.Context, scenarios.Guest, GuestContents) (*GuestImage, error) { return img, nil }
		// The first guest's agent never answers: its kernel crashes
		// first. Counted by dials, not boots: the fake QEMU may not have
		// asked for its script yet when the harness dials (boots 0), and
		// the first guest was then measured before its crash (CI, loaded).
		h.opts.DialAgent = func(_ context.Context, vm *qemu.VM) (Agent, error) {
			if dials.Add(1) == 1 {
				return &fakeAgent{never: true}, nil
			}
			return h.agent, nil
		}
		start := time.Now()
		sum, err := Run(t.Context(), loadCells(t, stateScenario), h.opts)
		checkNothingLeft(t, sum)
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("%s: run took %v, want the crash seen when QEMU exits (boot timeout 20s)", tc.lines[0], d)
		}
		if !tc.retry {
			var be *qemu.BootError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), "qemu exited during boot") || boots.Load() != 1 {
				t.Errorf("no init: %d boots, err = %v; want one boot and a boot error", boots.Load(), err)
			}
			continue
		}
		if err != nil || boots.Load() != 2 {
			t.Fatalf("%d boots, err = %v; want the crashed boot, then a fresh guest measured", boots.Load(), err)
		}
		s := readSamples(t, h.opts.Dir)
		if len(s) != 1 || !strings.Contains(s[0].FaultRerun, "Oops: int3") {
			t.Errorf("samples %+v, want one rerun after the oops", s)
		}
		if !strings.Contains(log.String(), "faulted under TCG") {
			t.Errorf("the log does not say the guest's kernel faulted:\n%s", log.String())
		}
	}
}
