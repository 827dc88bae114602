package iperf3

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGuestServer drives the guest op as the agent does: start waits for
// the server to listen (a /proc/net/tcp line for port 5201 in state 0A),
// a second start is an error, stop ends it and returns what the server
// printed on stdout and stderr, an unknown action and a missing program
// are errors that say what to do.
func TestGuestServer(t *testing.T) {
	s, dir := fakeServer(t, "#!/bin/sh\necho \"Server listening on $3\"\necho 'iperf3: error - unable to receive control message' >&2\nexec sleep 30\n")
	prog := s.path
	pid := s.cmds[0].Process.Pid
	if _, err := s.op("start", nil); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second start: %v, want already running", err)
	}
	for end := time.Now().Add(10 * time.Second); !strings.Contains(s.logs[0].String(), "error") && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	out, err := s.op("stop", nil)
	if err != nil || s.cmds != nil {
		t.Errorf("stop: %v, servers %v", err, s.cmds)
	}
	if !strings.Contains(out, "Server listening on 5201") || !strings.Contains(out, "unable to receive control message") {
		t.Errorf("stop returned %q, want the server's stdout and stderr", out)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
		t.Errorf("server %d still there after stop", pid)
	}
	if _, err := s.op("maybe", nil); err == nil || !strings.Contains(err.Error(), `want "start" or "stop"`) {
		t.Errorf("bad action: %v", err)
	}
	// Two servers for clients: per-stream, on 5201 and 5202 (0x1452).
	two := &server{path: prog, port: serverPort, procNet: dir}
	t.Cleanup(func() { two.stop() })
	if _, err := two.op("start", []string{"2"}); err == nil || !strings.Contains(err.Error(), "did not listen on port 5202") || two.cmds != nil {
		t.Errorf("start 2 with only 5201 listening: %v (servers %v), want port 5202 named and none left", err, two.cmds)
	}
	writeTCP(t, dir, 5201, 5202)
	if _, err := two.op("start", []string{"2"}); err != nil || len(two.cmds) != 2 {
		t.Errorf("start 2: %v, %d servers", err, len(two.cmds))
	} else if got := two.cmds[1].Args; strings.Join(got[1:], " ") != "-s -p 5202 --forceflush" {
		t.Errorf("second server %q", got)
	}
	if out := two.stop(); !strings.Contains(out, "port 5201:\n") || !strings.Contains(out, "port 5202:\n") {
		t.Errorf("stop of 2 servers returned %q, want each under its port", out)
	}
	for _, bad := range []string{"0", "x", "33"} {
		if _, err := two.op("start", []string{bad}); err == nil || !strings.Contains(err.Error(), "want 1 to 32") {
			t.Errorf("start %s: %v", bad, err)
		}
	}
	gone := &server{path: filepath.Join(dir, "nope"), port: serverPort, procNet: dir}
	if _, err := gone.op("start", nil); err == nil || !strings.Contains(err.Error(), "image build --iperf3") {
		t.Errorf("missing program: %v", err)
	}
	if _, ok := (Workload{}).GuestOps()[agentOp]; !ok {
		t.Errorf("GuestOps lacks %q", agentOp)
	}
}

// TestTailKeepsTheEnd: a server's log keeps its last serverLogMax bytes,
// where the error is.
func TestTailKeepsTheEnd(t *testing.T) {
	var tl tail
	tl.Write([]byte(strings.Repeat("x", serverLogMax)))
	tl.Write([]byte("iperf3: error - the end\n"))
	got := tl.String()
	if len(got) != serverLogMax || !strings.HasSuffix(got, "iperf3: error - the end\n") {
		t.Errorf("tail kept %d bytes ending %q", len(got), got[max(0, len(got)-30):])
	}
}

// TestGuestServerEndedEarly: a server that died in the middle of a test
// (here it exits 3 right away) is named in stop's reply with how it
// ended, the line the host quotes in a failed client's error.
func TestGuestServerEndedEarly(t *testing.T) {
	s, _ := fakeServer(t, "#!/bin/sh\nexit 3\n")
	pid := s.cmds[0].Process.Pid
	for end := time.Now().Add(10 * time.Second); !exited(pid) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	out, _ := s.op("stop", nil)
	if want := "the server on port 5201 had ended before stop: exit status 3"; !strings.Contains(out, want) {
		t.Errorf("stop returned %q, want %q", out, want)
	}
	if got := serverSaid(out); !strings.Contains(got, "exit status 3") {
		t.Errorf("serverSaid %q", got)
	}
}

// fakeServer starts a guest server whose program is script, in a new
// directory whose tcp file lists a listener on port 5201 (writeTCP); it
// returns the server and the directory.
func fakeServer(t *testing.T, script string) (*server, string) {
	t.Helper()
	dir := t.TempDir()
	prog := filepath.Join(dir, "iperf3")
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTCP(t, dir, serverPort)
	s := &server{path: prog, port: serverPort, procNet: dir}
	t.Cleanup(func() { s.stop() })
	if _, err := s.op("start", nil); err != nil {
		t.Fatalf("start: %v", err)
	}
	if len(s.cmds) != 1 || s.cmds[0].Process == nil {
		t.Fatal("start ran no server")
	}
	return s, dir
}

// writeTCP writes dir/tcp as the kernel lists sockets listening on
// 0.0.0.0 at ports (5201 is 0x1451).
func writeTCP(t *testing.T, dir string, ports ...int) {
	t.Helper()
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for i, p := range ports {
		tcp += fmt.Sprintf("%4d: 00000000:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n", i, p)
	}
	if err := os.WriteFile(filepath.Join(dir, "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
}
