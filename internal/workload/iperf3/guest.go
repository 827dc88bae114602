package iperf3

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// GuestOps: "iperf3" with action "start" (the server listens when the
// reply comes; a second start is an error) or "stop".
func (Workload) GuestOps() map[string]workload.GuestOp {
	return map[string]workload.GuestOp{agentOp: guest.op}
}

// guest is the agent's iperf3 server (one per guest).
var guest = &server{path: guestServerPath, port: serverPort, procNet: "/proc/net"}

// server runs `iperf3 -s` in the guest.
type server struct {
	path    string
	port    int
	procNet string // where tcp and tcp6 are read to see it listen

	mu  sync.Mutex
	cmd *exec.Cmd
}

func (s *server) op(action string, _ []string) (string, error) {
	switch action {
	case "start":
		return "", s.start()
	case "stop":
		s.stop()
		return "", nil
	}
	return "", fmt.Errorf("iperf3: action %q: want \"start\" or \"stop\"", action)
}

func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("iperf3 start: already running")
	}
	if _, err := os.Stat(s.path); err != nil {
		return errors.New("iperf3 start: iperf3 is not in this image; rebuild it with iperf3 included (vnetbench image build --iperf3)")
	}
	cmd := exec.Command(s.path, "-s", "-p", fmt.Sprint(s.port))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("iperf3 start: %w", err)
	}
	s.cmd = cmd
	// Wait until it listens, so the host can connect right after "ok".
	for range 200 {
		if s.listening() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.kill()
	return fmt.Errorf("iperf3 start: iperf3 -s did not listen on port %d within 2s", s.port)
}

func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// listening reports whether a TCP socket listens on the port (from
// procNet/tcp and tcp6: local address ":PORT" in hex, state 0A).
func (s *server) listening() bool {
	want := fmt.Sprintf(":%04X", s.port)
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
