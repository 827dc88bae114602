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
// per-stream.
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
		s.stop()
		return "", nil
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
		cmd := exec.Command(s.path, "-s", "-p", strconv.Itoa(s.port+i))
		if err := cmd.Start(); err != nil {
			s.kill()
			return fmt.Errorf("iperf3 start: %w", err)
		}
		s.cmds = append(s.cmds, cmd)
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

func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

func (s *server) kill() {
	for _, cmd := range s.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	s.cmds = nil
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
