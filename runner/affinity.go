package runner

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

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
	}
	var done []saved
	restore := func(context.Context) error {
		var errs []error
		for _, s := range done {
			if err := unix.SchedSetaffinity(s.tid, &s.mask); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("restore affinity of %s thread %d: %w", what, s.tid, err))
			}
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
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			restore(context.Background())
			return fmt.Errorf("pin %s thread %d to CPUs %v: %w", what, tid, cpus, err)
		}
		done = append(done, saved{tid, old})
	}
	u.Push("restore affinity of "+what, restore)
	return nil
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
