package qemu

import (
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
