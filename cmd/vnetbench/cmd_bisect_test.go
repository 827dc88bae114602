package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/labvm"
)

// bisect-step's exits are git bisect run's: 0 good, 1 bad, 125 skip, and
// never 128 or above, even when a signal interrupted it.
func TestBisectStepExitCodes(t *testing.T) {
	for _, tc := range []struct {
		o    bisect.Outcome
		err  error
		want int
	}{
		{bisect.Outcome{Verdict: verdict.Same}, nil, 0},
		{bisect.Outcome{Verdict: verdict.Different, Bad: true, Pct: -20}, nil, 1},
		{bisect.Outcome{Verdict: verdict.Unknown, Skip: true}, nil, 125},
		{bisect.Outcome{}, fmt.Errorf("make failed: %w", bisect.ErrBuild), 125},
	} {
		err := stepResult(tc.o, tc.err)
		if got := exitCode(err); got != tc.want {
			t.Errorf("%+v, %v: exit %d, want %d", tc.o, tc.err, got, tc.want)
		}
		if got := exitCodeAfter(err, &signalError{syscall.SIGINT}); err != nil && got >= 128 {
			t.Errorf("interrupted: exit %d, want below 128", got)
		}
	}
	// Bad usage skips (125) instead of exit 2, which git bisect run
	// would read as "bad".
	if got := exitCode(run(t.Context(), []string{"bisect-step", "quickstart"}, io.Discard, io.Discard)); got != 125 {
		t.Errorf("bad usage: exit %d, want 125", got)
	}
}

// gitTree makes a git tree with n commits on top of a root commit.
func gitTree(t *testing.T, n int) (dir string, commits []string) {
	t.Helper()
	testenv.NeedCommand(t, "git", "")
	dir = t.TempDir()
	gitc := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@example.org", "-c", "user.name=t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitc("init", "-q")
	kernelSkeleton(t, dir)
	gitc("add", ".")
	// The content names the tree: two trees made in the same second
	// would otherwise share their commits' hashes.
	for i := range n + 1 {
		os.WriteFile(filepath.Join(dir, "f"), []byte(fmt.Sprint(dir, i)), 0o644)
		gitc("add", "f")
		gitc("commit", "-q", "-m", fmt.Sprint("c", i))
		commits = append(commits, gitc("rev-parse", "HEAD"))
	}
	return dir, commits
}

// kernelSkeleton writes the files a build checks a kernel tree by
// (kbuild.IsKernelTree), which bisect checks first.
func kernelSkeleton(t *testing.T, dir string) {
	t.Helper()
	for f, text := range map[string]string{
		"Makefile": "VERSION = 6\nPATCHLEVEL = 1\n", "Kconfig": "", "arch/x86/Makefile": "", "scripts/kconfig/Makefile": "",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// bisect lists the commits of the tree, judges them (here a fake judge:
// from commit 21 on bad, commit 12 does not build), names the culprit with
// the evidence and resumes from its state without judging again.
func TestBisectCLI(t *testing.T) {
	tree, commits := gitTree(t, 40)
	var judged []string
	cl := testCLI()
	cl.stepInline = true
	cl.judge = func(_ context.Context, o *bisectOpts, c string, _, _ io.Writer) (bisect.Outcome, error) {
		judged = append(judged, c)
		switch i := indexOf(commits, c); {
		case i == 12:
			return bisect.Outcome{}, fmt.Errorf("make: %w", bisect.ErrBuild)
		case i >= 21:
			return bisect.Outcome{Verdict: verdict.Different, Bad: true, Pct: -12, Reps: 10}, nil
		default:
			return bisect.Outcome{Verdict: verdict.Same, Pct: 0.3, Reps: 36}, nil
		}
	}
	out := t.TempDir()
	args := []string{"bisect", "quickstart", "--tree", tree, "--good", commits[0], "--bad", commits[40], "--metric", "tx_pps", "-o", out}
	var b strings.Builder
	if err := cl.run(t.Context(), args, &b, io.Discard); err != nil {
		t.Fatalf("bisect: %v\n%s", err, b.String())
	}
	if !strings.Contains(b.String(), "first bad commit: "+commits[21]) || !strings.Contains(b.String(), "40 commits") {
		t.Errorf("output:\n%s", b.String())
	}
	n := len(judged)
	judged = nil
	b.Reset()
	if err := cl.run(t.Context(), args, &b, io.Discard); err != nil || len(judged) != 0 || !strings.Contains(b.String(), fmt.Sprintf("resuming with %d judged commits", n)) {
		t.Errorf("resumed: %v, judged %d again; output:\n%s", err, len(judged), b.String())
	}
	// bisect-step judges HEAD.
	judged = nil
	step := []string{"bisect-step", "quickstart", "--tree", tree, "--good", commits[0], "--metric", "tx_pps", "-o", out}
	if err := cl.run(t.Context(), step, io.Discard, io.Discard); exitCode(err) != 1 || len(judged) != 1 || judged[0] != commits[40] {
		t.Errorf("bisect-step at the bad HEAD: exit %d (%v), judged %v", exitCode(err), err, judged)
	}
	if err := run(t.Context(), []string{"bisect", "quickstart", "--tree", tree, "--good", commits[0], "--bad", commits[40], "--metric", "tx_pps"}, io.Discard, io.Discard); exitCode(err) != exitBadInput {
		t.Errorf("no -o: exit %d, want 2", exitCode(err))
	}
	// One commit is "1 commit" (it said "1 commits between").
	b.Reset()
	one := []string{"bisect", "quickstart", "--tree", tree, "--good", commits[39], "--bad", commits[40], "--metric", "tx_pps", "-o", t.TempDir()}
	if err := cl.run(t.Context(), one, &b, io.Discard); err != nil || !strings.Contains(b.String(), "bisect: 1 commit between") {
		t.Errorf("one commit: %v; output:\n%s", err, b.String())
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// The gate follows the metric's better direction and --change: a
// regression of tx_pps is a fall, an improvement of lost_pps a fall too.
func TestBisectGate(t *testing.T) {
	for _, tc := range []struct{ metric, change, want string }{
		{"tx_pps", "worse", "tx_pps<+0%"},
		{"tx_pps", "better", "tx_pps>+0%"},
		{"lost_pps", "worse", "lost_pps>+0%"},
		{"lost_pps", "better", "lost_pps<+0%"},
	} {
		o := &bisectOpts{metric: tc.metric, change: tc.change}
		if got, err := o.gate(); err != nil || got != tc.want {
			t.Errorf("%s --change %s: gate %q (%v), want %q", tc.metric, tc.change, got, err, tc.want)
		}
	}
	o := &bisectOpts{metric: "tx_pps", change: "faster"}
	if _, err := o.gate(); exitCode(err) != exitBadInput {
		t.Errorf("--change faster: %v (exit %d), want bad input", err, exitCode(err))
	}
}

// A failed step run skips the commit only when it is the candidate's
// fault (its build, its lab); the good ref's build, a busy host or an
// interrupt end the search instead of skipping every commit.
func TestBisectStepError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		skip bool
	}{
		{&kbuild.BuildError{Label: "candidate", Err: errors.New("exit status 2")}, true},
		{&lab.Error{Failed: []error{&labvm.Error{Label: "candidate", Phase: "boot", Err: errors.New("no boot")}}, Of: 2}, true},
		{&lab.Error{Failed: []error{&labvm.InnerError{Label: "candidate", Code: 1}}, Of: 2}, true},
		{&lab.Error{Failed: []error{&labvm.Error{Label: "good", Phase: "boot", Err: errors.New("no boot")}}, Of: 2}, false},
		{&kbuild.BuildError{Label: "good", Err: errors.New("exit status 2")}, false},
		{&runner.BusyError{Path: "/run/vnetbench.lock", Owner: "pid 1"}, false},
		{context.Canceled, false},
	} {
		err := stepError(fmt.Errorf("run: %w", tc.err))
		if got := errors.Is(err, bisect.ErrBuild); got != tc.skip {
			t.Errorf("%T: skip %v, want %v", tc.err, got, tc.skip)
		}
	}
}

// bisect without its required arguments said so in two lines, the first
// naming every flag but --bad and the second --bad alone: one line names
// them all, whichever is missing.
func TestBisectMissingArgsOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"bisect", "quickstart"},
		{"bisect", "quickstart", "--tree", "t", "--good", "a", "--metric", "tx_pps", "-o", "o"},
		{"bisect", "quickstart", "--tree", "t", "--good", "a", "--bad", "b", "--metric", "tx_pps"},
	} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		if exitCode(err) != exitBadInput {
			t.Errorf("%v: exit %d (%v), want 2", args, exitCode(err), err)
			continue
		}
		const want = "bisect: want SCENARIO, --tree DIR, --good REF, --bad REF, --metric M and -o DIR"
		if msg := err.Error(); msg != want {
			t.Errorf("%v: %q, want %q", args, msg, want)
		}
	}
}

// Bad input to bisect is refused before anything is listed or made: a
// mistyped scenario made -o's directory of the first candidate, printed
// "skipped commits hide the first bad commit; it is one of: " with no
// commit and said to resume; a --tree that is no git repository read as
// a --good that is no commit of it. bisect-step skips (125) with the
// same line.
func TestBisectBadInputFirst(t *testing.T) {
	tree, commits := gitTree(t, 2)
	plain := t.TempDir()
	notKernel := t.TempDir() // a git repository of something else
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "c"}} {
		if out, err := exec.Command("git", append([]string{"-C", notKernel, "-c", "user.email=t@example.org", "-c", "user.name=t"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, tc := range []struct {
		scenario, tree string
		extra          []string
		want           string
	}{
		{"quickstrat", tree, nil, `no built-in scenario or file named "quickstrat"; did you mean quickstart?`},
		{"quickstart", tree, []string{"--set", "qdisc=fq_codle"}, `unknown qdisc "fq_codle"; did you mean fq_codel?`},
		{"quickstart", tree, []string{"--min-effect", "5"}, "bisect: --min-effect:"},
		{"quickstart", tree, []string{"--max-repetitions", "0"}, "bisect: --max-repetitions 0: want 3"},
		{"quickstart", tree, []string{"--max-repetitions", "1000"}, "bisect: --max-repetitions 1000: want 3"},
		{"quickstart", plain, nil, "bisect: --tree " + plain + " is not a git repository"},
		{"quickstart", filepath.Join(plain, "none"), nil, "bisect: --tree " + filepath.Join(plain, "none") + ": no such file or directory"},
		{"quickstart", notKernel, nil, "bisect: --tree " + notKernel + " is not a Linux kernel tree"},
	} {
		out := filepath.Join(t.TempDir(), "bisect")
		args := append([]string{"bisect", tc.scenario, "--tree", tc.tree, "--good", commits[0], "--bad", commits[2], "--metric", "tx_pps", "-o", out}, tc.extra...)
		var stdout bytes.Buffer
		err := run(t.Context(), args, &stdout, io.Discard)
		if exitCode(err) != exitBadInput || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d (%v), want 2 and one line with %q", args[1:], exitCode(err), err, tc.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%v: printed %q", args[1:], stdout.String())
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%v: made %s", args[1:], out)
		}
		cl := testCLI()
		cl.stepInline = true
		step := append([]string{"bisect-step", tc.scenario, "--tree", tc.tree, "--good", commits[0], "--metric", "tx_pps", "-o", out}, tc.extra...)
		err = cl.run(t.Context(), step, io.Discard, io.Discard)
		if exitCode(err) != 125 || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%v: exit %d (%v), want 125 with %q", step[1:], exitCode(err), err, tc.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%v: made %s", step[1:], out)
		}
	}
}
