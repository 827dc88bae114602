package runner

import (
	"fmt"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// netnsThreads tells the kernel threads of the run's network namespace
// from the others: per-namespace kernel threads (pktgen's kpktgend_N)
// exist once per namespace with the same name, and the run's are those
// that appear with its namespace.
type netnsThreads struct {
	proc   proc.FS
	before map[int]bool // the kernel threads before the namespace
}

// snapshotKernelThreads remembers the kernel threads of fs that exist
// before the run's namespace is created.
func snapshotKernelThreads(fs proc.FS) netnsThreads {
	t := netnsThreads{proc: fs, before: map[int]bool{}}
	for _, k := range fs.KernelThreads(func(string) bool { return true }) {
		t.before[k.PID] = true
	}
	return t
}

// pids returns the pids of the kernel threads named name that belong to
// the run's network namespace: those created with it
// (proc.NewKernelThreads). A warning says when the choice was ambiguous
// (another namespace was created during the run).
func (t *netnsThreads) pids(name string) ([]int, string) {
	all := t.proc.KernelThreads(func(c string) bool { return c == name })
	picked, ambiguous := proc.NewKernelThreads(all, t.before)
	var pids []int
	for _, k := range picked {
		pids = append(pids, k.PID)
	}
	switch {
	case len(picked) == 0 && len(all) > 0:
		// None appeared with the namespace (the module was loaded after
		// it was created, or the snapshot failed): every one, said so.
		for _, k := range all {
			pids = append(pids, k.PID)
		}
		if len(all) == 1 {
			return pids, ""
		}
		return pids, fmt.Sprintf("%d kernel threads %s and none appeared with the run's network namespace: perf and the busy share count all of them (pids %v), the other namespaces' idle ones too", len(all), name, pids)
	case ambiguous:
		return pids, fmt.Sprintf("%d kernel threads %s appeared since the run's network namespace was created (another namespace was created meanwhile): took the earliest, pid %v", len(all)-countIn(all, t.before), name, pids)
	}
	return pids, ""
}

func countIn(ks []proc.Stat, set map[int]bool) int {
	n := 0
	for _, k := range ks {
		if set[k.PID] {
			n++
		}
	}
	return n
}
