package proc

import (
	"os"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

func TestBusyFrac(t *testing.T) {
	a := map[int]uint64{1: 100, 2: 50}
	b := map[int]uint64{1: 200, 2: 50}
	if got := BusyFrac(a, b, time.Second, 1); got != 1 {
		t.Errorf("BusyFrac = %v, want 1", got)
	}
	if got := BusyFrac(a, b, 2*time.Second, 1); got != 0.5 {
		t.Errorf("BusyFrac = %v, want 0.5", got)
	}
	if got := BusyFrac(a, nil, time.Second, 1); got != -1 {
		t.Errorf("no data: %v", got)
	}
}

// This process exists and has used some CPU; kthreadd's children are
// kernel threads (there is always at least one, e.g. kworker).
func TestProcfs(t *testing.T) {
	testenv.NeedFile(t, "/proc/self/stat", "procfs")
	if m := CPUTicks([]int{os.Getpid(), 1 << 30}); len(m) != 1 {
		t.Errorf("CPUTicks = %v, want this process only", m)
	}
	if _, err := os.Stat("/proc/2/stat"); err != nil {
		return // a pid namespace without kthreadd
	}
	if len(KernelThreads(func(string) bool { return true })) == 0 {
		t.Error("no kernel threads")
	}
}

// TestFakeFS reads a /proc tree as a kernel shows it: a process with named
// threads, kernel threads with start times and CPU ticks; stat lines with
// spaces and parentheses in the name.
func TestFakeFS(t *testing.T) {
	fp := NewFakeProc(t.TempDir())
	fp.Process(4100, "qemu-system-x86", Thread{4100, "qemu-system-x86"}, Thread{4102, "CPU 0/KVM"}, Thread{4105, "vhost-4100"})
	fp.KernelThread(77, "kpktgend_0", 350, 12)
	fp.KernelThread(78, "kworker/0:1-events (x)", 351, 3)
	if err := fp.Err(); err != nil {
		t.Fatal(err)
	}
	fs := fp.FS()
	ts, err := fs.Threads(4100)
	if err != nil || len(ts) != 3 || ts[1] != (Thread{4102, "CPU 0/KVM"}) {
		t.Errorf("Threads = %v, %v", ts, err)
	}
	ks := fs.KernelThreads(func(string) bool { return true })
	if len(ks) != 2 || ks[0] != (Stat{PID: 77, Comm: "kpktgend_0", PPID: 2, Ticks: 12, Start: 350}) || ks[1].Comm != "kworker/0:1-events (x)" {
		t.Errorf("KernelThreads = %+v", ks)
	}
	if m := fs.CPUTicks([]int{77, 78, 99}); len(m) != 2 || m[77] != 12 || m[78] != 3 {
		t.Errorf("CPUTicks = %v", m)
	}
}

// TestNewKernelThreads: pktgen makes kpktgend_N in every network
// namespace; the run's namespace's are those that appeared when it was
// created (not in the snapshot before), the earliest if another
// namespace was created meanwhile.
func TestNewKernelThreads(t *testing.T) {
	fp := NewFakeProc(t.TempDir())
	// init_net's threads, from module load.
	fp.KernelThread(60, "kpktgend_0", 100, 0)
	fp.KernelThread(61, "kpktgend_1", 100, 0)
	before := map[int]bool{60: true, 61: true}
	// The run's namespace, then another one created during the run.
	fp.KernelThread(900, "kpktgend_0", 5000, 0)
	fp.KernelThread(901, "kpktgend_1", 5000, 0)
	fp.KernelThread(950, "kpktgend_0", 7000, 0)
	fp.KernelThread(951, "kpktgend_1", 7000, 0)
	kp := fp.FS().KernelThreads(func(c string) bool { return c == "kpktgend_0" || c == "kpktgend_1" })
	if len(kp) != 6 {
		t.Fatalf("%d kpktgend threads, want 6 (3 namespaces x 2 CPUs)", len(kp))
	}
	got, amb := NewKernelThreads(kp, before)
	if len(got) != 2 || got[0].PID != 900 || got[1].PID != 901 || !amb {
		t.Errorf("NewKernelThreads = %+v (ambiguous %v), want 900 and 901, ambiguous", got, amb)
	}
	got, amb = NewKernelThreads(kp[:4], before)
	if len(got) != 2 || got[0].PID != 900 || amb {
		t.Errorf("one new namespace: %+v (ambiguous %v)", got, amb)
	}
}
