package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateBinary runs the real binary: a bad scenario prints exactly
// one line on stderr and exits 2; list and a good file exit 0.
func TestValidateBinary(t *testing.T) {
	bin := os.Getenv("VNETBENCH_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "vnetbench")
		build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	runBin := func(args ...string) (string, string, int) {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	_, stderr, code := runBin("validate", "testdata/validate/quick.yaml")
	want := "vnetbench: testdata/validate/quick.yaml:7:9: unknown qdisc \"fq_codle\"; did you mean fq_codel? (allowed: any tc qdisc kind such as fq_codel, noqueue, pfifo_fast, fq, sfq, ...)\n"
	if code != 2 || stderr != want {
		t.Errorf("bad qdisc: exit %d, stderr %q\nwant exit 2, %q", code, stderr, want)
	}
	stdout, stderr, code := runBin("validate", "testdata/validate/good.yaml")
	if code != 0 || stdout != "ok good: 4 cells, 12 runs\n" || stderr != "" {
		t.Errorf("good: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, _, code = runBin("list")
	if code != 0 || !strings.Contains(stdout, "quickstart") {
		t.Errorf("list: exit %d\n%s", code, stdout)
	}
}
