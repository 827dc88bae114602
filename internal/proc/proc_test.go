package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestQuote(t *testing.T) {
	got := Quote([]string{"perf", "stat", "-x,", "-e", "task-clock", "a b", "it's", "", "$HOME"})
	want := `perf stat -x, -e task-clock 'a b' 'it'\''s' '' '$HOME'`
	if got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
}

func TestRunOutputAndExitError(t *testing.T) {
	out, err := Real{}.Run(t.Context(), Cmd{Argv: []string{"sh", "-c", "echo hello; echo oops >&2; exit 3"}})
	if string(out) != "hello\n" {
		t.Errorf("stdout %q", out)
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 3 || !strings.Contains(ee.Error(), "oops") || !strings.Contains(ee.Error(), "exit status 3") {
		t.Fatalf("err = %v", err)
	}
	if ExitCodeOf(err) != 3 {
		t.Errorf("ExitCodeOf = %d", ExitCodeOf(err))
	}
}

func TestRunMissingProgram(t *testing.T) {
	_, err := Real{}.Run(t.Context(), Cmd{Argv: []string{"vnb-no-such-program"}})
	if err == nil || !strings.Contains(err.Error(), "vnb-no-such-program") {
		t.Fatalf("err = %v", err)
	}
}

// A cancelled context kills the whole process group, grandchildren too.
func TestCancelKillsGroup(t *testing.T) {
	ctx, cancel := contextWithCancel(t)
	pidfile := t.TempDir() + "/pid"
	p, err := Real{}.Start(ctx, Cmd{Argv: []string{"sh", "-c", "sleep 60 & echo $! > " + pidfile + "; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	var grandchild int
	for i := 0; i < 100 && grandchild == 0; i++ {
		b, _ := os.ReadFile(pidfile)
		s := strings.TrimSpace(string(b))
		if s != "" {
			for _, c := range s {
				grandchild = grandchild*10 + int(c-'0')
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if grandchild == 0 {
		t.Fatal("no grandchild pid")
	}
	cancel()
	err = p.Wait()
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal == "" {
		t.Errorf("err = %v, want killed by signal", err)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("err = %v, want it to say the context's end killed it", err)
	}
	for i := 0; i < 100; i++ {
		if syscall.Kill(grandchild, 0) != nil {
			return
		}
		// A zombie still answers kill(0) until reaped by init; check state.
		if b, _ := os.ReadFile("/proc/" + itoa(grandchild) + "/stat"); strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("grandchild %d survived", grandchild)
}

func TestStopGraceful(t *testing.T) {
	p, err := Real{}.Start(t.Context(), Cmd{Argv: []string{"sh", "-c", "trap 'echo bye; exit 0' INT; while :; do sleep 0.05; done"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := p.Stop(syscall.SIGINT, 5*time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if out, _ := p.Output(); !strings.Contains(out, "bye") {
		t.Errorf("output %q", out)
	}
}

func TestFakeTranscript(t *testing.T) {
	f := &Fake{Handler: func(c Cmd) (string, bool, error) {
		if c.Argv[0] == "iperf3" {
			return "{}", true, nil
		}
		return "", false, nil
	}}
	if _, err := f.Run(t.Context(), Cmd{Argv: []string{"tc", "qdisc", "show"}, Netns: "vnb-1"}); err != nil {
		t.Fatal(err)
	}
	p, _ := f.Start(t.Context(), Cmd{Argv: []string{"iperf3", "-c", "10.0.0.2"}})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	q, _ := f.Start(t.Context(), Cmd{Argv: []string{"perf", "stat"}})
	select {
	case <-q.Done():
		t.Fatal("perf exited before Stop")
	default:
	}
	q.Stop(syscall.SIGINT, time.Second)
	want := "run ip netns exec vnb-1 tc qdisc show\nstart iperf3 -c 10.0.0.2\nstart perf stat\n"
	if got := f.Transcript(); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

// One writer for stdout and stderr keeps the child's order across them
// (make prints "Error 1" on stderr after gcc's lines on stdout).
func TestSameWriterKeepsOrder(t *testing.T) {
	var script strings.Builder
	var want strings.Builder
	for i := range 200 {
		fd := 1 + i%2
		fmt.Fprintf(&script, "echo l%d >&%d; ", i, fd)
		fmt.Fprintf(&want, "l%d\n", i)
	}
	var buf bytes.Buffer
	if _, err := (Real{}).Run(t.Context(), Cmd{Argv: []string{"sh", "-c", script.String()}, Stdout: &buf, Stderr: &buf}); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want.String() {
		t.Errorf("order lost across stdout and stderr: %.200q", buf.String())
	}
}

// A command killed by someone else, its context live, is not an
// interrupt: its error does not say context.Canceled.
func TestKilledNotByContext(t *testing.T) {
	p, err := Real{}.Start(t.Context(), Cmd{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != "killed" || errors.Is(err, context.Canceled) || ee.Ctx != nil {
		t.Errorf("err = %v, want killed, not by the context", err)
	}
}
