package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// stepChildEnv names, in the child bisect-step starts, the descriptor
// the child writes its verdict to.
const stepChildEnv = "VNETBENCH_BISECT_STEP_VERDICT_FD"

// isolateStep runs bisect-step's judgment in a child process and exits
// 0 (good) or 1 (bad) only when the child wrote that verdict after a
// measurement and then exited 0. Anything else the child does (help, a
// panic, a runtime out of memory, which exits 2 and which no recover
// catches, a kill) is 125: git bisect run skips the commit instead of
// taking a crash for "bad".
func isolateStep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return &stepExit{125, fmt.Sprintf("skip: %v", err)}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return &stepExit{125, fmt.Sprintf("skip: %v", err)}
	}
	defer r.Close()
	// The child's lifetime is its own: an interrupt reaches it as
	// SIGTERM (its run tears down), then a kill if it does not end.
	p, err := (proc.Real{}).Start(context.WithoutCancel(ctx), proc.Cmd{Argv: append([]string{exe, "bisect-step"}, args...),
		Env: []string{stepChildEnv + "=3"}, Stdout: stdout, Stderr: stderr, ExtraFiles: []*os.File{w}})
	w.Close()
	if err != nil {
		return &stepExit{125, fmt.Sprintf("skip: %v", err)}
	}
	stop := context.AfterFunc(ctx, func() { p.Stop(syscall.SIGTERM, time.Minute) })
	defer stop()
	verdict, _ := io.ReadAll(io.LimitReader(r, 16))
	werr := p.Wait()
	switch {
	case werr == nil && string(verdict) == "good":
		return nil
	case werr == nil && string(verdict) == "bad":
		return &stepExit{1, "bad"}
	case werr == nil:
		return &stepExit{125, "skip: nothing was measured"}
	}
	var ee *proc.ExitError
	if errors.As(werr, &ee) && ee.ExitCode == 125 {
		return &stepExit{125, "skip"} // the child said why
	}
	return &stepExit{125, fmt.Sprintf("skip: the judging process ended without a verdict (%v)", werr)}
}

// stepChildMain runs bisect-step in the child isolateStep starts and
// writes its verdict, if it measured one, to the descriptor named in
// stepChildEnv. It returns the exit code.
func stepChildMain(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) int {
	fd, _ := strconv.Atoi(os.Getenv(stepChildEnv))
	os.Unsetenv(stepChildEnv)
	cl.stepInline = true
	err := cl.run(ctx, args, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vnetbench: %v\n", err)
	}
	// judgeStep returns nil only for a measured good HEAD and a stepExit
	// with code 1 only for a measured bad one.
	var se *stepExit
	verdict := ""
	switch {
	case err == nil:
		verdict = "good"
	case errors.As(err, &se) && se.code == 1:
		verdict = "bad"
	}
	if fd < 3 || verdict == "" || ctx.Err() != nil {
		return 125
	}
	f := os.NewFile(uintptr(fd), "verdict")
	if _, err := f.WriteString(verdict); err != nil || f.Close() != nil {
		return 125
	}
	return 0
}
