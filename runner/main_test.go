package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/proc"
	_ "github.com/vnetbench/vnetbench/internal/workload/all"
)

// TestMain fails the package when a test leaves a child process behind
// (each real-loop test also checks its own netns).
func TestMain(m *testing.M) {
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
	os.Exit(code)
}
