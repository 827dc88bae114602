package iperf3

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/workload"
)

// The guest's iperf3 server: the program the image carries (Needs.
// GuestPrograms) on iperf3's default port.
const (
	guestServerPath = "/usr/bin/iperf3"
	serverPort      = 5201
)

// GuestOps: "iperf3" with action "start" (the servers listen when the
// reply comes; a second start is an error) or "stop". start's argument is
// the number of servers, on ports 5201 on (none: one), for clients:
// per-stream. stop's reply is what the servers printed (the last
// serverLogMax bytes of each), so a test the server broke off (a reset
// stream, a timeout) says why on the host.
func (Workload) GuestOps() map[string]workload.GuestOp {
	return map[string]workload.GuestOp{agentOp: guest.op}
}

// guest is the agent's iperf3 server (one per guest).
var guest = &server{path: guestServerPath, port: serverPort, procNet: "/proc/net"}

// server runs `iperf3 -s` in the guest, one per port from port on.
type server struct {
	path    string
	port    int
	procNet string // where tcp and tcp6 are read to see it listen

	mu   sync.Mutex
	cmds []*exec.Cmd
	logs []*tail
}

// serverLogMax bounds what is kept of one server's output: its last
// lines, where an error is.
const serverLogMax = 2048

// tail keeps the last serverLogMax bytes written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - serverLogMax; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func (s *server) op(action string, args []string) (string, error) {
	switch action {
	case "start":
		n := 1
		if len(args) > 0 {
			v, err := strconv.Atoi(args[0])
			if err != nil || v < 1 || v > maxPerStream {
				return "", fmt.Errorf("iperf3 start: %q servers: want 1 to %d", args[0], maxPerStream)
			}
			n = v
		}
		return "", s.start(n)
	case "stop":
		return s.stop(), nil
	}
	return "", fmt.Errorf("iperf3: action %q: want \"start\" or \"stop\"", action)
}

func (s *server) start(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cmds) > 0 {
		return errors.New("iperf3 start: already running")
	}
	if _, err := os.Stat(s.path); err != nil {
		return errors.New("iperf3 start: iperf3 is not in this image; rebuild it with iperf3 included (vnetbench image build --iperf3)")
	}
	for i := range n {
		// --forceflush: stdout is a pipe, and a server killed at stop
		// would lose what stdio still buffers.
		cmd := exec.Command(s.path, "-s", "-p", strconv.Itoa(s.port+i), "--forceflush")
		log := &tail{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			s.kill()
			return fmt.Errorf("iperf3 start: %w", err)
		}
		s.cmds = append(s.cmds, cmd)
		s.logs = append(s.logs, log)
	}
	// Wait until they listen, so the host can connect right after "ok".
	for i := range n {
		port := s.port + i
		ok := false
		for range 200 {
			if ok = s.listening(port); ok {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !ok {
			s.kill()
			return fmt.Errorf("iperf3 start: iperf3 -s did not listen on port %d within 2s", port)
		}
	}
	return nil
}

// stop ends the servers and returns what they printed, each under a
// "port N:" line when there were several, and how a server that ended
// before stop ended (a crash or the OOM killer in the middle of a test
// resets the host's streams).
func (s *server) stop() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmds, logs := s.cmds, s.logs
	ended := make([]bool, len(cmds))
	for i, cmd := range cmds {
		ended[i] = exited(cmd.Process.Pid)
	}
	s.kill()
	var b strings.Builder
	for i, l := range logs {
		if len(logs) > 1 {
			fmt.Fprintf(&b, "port %d:\n", s.port+i)
		}
		b.WriteString(l.String())
		if ended[i] && cmds[i].ProcessState != nil {
			fmt.Fprintf(&b, "iperf3: error - the server on port %d had ended before stop: %s\n", s.port+i, cmds[i].ProcessState)
		}
	}
	return b.String()
}

// exited reports whether pid, a child not yet waited for, has ended (a
// zombie in /proc/PID/stat).
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

func (s *server) kill() {
	for _, cmd := range s.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	s.cmds, s.logs = nil, nil
}

// listening reports whether a TCP socket listens on port (from
// procNet/tcp and tcp6: local address ":PORT" in hex, state 0A).
func (s *server) listening(port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"tcp", "tcp6"} {
		fh, err := os.Open(s.procNet + "/" + f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				fh.Close()
				return true
			}
		}
		fh.Close()
	}
	return false
}
