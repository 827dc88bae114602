package proc

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Fake is a recording Executor for unit tests. It runs nothing: every
// command is recorded, and Handler (when set) decides its output and error.
// Started processes run until stopped, signalled, or their context ends,
// unless Handler returns Exit.
type Fake struct {
	// Handler returns the stdout of c and its error. For Start, a nil
	// error with exit=true makes the process exit at once.
	Handler func(c Cmd) (stdout string, exit bool, err error)

	mu    sync.Mutex
	calls []Cmd
	kinds []string
}

var _ Executor = (*Fake)(nil)

// Calls returns the commands recorded so far.
func (f *Fake) Calls() []Cmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Cmd(nil), f.calls...)
}

// Transcript returns one line per recorded command, quoted for a shell,
// with "run" or "start" in front: the text golden tests compare.
func (f *Fake) Transcript() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for i, c := range f.calls {
		fmt.Fprintf(&b, "%s %s\n", f.kinds[i], c.String())
	}
	return b.String()
}

func (f *Fake) record(kind string, c Cmd) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.kinds = append(f.kinds, kind)
	f.mu.Unlock()
}

// Run implements Executor.
func (f *Fake) Run(ctx context.Context, c Cmd) ([]byte, error) {
	f.record("run", c)
	if err := ctx.Err(); err != nil {
		return nil, &ExitError{Argv: c.FullArgv(), ExitCode: -1, Err: err}
	}
	if f.Handler == nil {
		return nil, nil
	}
	out, _, err := f.Handler(c)
	if c.Stdout != nil {
		io.WriteString(c.Stdout, out)
	}
	return []byte(out), err
}

// Start implements Executor.
func (f *Fake) Start(ctx context.Context, c Cmd) (Process, error) {
	f.record("start", c)
	if err := ctx.Err(); err != nil {
		return nil, &ExitError{Argv: c.FullArgv(), ExitCode: -1, Err: err}
	}
	p := &fakeProc{pid: 100000 + len(f.Calls()), done: make(chan struct{})}
	var exit bool
	if f.Handler != nil {
		var out string
		var err error
		out, exit, err = f.Handler(c)
		p.stdout = out
		if c.Stdout != nil {
			io.WriteString(c.Stdout, out)
		}
		if err != nil {
			p.finish(err)
		}
	}
	if exit {
		p.finish(nil)
	}
	go func() {
		select {
		case <-ctx.Done():
			p.finish(&ExitError{Argv: c.FullArgv(), ExitCode: -1, Signal: "killed", signo: syscall.SIGKILL, Err: ctx.Err()})
		case <-p.done:
		}
	}()
	return p, nil
}

type fakeProc struct {
	pid    int
	stdout string
	once   sync.Once
	done   chan struct{}
	err    error
	sigs   []syscall.Signal
	mu     sync.Mutex
}

func (p *fakeProc) finish(err error) {
	p.once.Do(func() { p.err = err; close(p.done) })
}

func (p *fakeProc) Pid() int { return p.pid }
func (p *fakeProc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	p.sigs = append(p.sigs, sig)
	p.mu.Unlock()
	p.finish(nil)
	return nil
}
func (p *fakeProc) Wait() error              { <-p.done; return p.err }
func (p *fakeProc) Done() <-chan struct{}    { return p.done }
func (p *fakeProc) Output() (string, string) { return p.stdout, "" }
func (p *fakeProc) Stop(sig syscall.Signal, _ time.Duration) error {
	_ = p.Signal(sig)
	return p.Wait()
}
