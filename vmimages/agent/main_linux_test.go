package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mainChildEnv makes the test binary call Main instead of the tests.
const mainChildEnv = "VNETBENCH_AGENT_MAIN_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(mainChildEnv) != "" {
		Main(nil) // exits
	}
	os.Exit(m.Run())
}

// TestMainRefusesOutsidePID1: the agent started on a host (not PID 1)
// exits 2 with a line that says why, before its set-up: it never reaches
// the mounts (proc, devtmpfs on /dev, tmpfs on /tmp and /run), which as
// root would hide the host's own. The child runs in a private mount
// namespace when root, so a regression mounts nothing of the host's: it
// shows as the child still running after a minute (the set-up went on to
// wait for a guest's port), killed.
func TestMainRefusesOutsidePID1(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), mainChildEnv+"=1")
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("agent outside PID 1: %v, want exit 2; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "runs only as PID 1") || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("want one line saying it runs only as PID 1, got:\n%s", out)
	}
}
