package qemu

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// faultMarkers are what a Linux kernel prints when it is stuck or broken:
// the soft-lockup and hard-lockup watchdogs, RCU stall warnings (every
// flavour: rcu_preempt, rcu_sched, rcu_tasks...), hung tasks, oopses,
// BUG reports and panics.
var faultMarkers = []string{
	"soft lockup",
	"hard LOCKUP",
	"detected stalls on CPUs",
	"self-detected stall on CPU",
	"detected stall on CPU",
	"blocked for more than",
	"Kernel panic",
	"BUG:",
	"Oops:",
	"general protection fault",
}

// printkTime is the timestamp a kernel with CONFIG_PRINTK_TIME (or
// printk.time=1 on its command line) puts before each console line:
// only such lines are the kernel's own, not a program's output that
// quotes them.
var printkTime = regexp.MustCompile(`^\[\s*\d+\.\d+\]`)

// KernelFault reports whether a console line is the kernel reporting that
// it is stuck or broken (see faultMarkers). The line must start with the
// kernel's printk timestamp, so a program on the console that prints or
// quotes such text (an inner run's error message) is not taken for the
// kernel.
func KernelFault(line string) bool {
	line = strings.TrimLeft(line, "\r\x00")
	loc := printkTime.FindStringIndex(line)
	if loc == nil {
		return false
	}
	msg := line[loc[1]:]
	for _, m := range faultMarkers {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// FaultGrace is how long a console watcher keeps reading after the first
// fault line before it gives up on the VM: long enough for the kernel to
// print the report's stack traces into the console log, short enough to
// fail well within 30 seconds.
const FaultGrace = 5 * time.Second

// FaultError is a kernel that reported on its console that it is stuck or
// broken (KernelFault).
type FaultError struct {
	VM   string
	Line string // the first fault line
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("%s: the kernel reported a fault on its console: %s", e.VM, strings.TrimSpace(e.Line))
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
