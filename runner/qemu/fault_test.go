package qemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fault lines are the kernel's own wording (Linux 6.1 as seen on the
// lab consoles, and its other reports of the same kinds).
func TestKernelFault(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"[  480.123456] watchdog: BUG: soft lockup - CPU#1 stuck for 480s! [perf:153]", true},
		{"[   95.485293] rcu: INFO: rcu_preempt self-detected stall on CPU", true},
		{"[   95.485293] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", true},
		{"[   21.000000] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:", true},
		{"[  242.551023] INFO: task kworker/0:1:12 blocked for more than 120 seconds.", true},
		{"[    3.100000] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)", true},
		{"[   12.000001] BUG: kernel NULL pointer dereference, address: 0000000000000008", true},
		{"[   12.000002] Oops: 0002 [#1] PREEMPT SMP NOPTI", true},
		{"[   12.000003] general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP", true},
		{"[   30.000000] watchdog: Watchdog detected hard LOCKUP on cpu 1", true},
		{"\r[  480.123456] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [kpktgend_0:91]", true},
		// Not the kernel: no printk timestamp (program output quoting it).
		{"cell tap/simple rep 1: traffic: guest: the kernel reported a fault on its console: [ 1.0] BUG: soft lockup", false},
		{"watchdog: BUG: soft lockup - CPU#1 stuck for 480s! [perf:153]", false},
		{"perf-stress: 10/200 sessions", false},
		// The kernel, but not a fault.
		{"[    0.000000] Linux version 6.1.0-47-amd64", false},
		{"[   95.485293] NMI backtrace for cpu 0", false},
		{"[    1.234567] rcu: Hierarchical RCU implementation.", false},
	} {
		if got := KernelFault(tc.line); got != tc.want {
			t.Errorf("KernelFault(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// A fault line appended to a console log (as QEMU's file chardev does)
// ends the watch its grace later with the line and the tail, which holds
// what the kernel printed after it.
func TestWatchConsole(t *testing.T) {
	const grace = 300 * time.Millisecond
	path := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(path, []byte("[    1.000000] booting\nVNBLAB {\"ev\":\"ready\"}\n"), 0o644)
	got := make(chan *FaultError, 1)
	vm := &VM{Config: Config{ConsoleLog: path}, Launched: time.Now()}
	go vm.WatchConsole(t.Context(), "guest", 20*time.Millisecond, grace, func(fe *FaultError) { got <- fe })
	time.Sleep(100 * time.Millisecond)
	select {
	case fe := <-got:
		t.Fatalf("fault reported before any fault line: %v", fe)
	default:
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Stamped within a minute of the watch's start (the VM's launch): a
	// later stamp on a timing report is a clock jump (TestClockJump).
	f.WriteString("[   25.485293] rcu: INFO: rcu_preempt self-detected stall on CPU\n[   25.485293] Call Trace:\n")
	f.WriteString("[   25.485293]  smp_call_function_many_cond+0xf1/0x330\n")
	f.Close()
	select {
	case fe := <-got:
		if d := time.Since(start); d < grace {
			t.Errorf("reported after %v, before the grace of %v", d, grace)
		}
		if !strings.Contains(fe.Line, "self-detected stall") || !strings.Contains(fe.Tail, "smp_call_function_many_cond") || fe.Console != path {
			t.Errorf("fault %+v lacks the line, the trace after it or the console path", fe)
		}
		if msg := fe.Error(); !strings.Contains(msg, "guest: the kernel reported a fault") || !strings.Contains(msg, path) {
			t.Errorf("error %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no fault reported")
	}
}

// A lockup report stamped later than its VM has existed comes from a
// kernel clock that jumped forward, not from a stuck CPU (the line is a
// nested guest's under TCG in TCG, 80 s after its QEMU started). It is no
// fault for a VM that young, and is one for a VM that old; a panic or an
// oops stays a fault whatever its stamp.
func TestClockJump(t *testing.T) {
	const jump = "[462436.144491] watchdog: BUG: soft lockup - CPU#0 stuck for 430630s! [init:1]"
	if !KernelFault(jump) || KernelFaultAt(jump, 80*time.Second) || !ClockJumped(jump, 80*time.Second) {
		t.Errorf("80 s after launch: KernelFault %v, KernelFaultAt %v, ClockJumped %v; want true, false, true",
			KernelFault(jump), KernelFaultAt(jump, 80*time.Second), ClockJumped(jump, 80*time.Second))
	}
	if !KernelFaultAt(jump, 200*time.Hour) || !KernelFaultAt(jump, 0) {
		t.Error("a VM up for 200 h (or of unknown age) can be stuck that long: a fault")
	}
	for _, l := range []string{
		"[462436.200000] Kernel panic - not syncing: softlockup: hung tasks",
		"[462436.200001] BUG: kernel NULL pointer dereference, address: 0000000000000008",
		"[   70.000000] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [kpktgend_0:91]",
	} {
		if !KernelFaultAt(l, 80*time.Second) {
			t.Errorf("KernelFaultAt(%q, 80s) = false, want a fault", l)
		}
	}
	// The watch of a VM launched now records the jump and reports no
	// fault.
	path := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(path, []byte("[    1.000000] booting\n"+jump+"\n"), 0o644)
	w := newConsoleWatch(path, time.Now())
	w.Poll()
	w.Close()
	if w.Fault != "" || w.ClockJump != jump {
		t.Errorf("fault %q, clock jump %q", w.Fault, w.ClockJump)
	}
}

// A VM's console watch is as old as the VM, not as the watch: a lockup
// stamped at 130 h on the console of a VM launched 200 h ago is a fault
// (read after the fact, as a guest whose agent went away is), on that of
// a VM launched now a clock jump.
func TestConsoleAgesFromLaunch(t *testing.T) {
	const lockup = "[468000.144491] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [init:1]"
	path := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(path, []byte("[    1.000000] booting\n"+lockup+"\n"), 0o644)
	for _, tc := range []struct {
		age   time.Duration
		fault string
	}{{200 * time.Hour, lockup}, {0, ""}} {
		vm := &VM{Config: Config{ConsoleLog: path}, Launched: time.Now().Add(-tc.age)}
		w := vm.Console()
		w.Poll()
		w.Close()
		if w.Fault != tc.fault {
			t.Errorf("VM launched %v ago: fault %q, want %q (clock jump %q)", tc.age, w.Fault, tc.fault, w.ClockJump)
		}
	}
}

// A kernel started from a saved state goes on from the state's uptime
// (95 s here): a lockup in its VM's first seconds, stamped 120 s, is a
// fault, not a clock jump, whether it is the first line the watch reads
// or follows another; a jump after the first line is still one; and a
// watch reading the console after the fact (when its first line is old)
// ages it as the live watch did. A booted kernel's lockup stamped so is a
// jump, as before.
func TestConsoleAfterRestore(t *testing.T) {
	const (
		lockup = "[  120.500000] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [init:1]"
		jump   = "[462436.144491] watchdog: BUG: soft lockup - CPU#0 stuck for 430630s! [init:1]"
	)
	for _, tc := range []struct {
		name, console string
		incoming      bool
		fault         string
	}{
		{"restored, lockup first", lockup + "\n", true, lockup},
		{"restored, lockup after a line", "[   95.100000] virtio_net virtio0 eth0: link up\n" + lockup + "\n", true, lockup},
		{"restored, jump after a line", "[   95.100000] virtio_net virtio0 eth0: link up\n" + jump + "\n", true, ""},
		{"booted", lockup + "\n", false, ""},
	} {
		path := filepath.Join(t.TempDir(), "console.log")
		os.WriteFile(path, []byte(tc.console), 0o644)
		vm := &VM{Config: Config{ConsoleLog: path, Incoming: tc.incoming}, Launched: time.Now()}
		w := vm.Console()
		w.Poll()
		w.Close()
		if w.Fault != tc.fault {
			t.Errorf("%s: fault %q, want %q (clock jump %q)", tc.name, w.Fault, tc.fault, w.ClockJump)
		}
	}

	path := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(path, []byte("[   95.100000] virtio_net virtio0 eth0: link up\n"), 0o644)
	vm := &VM{Config: Config{ConsoleLog: path, Incoming: true}, Launched: time.Now()}
	live := vm.Console()
	live.Poll()
	live.Close()
	// 30 s later a lockup, stamped as the kernel's clock then reads, is
	// read after the fact, with the line before it.
	vm.Launched = vm.Launched.Add(-30 * time.Second)
	c := vm.clock.Load()
	vm.clock.Store(&restoreClock{zero: c.zero.Add(-30 * time.Second), first: c.first})
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[  180.000000] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [init:1]\n")
	f.Close()
	late := vm.Console()
	late.Poll()
	late.Close()
	if late.Fault == "" {
		t.Errorf("read after the fact: no fault (clock jump %q)", late.ClockJump)
	}
}

// A restore can make the kernel's clock jump as the guest resumes: its
// first console line is then stamped far past any saved state's uptime
// (the clocksource watchdog's skew report, or a watchdog's report of the
// jump itself), and the lockup and stall reports that follow within
// restoreJumpSpan measure the jump, not a stuck CPU: no fault. A lockup
// reported later, and an oops at any time, is one.
func TestConsoleRestoreJump(t *testing.T) {
	const (
		skew   = "[462436.100000] clocksource: timekeeping watchdog on CPU0: Marking clocksource 'tsc' as unstable because the skew is too large:"
		jump   = "[462436.144491] watchdog: BUG: soft lockup - CPU#0 stuck for 430630s! [swapper/0:0]"
		stall  = "[462437.010000] rcu: INFO: rcu_sched self-detected stall on CPU"
		hrt    = "[462436.200000] hrtimer: interrupt took 12345678 ns"
		lockup = "[462460.500000] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [init:1]"
		oops   = "[462437.500000] Oops: general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP NOPTI"
	)
	for _, tc := range []struct {
		name  string
		lines []string
		fault string
	}{
		{"jump first", []string{jump}, ""},
		{"skew, then the jump's reports", []string{skew, hrt, jump, stall}, ""},
		{"jump, then a lockup since", []string{jump, lockup}, lockup},
		{"jump, then an oops", []string{jump, oops}, oops},
	} {
		path := filepath.Join(t.TempDir(), "console.log")
		os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644)
		vm := &VM{Config: Config{ConsoleLog: path, Incoming: true}, Launched: time.Now()}
		w := vm.Console()
		w.Poll()
		w.Close()
		if w.Fault != tc.fault {
			t.Errorf("%s: fault %q, want %q (clock jump %q)", tc.name, w.Fault, tc.fault, w.ClockJump)
		}
		if tc.fault == "" && w.ClockJump == "" {
			t.Errorf("%s: no clock jump recorded", tc.name)
		}
	}
}

// FaultTail leads with the fault line when it scrolled out of the tail.
func TestFaultTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	var b strings.Builder
	b.WriteString("[    5.000000] BUG: soft lockup - CPU#0 stuck for 22s! [x:1]\n")
	for i := 0; i < 100; i++ {
		b.WriteString("[    5.000001]  trace line\n")
	}
	os.WriteFile(path, []byte(b.String()), 0o644)
	tail := FaultTail(path, "[    5.000000] BUG: soft lockup - CPU#0 stuck for 22s! [x:1]", 10)
	lines := strings.Split(tail, "\n")
	if len(lines) != 12 || !strings.Contains(lines[0], "soft lockup") || lines[1] != "..." {
		t.Errorf("tail:\n%s", tail)
	}
}

// A fault quoted in an error message (an inner run's, printed on a lab
// VM's console) is not the lab kernel's own fault line.
func TestQuotedFaultIsNoFault(t *testing.T) {
	fe := &FaultError{VM: "guest", Line: "[   25.4] Kernel panic - not syncing: x", Console: "c.log", Tail: "[   25.4] Kernel panic - not syncing: x\n[   25.5] Call Trace:\n"}
	for _, l := range strings.Split(fe.Error(), "\n") {
		if KernelFault(l) {
			t.Errorf("line %q of the error reads as a kernel fault", l)
		}
	}
	if !strings.Contains(fe.Error(), "  [   25.5] Call Trace:") {
		t.Errorf("error %q lacks the indented tail", fe.Error())
	}
}
