package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// TestNetnsKernelThreads: pktgen makes kpktgend_N in every network
// namespace, all named alike and all children of kthreadd. The run's are
// those that appeared with its namespace; a namespace created meanwhile
// (another tool's) is warned about, and a module loaded after the
// namespace leaves all of them, said so.
func TestNetnsKernelThreads(t *testing.T) {
	fp := proc.NewFakeProc(t.TempDir())
	// init_net's kpktgend threads, from module load, and an unrelated one.
	fp.KernelThread(60, "kpktgend_0", 100, 7)
	fp.KernelThread(61, "kpktgend_1", 100, 7)
	fp.KernelThread(62, "kworker/0:0", 100, 1)
	if err := fp.Err(); err != nil {
		t.Fatal(err)
	}
	r := snapshotKernelThreads(fp.FS())
	// ip netns add: pktgen's pernet init starts the namespace's threads.
	fp.KernelThread(900, "kpktgend_0", 5000, 0)
	fp.KernelThread(901, "kpktgend_1", 5000, 0)
	for name, want := range map[string]int{"kpktgend_0": 900, "kpktgend_1": 901} {
		pids, warn := r.pids(name)
		if !slices.Equal(pids, []int{want}) || warn != "" {
			t.Errorf("%s: %v (%q), want [%d] and no warning", name, pids, warn, want)
		}
	}
	// Another namespace created during the run.
	fp.KernelThread(950, "kpktgend_0", 7000, 0)
	if err := fp.Err(); err != nil {
		t.Fatal(err)
	}
	pids, warn := r.pids("kpktgend_0")
	if !slices.Equal(pids, []int{900}) || !strings.Contains(warn, "another namespace") {
		t.Errorf("two new namespaces: %v (%q), want [900] and a warning", pids, warn)
	}

	// pktgen loaded after the namespace: nothing new, every thread taken.
	r2 := snapshotKernelThreads(fp.FS())
	pids, warn = r2.pids("kpktgend_1")
	if !slices.Equal(pids, []int{61, 901}) || !strings.Contains(warn, "none appeared") {
		t.Errorf("module loaded later: %v (%q), want both and a warning", pids, warn)
	}
}
