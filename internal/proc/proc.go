// Package proc starts the programs vnetbench drives (QEMU, perf, iperf3,
// trafgen, ip). It offers one small Executor interface with plain-data
// commands: Run for short tools, Start for long-lived ones. The real
// executor puts each child in its own process group, kills the group when
// the context is cancelled and returns errors that carry the argv, the exit
// status and the tail of the output. Fake records commands for unit tests.
//
// proc never builds a shell string: argv only. It does not know what the
// programs are for; runner and runner/qemu do.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cmd is one program to run, as plain data.
type Cmd struct {
	// Argv is the program and its arguments; Argv[0] is looked up in PATH
	// (unless Root names the program's file).
	Argv []string
	// Dir is the working directory ("" = the harness's).
	Dir string
	// Env holds extra "KEY=value" entries added to the harness's
	// environment (the whole environment when Root is set).
	Env []string
	// Netns names a network namespace (/run/netns/NAME) to run the program
	// in, via `ip netns exec NAME`; "" = the harness's namespace.
	Netns string
	// Stdin, Stdout and Stderr are the child's streams. Output is also kept
	// for error messages (the last TailBytes) whatever these are set to.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// ExtraFiles are the child's descriptors 3, 4, ... (a pipe the child
	// reports on).
	ExtraFiles []*os.File
	// Root, when set, starts the program chrooted, with exactly Env as
	// its environment and in a session of its own: see Root.
	Root *Root
}

// FullArgv returns the full argv the executor runs, including the
// `ip netns exec NAME` prefix when Netns is set.
func (c Cmd) FullArgv() []string {
	if c.Netns == "" {
		return append([]string(nil), c.Argv...)
	}
	return append([]string{"ip", "netns", "exec", c.Netns}, c.Argv...)
}

// String is the command quoted for a POSIX shell (for logs and reproduce.sh).
func (c Cmd) String() string { return Quote(c.FullArgv()) }

// Executor runs commands. Every blocking call takes ctx first.
type Executor interface {
	// Run runs c to completion and returns its standard output (also
	// copied to c.Stdout when set; none when c.Root hands the child a
	// Stdout file). A non-zero exit is an *ExitError.
	Run(ctx context.Context, c Cmd) ([]byte, error)
	// Start starts c and returns at once. Cancelling ctx kills the
	// process group.
	Start(ctx context.Context, c Cmd) (Process, error)
}

// Process is a started command.
type Process interface {
	// Pid is the child's process id (also its process group id).
	Pid() int
	// Signal sends sig to the child's whole process group.
	Signal(sig syscall.Signal) error
	// Wait waits for the child to exit; it may be called more than once
	// and from several goroutines. A non-zero exit is an *ExitError.
	Wait() error
	// Done is closed when the child has exited.
	Done() <-chan struct{}
	// Stop sends sig to the group, waits up to grace, then kills the
	// group with SIGKILL and waits. It returns Wait's error.
	Stop(sig syscall.Signal, grace time.Duration) error
	// Output returns what the child has written to stdout so far (the
	// last TailBytes) and stderr likewise.
	Output() (stdout, stderr string)
}

// TailBytes is how much of a child's output is kept for errors.
const TailBytes = 4096

// ExitError is a command that exited non-zero, was killed by a signal, or
// could not start.
type ExitError struct {
	Argv     []string
	ExitCode int    // -1 when killed by a signal or not started
	Signal   string // "killed", "interrupt", ... when killed by a signal
	Tail     string // last lines of stderr (or stdout when stderr is empty)
	Err      error  // the underlying error
	// Ctx is the context's error when its end killed the command (an
	// interrupt, a deadline): errors.Is(err, context.Canceled) holds.
	Ctx   error
	signo syscall.Signal
}

// Status is the exit status of a command that ran, as a shell reports it:
// its exit code, or 128 plus the number of the signal that killed it. ok
// is false when the command did not start or could not be waited for.
func (e *ExitError) Status() (status int, ok bool) {
	switch {
	case e.signo != 0:
		return 128 + int(e.signo), true
	case e.ExitCode >= 0:
		return e.ExitCode, true
	}
	return -1, false
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString(shortArgv(e.Argv))
	switch {
	case e.Signal != "" && e.Ctx != nil:
		fmt.Fprintf(&b, ": killed by signal %s (%v)", e.Signal, e.Ctx)
	case e.Signal != "":
		fmt.Fprintf(&b, ": killed by signal %s", e.Signal)
	case e.ExitCode >= 0:
		fmt.Fprintf(&b, ": exit status %d", e.ExitCode)
	default:
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if t := strings.TrimSpace(e.Tail); t != "" {
		b.WriteString(": ")
		b.WriteString(lastLines(t, 5))
	}
	return b.String()
}

func (e *ExitError) Unwrap() []error {
	if e.Ctx != nil {
		return []error{e.Err, e.Ctx}
	}
	return []error{e.Err}
}

func shortArgv(argv []string) string {
	s := Quote(argv)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Quote quotes argv for a POSIX shell: words made only of safe characters
// stay bare, everything else is single-quoted.
func Quote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = quoteWord(a)
	}
	return strings.Join(out, " ")
}

func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LookPath finds a program in PATH, as Run and Start do (exec.LookPath):
// for a check that a tool is installed before anything starts.
func LookPath(name string) (string, error) { return exec.LookPath(name) }

// Real is the Executor that starts real processes.
type Real struct{}

var _ Executor = Real{}

// Run implements Executor.
func (r Real) Run(ctx context.Context, c Cmd) ([]byte, error) {
	var out bytes.Buffer
	cc := c
	_, file := c.Stdout.(*os.File)
	switch {
	case file && c.Root != nil: // the child writes to the file itself: nothing to return
	case c.Stdout != nil:
		cc.Stdout = io.MultiWriter(&out, c.Stdout)
		if sameWriter(c.Stdout, c.Stderr) {
			cc.Stderr = cc.Stdout // one pipe, the child's order (the output has both)
		}
	default:
		cc.Stdout = &out
	}
	p, err := r.Start(ctx, cc)
	if err != nil {
		return nil, err
	}
	err = p.Wait()
	return out.Bytes(), err
}

// Start implements Executor.
func (Real) Start(ctx context.Context, c Cmd) (Process, error) {
	argv := c.FullArgv()
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	if err := ctx.Err(); err != nil {
		return nil, &ExitError{Argv: argv, ExitCode: -1, Err: err}
	}
	p := &realProc{argv: argv, done: make(chan struct{})}
	cmd, err := p.command(c)
	if err != nil {
		return nil, &ExitError{Argv: argv, ExitCode: -1, Err: err}
	}
	if err := StartCmd(cmd); err != nil {
		return nil, &ExitError{Argv: argv, ExitCode: -1, Err: err}
	}
	p.cmd = cmd
	go func() {
		err := cmd.Wait()
		p.err = p.wrap(ctx, err)
		close(p.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-p.done:
		}
	}()
	return p, nil
}

// command is the exec.Cmd that starts c, its output kept in p's tails.
func (p *realProc) command(c Cmd) (*exec.Cmd, error) {
	if c.Root != nil {
		return rootCmd(c, p)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	cmd.Stdin, cmd.ExtraFiles = c.Stdin, c.ExtraFiles
	cmd.Stdout, cmd.Stderr = streams(c, p, teeTail)
	// Own process group (killed as a whole); die with the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

type realProc struct {
	argv           []string
	cmd            *exec.Cmd
	stdout, stderr tail
	done           chan struct{}
	err            error
}

func (p *realProc) Pid() int { return p.cmd.Process.Pid }

func (p *realProc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func (p *realProc) Wait() error { <-p.done; return p.err }

func (p *realProc) Done() <-chan struct{} { return p.done }

func (p *realProc) Stop(sig syscall.Signal, grace time.Duration) error {
	_ = p.Signal(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.Signal(syscall.SIGKILL)
		<-p.done
	}
	return p.err
}

func (p *realProc) Output() (string, string) { return p.stdout.String(), p.stderr.String() }

// wrap is the command's error, err from cmd.Wait; a command that
// SIGKILL ended after ctx ended was killed by ctx's end (Start's
// watcher) and says so (ExitError.Ctx).
func (p *realProc) wrap(ctx context.Context, err error) error {
	if err == nil {
		// The leader exited; make sure nothing of its group lingers.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	e := &ExitError{Argv: p.argv, ExitCode: -1, Err: err}
	if t := p.stderr.String(); strings.TrimSpace(t) != "" {
		e.Tail = t
	} else {
		e.Tail = p.stdout.String()
	}
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal, e.signo = ws.Signal().String(), ws.Signal()
			if e.signo == syscall.SIGKILL {
				e.Ctx = ctx.Err()
			}
		} else {
			e.ExitCode = xe.ExitCode()
		}
	}
	return e
}

// tail keeps the last TailBytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*TailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailBytes:]...)
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > TailBytes {
		b = b[len(b)-TailBytes:]
	}
	return string(b)
}

// streams are the child's stdout and stderr, each through wrap with its
// tail; one writer for both when c gives the same writer for both, so
// that the child writes them to one pipe in the order it wrote them (two
// pipes read by two goroutines reorder them: gcc's error on stderr
// lands after make's "Error 1", which it printed before).
func streams(c Cmd, p *realProc, wrap func(*tail, io.Writer) io.Writer) (stdout, stderr io.Writer) {
	if sameWriter(c.Stdout, c.Stderr) {
		w := wrap(&p.stdout, c.Stdout)
		return w, w
	}
	return wrap(&p.stdout, c.Stdout), wrap(&p.stderr, c.Stderr)
}

// sameWriter reports whether a and b are one writer (and not nil).
func sameWriter(a, b io.Writer) bool {
	if a == nil || b == nil {
		return false
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

func teeTail(t *tail, w io.Writer) io.Writer {
	if w == nil {
		return t
	}
	return io.MultiWriter(t, w)
}

// ExitCodeOf returns the exit code carried by err (-1 if none).
func ExitCodeOf(err error) int {
	var e *ExitError
	if errors.As(err, &e) {
		return e.ExitCode
	}
	return -1
}
