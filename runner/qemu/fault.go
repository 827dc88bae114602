package qemu

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
)

// faultMarkers are what a Linux kernel prints when it is stuck or broken:
// the timing reports (lockups, RCU stalls, hung tasks), oopses, BUG
// reports and panics.
var faultMarkers = append(append([]string(nil), timingReports...),
	"Kernel panic",
	"BUG:",
	"Oops:",
	"general protection fault",
)

// printkTime is the timestamp a kernel with CONFIG_PRINTK_TIME (or
// printk.time=1 on its command line) puts before each console line:
// only such lines are the kernel's own, not a program's output that
// quotes them.
var printkTime = lazyre.New(`^\[\s*\d+\.\d+\]`)

// KernelFault reports whether a console line is the kernel reporting that
// it is stuck or broken (see faultMarkers). The line must start with the
// kernel's printk timestamp, so a program on the console that prints or
// quotes such text (an inner run's error message) is not taken for the
// kernel.
func KernelFault(line string) bool {
	_, msg, ok := kernelLine(line)
	return ok && containsAny(msg, faultMarkers)
}

// kernelLine splits a console line the kernel printed into its printk
// stamp (the text between the brackets) and its message; ok is false for
// a line without the stamp.
func kernelLine(line string) (stamp, msg string, ok bool) {
	line = strings.TrimLeft(line, "\r\x00")
	loc := printkTime().FindStringIndex(line)
	if loc == nil {
		return "", "", false
	}
	return line[1 : loc[1]-1], line[loc[1]:], true
}

func containsAny(s string, subs []string) bool {
	for _, m := range subs {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// timingReports are the faults a watchdog reports by measuring time: a
// soft or hard lockup, an RCU stall, a hung task. A guest clock that jumps
// forward (seen under TCG in TCG: a nested guest 80 s after its launch
// printed "[462436.144491] watchdog: BUG: soft lockup - CPU#0 stuck for
// 430630s!") sets them off without anything being stuck.
var timingReports = []string{
	"soft lockup",
	"hard LOCKUP",
	"detected stalls on CPUs",
	"self-detected stall on CPU",
	"detected stall on CPU",
	"blocked for more than",
}

// clockSlack is how far a kernel's printk time may run ahead of its VM's
// age before its clock counts as having jumped.
const clockSlack = time.Minute

// KernelFaultAt is KernelFault for a kernel whose VM was launched age ago
// (0 = unknown): a timing report stamped later than age (plus a minute)
// comes from a kernel clock that jumped, which no CPU can have been stuck
// for, and is not a fault. Every other fault line is one at any time.
func KernelFaultAt(line string, age time.Duration) bool {
	if !KernelFault(line) {
		return false
	}
	return age <= 0 || !ClockJumped(line, age)
}

// ClockJumped reports whether line is a timing report (a lockup, stall or
// hung-task watchdog) whose printk time is later than age plus a minute:
// the kernel's clock jumped forward.
func ClockJumped(line string, age time.Duration) bool {
	stamp, msg, ok := kernelLine(line)
	if !ok || !containsAny(msg, timingReports) {
		return false
	}
	at, ok := stampTime(stamp)
	return ok && at > age+clockSlack
}

// FaultGrace is how long a console watcher keeps reading after the first
// fault line before it gives up on the VM: long enough for the kernel to
// print the report's stack traces into the console log, short enough to
// fail well within 30 seconds.
const FaultGrace = 5 * time.Second

// FaultError is a kernel that reported on its console that it is stuck or
// broken (KernelFault).
type FaultError struct {
	VM      string
	Line    string // the first fault line
	Console string // the console log's path ("" = unknown)
	Tail    string // the console's last lines, led by Line (FaultTail)
}

func (e *FaultError) Error() string {
	s := fmt.Sprintf("%s: the kernel reported a fault on its console: %s", e.VM, strings.TrimSpace(e.Line))
	if e.Tail != "" {
		s += "\nlast console lines"
		if e.Console != "" {
			s += " (" + e.Console + ")"
		}
		s += ":\n" + QuoteConsole(e.Tail)
	}
	return s
}

// QuoteConsole indents every line of a console tail quoted in a message.
// A quoted kernel line then no longer starts with its printk stamp: an
// inner run's error printed on a lab VM's console is not taken for the
// lab kernel's own fault (KernelFault), which would end the whole lab.
func QuoteConsole(tail string) string {
	lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// FaultTail returns the console tail for a fault report: the last n lines,
// led by the first fault line when it scrolled out of them.
func FaultTail(path, fault string, n int) string {
	tail := FileTail(path, n)
	if fault != "" && !strings.Contains(tail, strings.TrimSpace(fault)) {
		tail = strings.TrimSpace(fault) + "\n...\n" + tail
	}
	return tail
}

// ConsoleWatch follows a console log file for kernel fault lines.
type ConsoleWatch struct {
	file *ConsoleFile
	// Launched is when the kernel's clock read 0, for KernelFaultAt:
	// when its VM started (VM.Launched; the zero time = unknown), or for
	// a kernel started from a saved state, earlier (clockZero).
	Launched time.Time
	// clock is where a watch of a kernel whose clock did not start at
	// its launch (a saved state's: it goes on from the state's uptime)
	// finds and keeps when that clock read 0 and its first line's stamp
	// (nil inside = not yet found); nil for a kernel booted at Launched.
	clock *atomic.Pointer[restoreClock]
	// Fault is the first fault line seen ("" = none yet), at FaultAt.
	Fault   string
	FaultAt time.Time
	// ClockJump is the first timing report that was no fault because
	// the kernel's clock had jumped (ClockJumped).
	ClockJump string
}

// newConsoleWatch follows path (which may not exist yet), the console of
// a VM launched at launched (VM.Console).
func newConsoleWatch(path string, launched time.Time) *ConsoleWatch {
	return &ConsoleWatch{file: NewConsoleFile(path), Launched: launched}
}

// Poll reads what was appended since the last call and returns the
// complete lines; it records the first fault line.
func (w *ConsoleWatch) Poll() []string {
	lines := w.file.Lines()
	for _, line := range lines {
		w.clockZero(line)
		var age time.Duration
		if !w.Launched.IsZero() {
			age = time.Since(w.Launched)
		}
		switch {
		case w.Fault != "" || !KernelFault(line):
		case KernelFaultAt(line, age) && !w.restoreJump(line):
			w.Fault, w.FaultAt = fault.Clip(line), time.Now()
		case w.ClockJump == "":
			w.ClockJump = line
		}
	}
	return lines
}

// restoreClock is what the first console line of a kernel started from
// a saved state says about its clock.
type restoreClock struct {
	zero  time.Time     // when the clock read 0
	first time.Duration // the line's stamp
}

// clockZero moves Launched back to when the kernel's clock read 0, for
// a kernel started from a saved state: its clock goes on from the
// state's uptime (95 s for a lab's nested guest), so a lockup in its
// first minute, stamped later than its VM's age plus clockSlack, would
// pass for a clock jump. The first kernel line read (polled as it is
// printed, within a poll's time) says when: its stamp ago. That line
// itself is then never a jump by its stamp; a jump after it still is,
// and so is one the restore itself made (restoreJump). What the line
// said is kept in clock for later watches of the VM (one reading the
// console after the fact would find a later time: its first line is
// old).
func (w *ConsoleWatch) clockZero(line string) {
	if w.clock == nil {
		return
	}
	if c := w.clock.Load(); c != nil {
		w.Launched = c.zero
		return
	}
	stamp, _, ok := kernelLine(line)
	if !ok {
		return
	}
	first, ok := stampTime(stamp)
	if !ok {
		return
	}
	zero := time.Now().Add(-first)
	if !w.Launched.IsZero() && zero.After(w.Launched) {
		zero = w.Launched // a clock younger than its VM: aged as a boot's
	}
	w.clock.CompareAndSwap(nil, &restoreClock{zero: zero, first: first})
	w.Launched = w.clock.Load().zero
}

// restoreUptimeMax is the most a saved state's kernel clock can read
// when the state is loaded: the state is saved as soon as its booted
// guest's agent is ready, so its uptime is a boot's (95 s for a lab's
// nested guest; the lab scenarios' boot timeout is 9m). A restored
// kernel whose first console line is stamped later had its clock jump
// at the restore.
const restoreUptimeMax = time.Hour

// restoreJumpSpan is the least time a kernel's timing reports watch
// before they report: a soft lockup after 2*watchdog_thresh = 20 s, an
// RCU stall after 21 s (Debian's CONFIG_RCU_CPU_STALL_TIMEOUT), a hung
// task after 120 s.
const restoreJumpSpan = 20 * time.Second

// restoreJump reports whether line is a timing report of the clock jump
// a restore itself made: the kernel's first line after the restore was
// stamped past restoreUptimeMax (its clock jumped as the guest resumed:
// a watchdog's measure then spans the jump; under a TCG guest's `quiet
// tsc=reliable` that first line is the jump's own lockup or stall
// report, else it may be the clocksource watchdog's skew report), and
// line is stamped less than restoreJumpSpan after that first line, too
// soon for a CPU to have been stuck since the restore. A timing report
// stamped later, and any other fault line, is a fault as it is in a
// booted guest.
func (w *ConsoleWatch) restoreJump(line string) bool {
	if w.clock == nil {
		return false
	}
	c := w.clock.Load()
	if c == nil || c.first <= restoreUptimeMax {
		return false
	}
	stamp, msg, ok := kernelLine(line)
	if !ok || !containsAny(msg, timingReports) {
		return false
	}
	at, ok := stampTime(stamp)
	return ok && at < c.first+restoreJumpSpan
}

// stampTime is a printk stamp's time since the kernel's clock read 0.
func stampTime(stamp string) (time.Duration, bool) {
	sec, err := strconv.ParseFloat(strings.TrimSpace(stamp), 64)
	return time.Duration(sec * float64(time.Second)), err == nil
}

// Offset is the file offset up to which Poll has read: it moves when the
// console grew.
func (w *ConsoleWatch) Offset() int64 { return w.file.Offset() }

// Close closes the file.
func (w *ConsoleWatch) Close() { w.file.Close() }

// WatchConsole polls the VM's console (Console) every interval until ctx
// ends. When the kernel reports a fault, it waits grace (FaultGrace) for
// the report's stack traces, then calls onFault once with a *FaultError
// naming the VM as label and carrying the console tail, and returns.
func (vm *VM) WatchConsole(ctx context.Context, label string, interval, grace time.Duration, onFault func(*FaultError)) {
	w := vm.Console()
	defer w.Close()
	path := vm.Config.ConsoleLog
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		w.Poll()
		if w.Fault != "" && time.Since(w.FaultAt) >= grace {
			onFault(&FaultError{VM: label, Line: w.Fault, Console: path, Tail: FaultTail(path, w.Fault, 40)})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
