package iperf3

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGuestServer drives the guest op as the agent does: start waits for
// the server to listen (a /proc/net/tcp line for port 5201 in state 0A),
// a second start is an error, stop ends it, an unknown action and a
// missing program are errors that say what to do.
func TestGuestServer(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "iperf3")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A listening socket on 0.0.0.0:5201 (0x1451), as the kernel lists it.
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n"
	if err := os.WriteFile(filepath.Join(dir, "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &server{path: prog, port: serverPort, procNet: dir}
	t.Cleanup(s.stop)
	if _, err := s.op("start", nil); err != nil {
		t.Fatalf("start: %v", err)
	}
	if s.cmd == nil || s.cmd.Process == nil {
		t.Fatal("start ran no server")
	}
	pid := s.cmd.Process.Pid
	if _, err := s.op("start", nil); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second start: %v, want already running", err)
	}
	if _, err := s.op("stop", nil); err != nil || s.cmd != nil {
		t.Errorf("stop: %v, server %v", err, s.cmd)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
		t.Errorf("server %d still there after stop", pid)
	}
	if _, err := s.op("maybe", nil); err == nil || !strings.Contains(err.Error(), `want "start" or "stop"`) {
		t.Errorf("bad action: %v", err)
	}
	gone := &server{path: filepath.Join(dir, "nope"), port: serverPort, procNet: dir}
	if _, err := gone.op("start", nil); err == nil || !strings.Contains(err.Error(), "image build --iperf3") {
		t.Errorf("missing program: %v", err)
	}
	if _, ok := (Workload{}).GuestOps()[agentOp]; !ok {
		t.Errorf("GuestOps lacks %q", agentOp)
	}
}
