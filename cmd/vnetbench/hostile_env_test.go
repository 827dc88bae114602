package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// editEnv rewrites dir's env.json with edit applied to its fields.
func editEnv(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "env.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	edit(env)
	if b, err = json.Marshal(env); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkTerminalSafe fails when out holds a control character but a line
// break or tab, or a line forged by a name.
func checkTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if m := regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f]").FindStringIndex(out); m != nil {
		t.Errorf("%s has control character %q at %d: %q", what, out[m[0]:m[1]], m[0], out)
	}
	if regexp.MustCompile(`(?m)^FORGED`).MatchString(out) {
		t.Errorf("%s has a line forged by a name of env.json:\n%s", what, out)
	}
}

// Warnings and errors quote env.json's host, CPU and kernel names, which
// come from run directories vnetbench did not necessarily write: they
// reach the terminal with control characters and line breaks shown as
// escapes (issue 34 item 3). Before, merge's warning and error wrote them
// raw (a terminal title set, a screen cleared, lines forged).
func TestWarningsAndErrorsEscapeNames(t *testing.T) {
	in := t.TempDir()
	a, b := filepath.Join(in, "a"), filepath.Join(in, "b")
	writeShard(t, a, "run-a", 1, "tap/x")
	writeShard(t, b, "run-b", 2, "tap/y")
	editEnv(t, b, func(env map[string]any) {
		env["hostname"] = "h\x1b]0;pwn\x07\nFORGED host"
		env["cpu_model"] = "cpu\x1b[2J"
	})
	var stderr strings.Builder
	if err := run(t.Context(), []string{"merge", a, b, "-o", filepath.Join(in, "out")}, new(strings.Builder), &stderr); err != nil {
		t.Fatalf("merge: %v", err)
	}
	if !strings.Contains(stderr.String(), `cpu\x1b[2J`) {
		t.Errorf("merge's warning does not show the CPU model escaped: %q", stderr.String())
	}
	checkTerminalSafe(t, "merge's warning", stderr.String())

	editEnv(t, b, func(env map[string]any) { env["kernel_release"] = "6.1\x1b]0;pwn\x07\nFORGED kernel" })
	out, err := exec.CommandContext(t.Context(), vnetbenchBin(t), "merge", a, b, "-o", filepath.Join(in, "out2")).CombinedOutput()
	if exitCode := exitCodeOf(err); exitCode != exitBadInput || !strings.Contains(string(out), `6.1\x1b]0;pwn\x07\x0aFORGED kernel`) {
		t.Errorf("merge of different kernels: exit %d, want 2 naming the kernel escaped: %q", exitCode, out)
	}
	checkTerminalSafe(t, "merge's error", string(out))
}

// exitCodeOf is a finished command's exit code (0 for a nil error).
func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
