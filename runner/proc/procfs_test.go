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
