package qemu

import (
	"bufio"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// exited is a proc.Process that has exited (done closed) with err, or is
// still running.
type exited struct {
	done   chan struct{}
	err    error
	stderr string
}

func (p *exited) Pid() int                                 { return 1 }
func (p *exited) Signal(syscall.Signal) error              { return nil }
func (p *exited) Wait() error                              { <-p.done; return p.err }
func (p *exited) Done() <-chan struct{}                    { return p.done }
func (p *exited) Stop(syscall.Signal, time.Duration) error { return p.Wait() }
func (p *exited) Output() (stdout, stderr string)          { return "", p.stderr }

func gone(err error, stderr string) *exited {
	p := &exited{done: make(chan struct{}), err: err, stderr: stderr}
	close(p.done)
	return p
}

func TestExitState(t *testing.T) {
	killed := &proc.ExitError{Argv: []string{"qemu-system-x86_64"}, ExitCode: -1, Signal: "killed"}
	for _, tc := range []struct {
		name string
		p    proc.Process
		want string
	}{
		{"running", &exited{done: make(chan struct{})}, "QEMU is still running"},
		{"killed", gone(killed, ""), "QEMU exited: qemu-system-x86_64: killed by signal killed"},
		{"powered off", gone(nil, ""), "QEMU exited with status 0 (the guest powered off, or rebooted: a kernel panic)"},
		{"stderr's last 5 lines", gone(nil, "1\n2\n3\n4\n5\n6\n"),
			"QEMU exited with status 0 (the guest powered off, or rebooted: a kernel panic); its stderr: 2 | 3 | 4 | 5 | 6"},
	} {
		vm := &VM{proc: tc.p}
		if got := vm.ExitState(); got != tc.want {
			t.Errorf("%s: ExitState() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Agent waits for QEMU to make the agent's socket, then hands out the
// connection; a VM whose socket never comes fails when ctx ends, naming
// the socket; a VM without an agent port has no agent.
func TestAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.sock")
	vm := &VM{Config: Config{AgentSocket: path}}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := vm.Agent(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), path) {
		t.Errorf("no socket: err = %v", err)
	}
	accepted := make(chan string, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // after Agent's first dial
		l, err := net.Listen("unix", path)
		if err != nil {
			accepted <- err.Error()
			return
		}
		defer l.Close()
		c, err := l.Accept()
		if err != nil {
			accepted <- err.Error()
			return
		}
		defer c.Close()
		b, _ := bufio.NewReader(c).ReadString('\n')
		accepted <- b
	}()
	conn, err := vm.Agent(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("{\"op\":\"ping\"}\n"))
	conn.Close()
	if got := <-accepted; got != "{\"op\":\"ping\"}\n" {
		t.Errorf("agent socket read %q", got)
	}
	if _, err := (&VM{}).Agent(t.Context()); err == nil {
		t.Error("a VM without an agent port handed out a connection")
	}
}
