package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/runner/undo"
)

// Pin sets the CPU affinity of each thread (sched_setaffinity) and pushes
// the restore of the previous masks onto u. A thread that exits before the
// restore is not an error. With perThread and len(cpus) == len(tids),
// thread i goes to cpus[i]; otherwise every thread may use all of cpus.
func Pin(u *undo.Stack, what string, tids, cpus []int, perThread bool) error {
	if len(cpus) == 0 || len(tids) == 0 {
		return nil
	}
	type saved struct {
		tid  int
		mask unix.CPUSet
		item *ledger.Item
	}
	var done []saved
	restore := func(context.Context) error {
		var errs []error
		for _, s := range done {
			if err := unix.SchedSetaffinity(s.tid, &s.mask); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("restore affinity of %s thread %d: %w", what, s.tid, err))
				continue
			}
			s.item.Gone()
		}
		return errors.Join(errs...)
	}
	for i, tid := range tids {
		var old unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &old); err != nil {
			restore(context.Background())
			return fmt.Errorf("pin %s thread %d: read affinity: %w", what, tid, err)
		}
		var set unix.CPUSet
		if perThread && len(cpus) == len(tids) {
			set.Set(cpus[i])
		} else {
			for _, c := range cpus {
				set.Set(c)
			}
		}
		// The old mask goes into the ledger first: doctor --clean puts it
		// back on a thread a killed run pinned.
		start, _ := ledger.StartTime(tid)
		it, err := ledger.Record(ledger.Entry{Kind: ledger.Pin, Name: what, PID: tid, Start: start, Mask: maskString(&old)})
		if err != nil {
			restore(context.Background())
			return err
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			it.Gone()
			restore(context.Background())
			return fmt.Errorf("pin %s thread %d to CPUs %v: %w", what, tid, cpus, err)
		}
		it.Made(nil)
		done = append(done, saved{tid, old, it})
	}
	u.Push("restore affinity of "+what, restore)
	return nil
}

// maskString is a CPU set as a list of CPUs ("0,2,3"), ParseMask's input.
func maskString(set *unix.CPUSet) string {
	var cpus []string
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, strconv.Itoa(c))
		}
	}
	return strings.Join(cpus, ",")
}

// parseMask is maskString's inverse.
func parseMask(s string) (unix.CPUSet, error) {
	var set unix.CPUSet
	for _, f := range strings.Split(s, ",") {
		c, err := strconv.Atoi(f)
		if err != nil || c < 0 || c >= 1024 {
			return set, fmt.Errorf("bad CPU list %q", s)
		}
		set.Set(c)
	}
	return set, nil
}

// Affinity returns the CPUs a thread may run on.
func Affinity(tid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
