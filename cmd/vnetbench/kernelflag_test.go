package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/scenarios"
)

// --kernel replaces the scenario's kernels; bad specs and kernels from
// source that cannot be built are one line and exit 2, before anything is
// created.
func TestRunKernelFlagBadInput(t *testing.T) {
	tmp := t.TempDir()
	data, _ := scenarios.BuiltinData("quickstart")
	file := filepath.Join(tmp, "mine.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	notTree := filepath.Join(tmp, "not-a-tree")
	if err := os.MkdirAll(notTree, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", "stock"}, "want LABEL=SPEC"},
		{[]string{"--kernel", "stock=tree=/x,colour=blue"}, `unknown key "colour"`},
		{[]string{"--kernel", "a=debian:6.1", "--kernel", "a=debian:6.1"}, "given twice"},
		{[]string{"--kernel", "patched=tree=" + notTree}, "is not a Linux kernel tree"},
		{[]string{"--kernel", "patched=tree=" + filepath.Join(tmp, "nope")}, "is not a directory"},
	} {
		// A built-in, and a scenario file (whose copy for the lab VMs goes
		// into the run directory only once the run has started).
		for _, scen := range []string{"quickstart", file} {
			dir := filepath.Join(tmp, "run")
			var out, errb bytes.Buffer
			args := append([]string{"run", scen, "-o", dir}, tc.args...)
			err := run(t.Context(), args, &out, &errb)
			if code := exitCode(err); code != exitBadInput || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %v: exit %d, err %v; want exit 2 with %q", scen, tc.args, code, err, tc.want)
				continue
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("%s %v: more than one line: %q", scen, tc.args, err)
			}
			if _, serr := os.Stat(dir); serr == nil {
				t.Errorf("%s %v: a run directory was created", scen, tc.args)
			}
		}
	}
}

// The flag makes every cell a lab cell of the given kernels, in plan too.
func TestPlanKernelFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"run", "quickstart", "--dry-run", "--seed", "1", "--kernel", "stock=debian:6.1", "--kernel", "patched=tree=/src/linux,patches=/p/*.patch"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "(kernel stock, tcg)") || !strings.Contains(s, "(kernel patched, tcg)") || strings.Contains(s, "(kernel running") {
		t.Errorf("dry run does not run on the flag's kernels:\n%s", s)
	}
}
