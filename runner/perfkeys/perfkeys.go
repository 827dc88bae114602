// Package perfkeys keeps the kernel's perf static keys switched on while a
// run measures, so that starting and stopping perf does not make the
// kernel rewrite its own code.
//
// Opening the first perf event of a kind flips a static key in the kernel
// (perf_sched_events for any event bound to a task, perf_swevent_enabled[id]
// for a software event such as context-switches), and closing the last
// one flips it back (perf_sched_events about a second later). Flipping a
// key live-patches every site of its static branch, among them
// __schedule(), with text_poke_bp(): an int3 on the site, then
// synchronizing IPIs to every CPU. Under QEMU's TCG (a lab VM on a machine
// without KVM) a vCPU can get stuck on that breakpoint with interrupts off
// while the patching CPU waits forever for its IPI: the kernel reports a
// soft lockup in perf and an RCU stall on the other CPU. Holding one
// disabled, never-scheduled event of every software kind on the calling
// thread keeps every such key on, so later perf sessions only move
// reference counts and never patch code.
package perfkeys

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Keys holds the events that keep the keys on.
type Keys struct {
	fds []int
}

// Hold opens the holding events (on the calling thread; they stay valid
// when the thread exits, until Release). It returns an error only when no
// event could be opened at all (no perf support, or not permitted), with
// whatever it holds.
func Hold() (*Keys, error) {
	k := &Keys{}
	var errs []error
	// Every software event the kernel counts through a static key:
	// page-faults ... emulation-faults, dummy (perf record's tracking
	// event), bpf-output, cgroup-switches. cpu-clock and task-clock are
	// separate PMUs without a key; holding any task-bound event also
	// holds perf_sched_events.
	for id := uint64(unix.PERF_COUNT_SW_PAGE_FAULTS); id < unix.PERF_COUNT_SW_MAX; id++ {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: id,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
		}
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			errs = append(errs, fmt.Errorf("software event %d: %w", id, err))
			continue
		}
		k.fds = append(k.fds, fd)
	}
	if len(k.fds) == 0 {
		return k, fmt.Errorf("perfkeys: no perf event could be opened: %w", errors.Join(errs...))
	}
	return k, nil
}

// Held is the number of events held.
func (k *Keys) Held() int { return len(k.fds) }

// Release closes the events: the keys go off (and the kernel patches its
// code) once no other perf event holds them.
func (k *Keys) Release() {
	if k == nil {
		return
	}
	for _, fd := range k.fds {
		unix.Close(fd)
	}
	k.fds = nil
}
