package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	_ "github.com/vnetbench/vnetbench/internal/workload/all"
)

// TestMain fails the package when a test leaves a child process behind
// (each real-loop test also checks its own netns). The tests record what
// they make in a ledger directory of their own (testenv.TempLedger), not
// in the real one doctor reads.
func TestMain(m *testing.M) {
	done := testenv.TempLedger()
	code := m.Run()
	var kids []int
	for i := 0; i < 100; i++ {
		if kids = proc.Children(os.Getpid()); len(kids) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, k := range kids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(k) + "/cmdline")
		fmt.Fprintf(os.Stderr, "FAIL: child process %d left behind: %s\n", k, strings.ReplaceAll(string(b), "\x00", " "))
		code = 1
	}
	done()
	os.Exit(code)
}

// The run's namespace, taps, qdiscs, pins and QEMU go in this process's
// ledger: the tests' ledger is the temporary one, so they leave no file
// in /run/vnetbench/ledger.
func TestLedgerIsTemporary(t *testing.T) {
	if d := ledger.Path(); os.Getenv(ledger.DirEnv) == "" || d == ledger.Default {
		t.Errorf("the tests' ledger directory is %s, not a temporary one (TestMain: testenv.TempLedger)", d)
	}
}
