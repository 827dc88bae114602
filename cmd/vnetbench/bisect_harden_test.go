package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// A ref is never an option to git: --good and --bad of the form
// --output=FILE are refused as bad input (exit 2) and create no file,
// in bisect and in bisect-step (which skips, 125).
func TestBisectRefsAreNotOptions(t *testing.T) {
	tree, commits := gitTree(t, 3)
	out, victims := t.TempDir(), t.TempDir()
	cl := testCLI()
	cl.judge = func(context.Context, *bisectOpts, string, io.Writer, io.Writer) (bisect.Outcome, error) {
		t.Error("a judge ran for a ref that is an option")
		return bisect.Outcome{}, nil
	}
	for i, refs := range [][2]string{
		{"--output=" + filepath.Join(victims, "good"), commits[3]},
		{commits[0], "--output=" + filepath.Join(victims, "bad")},
		{commits[0], commits[3] + " --output=" + filepath.Join(victims, "bad2")},
	} {
		args := []string{"bisect", "quickstart", "--tree", tree, "--good", refs[0], "--bad", refs[1], "--metric", "tx_pps", "-o", out}
		if err := cl.run(t.Context(), args, io.Discard, io.Discard); exitCode(err) != exitBadInput {
			t.Errorf("refs %d %q: exit %d (%v), want 2", i, refs, exitCode(err), err)
		}
	}
	step := []string{"bisect-step", "quickstart", "--tree", tree, "--good", "--output=" + filepath.Join(victims, "step"), "--metric", "tx_pps", "-o", out}
	if err := cl.run(t.Context(), step, io.Discard, io.Discard); exitCode(err) != 125 {
		t.Errorf("bisect-step --good --output=...: exit %d (%v), want 125", exitCode(err), err)
	}
	if ents, _ := os.ReadDir(victims); len(ents) != 0 {
		t.Errorf("git created %v", ents)
	}
}

// A planted bisect.json that names commits outside the good..bad range
// (or not commits at all) is refused, not trusted as judged steps.
func TestBisectStateValidated(t *testing.T) {
	tree, commits := gitTree(t, 4)
	_, others := gitTree(t, 1)
	cl := testCLI()
	cl.judge = func(context.Context, *bisectOpts, string, io.Writer, io.Writer) (bisect.Outcome, error) {
		return bisect.Outcome{}, nil
	}
	for name, state := range map[string]string{
		"other tree": `[{"commit":"` + others[1] + `","bad":true}]`,
		"option":     `[{"commit":"--output=/tmp/x","bad":true}]`,
		"good ref":   `[{"commit":"` + commits[0] + `","bad":true}]`,
		"both":       `[{"commit":"` + commits[2] + `","bad":true,"skip":true}]`,
	} {
		out := t.TempDir()
		os.WriteFile(filepath.Join(out, stateFile), []byte(state), 0o644)
		var stderr strings.Builder
		args := []string{"bisect", "quickstart", "--tree", tree, "--good", commits[0], "--bad", commits[4], "--metric", "tx_pps", "-o", out}
		err := cl.run(t.Context(), args, io.Discard, &stderr)
		if exitCode(err) != exitBadInput || !strings.Contains(err.Error(), stateFile) {
			t.Errorf("%s: exit %d (%v), want 2 naming %s", name, exitCode(err), err, stateFile)
		}
	}
}

// stepJudgeEnv picks the judge of bisect-step's child in the test binary
// (TestMain): good, bad, panic or oom (a real runtime out of memory under
// an address-space limit).
const stepJudgeEnv = "VNB_TEST_STEP_JUDGE"

func stepChildTestMain() int {
	cl := testCLI()
	cl.judge = func(context.Context, *bisectOpts, string, io.Writer, io.Writer) (bisect.Outcome, error) {
		switch os.Getenv(stepJudgeEnv) {
		case "bad":
			return bisect.Outcome{Verdict: verdict.Different, Bad: true, Pct: -10, Reps: 5}, nil
		case "panic":
			panic("the judge panicked (test)")
		case "oom":
			exhaustMemory()
		}
		return bisect.Outcome{Verdict: verdict.Same, Reps: 5}, nil
	}
	return stepChildMain(context.Background(), cl, os.Args[1:], os.Stdout, os.Stderr)
}

// exhaustMemory allocates under an address-space limit until the Go
// runtime dies with "fatal error: runtime: out of memory".
func exhaustMemory() {
	b, _ := os.ReadFile("/proc/self/status")
	var vm uint64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmSize:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			vm = kb << 10
		}
	}
	lim := unix.Rlimit{Cur: vm + 256<<20, Max: vm + 256<<20}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &lim); err != nil {
		panic(err)
	}
	for {
		c := make([]byte, 32<<20)
		for i := range c {
			c[i] = 1
		}
		oomSink = append(oomSink, c)
	}
}

// oomSink keeps exhaustMemory's allocations alive.
var oomSink [][]byte

// bisect-step tells git bisect run "good" (0) or "bad" (1) only after a
// measurement: help, bad usage, a panic and a runtime out of memory in
// the judging process are 125 (skip), never 0, 1 or 2.
func TestBisectStepOnlyMeasurementsJudge(t *testing.T) {
	tree, commits := gitTree(t, 2)
	base := []string{"bisect-step", "quickstart", "--tree", tree, "--good", commits[0], "--metric", "tx_pps", "-o", t.TempDir()}
	for _, tc := range []struct {
		judge string
		args  []string
		want  int
	}{
		{"good", base, 0},
		{"bad", base, 1},
		{"panic", base, 125},
		{"oom", base, 125},
		{"good", []string{"bisect-step", "-h"}, 125},
		{"good", append(append([]string{}, base...), "-h"), 125},
		{"good", []string{"bisect-step", "quickstart"}, 125},
	} {
		t.Run(fmt.Sprint(tc.judge, len(tc.args)), func(t *testing.T) {
			t.Setenv(stepJudgeEnv, tc.judge)
			var stderr strings.Builder
			err := run(t.Context(), tc.args, io.Discard, &stderr)
			if got := exitCode(err); got != tc.want {
				t.Errorf("exit %d (%v), want %d; stderr:\n%s", got, err, tc.want, tail([]byte(stderr.String()), 600))
			}
			// The runtime's fatal error: "out of memory", or under -race
			// "too many address space collisions".
			if tc.judge == "oom" && !strings.Contains(stderr.String(), "fatal error: ") {
				t.Errorf("the child did not run out of memory:\n%s", tail([]byte(stderr.String()), 600))
			}
		})
	}
	// In process (a fake judge in tests), help is a skip too.
	cl := testCLI()
	cl.stepInline = true
	if err := cl.run(t.Context(), []string{"bisect-step", "-h"}, io.Discard, io.Discard); exitCode(err) != 125 {
		t.Errorf("inline -h: exit %d, want 125", exitCode(err))
	}
}
