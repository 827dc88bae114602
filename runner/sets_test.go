package runner

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// TestRunRecordsSets: the --set overrides reach env.json as given and
// reproduce.sh as shell-quoted words that sh parses back to the same
// arguments (a value with a quote, a space and a $ stays one word).
func TestRunRecordsSets(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	sh := testenv.NeedCommand(t, "sh", "dash")
	h := newHarness(t)
	fake := &fakeqemu.Exec{Script: func(string) []fakeqemu.Step { return nil }}
	h.opts.Exec = qemuRouter{fake}
	h.opts.KVM = &qemu.KVMStatus{Why: "none here"}
	h.opts.Image = func(context.Context, scenarios.Guest, GuestContents) (*GuestImage, error) {
		return &GuestImage{Kernel: "/fake/vmlinuz", Initrd: "/fake/initramfs"}, nil
	}
	sets := []string{"repetitions=1", "description=it's $HOME; `x`"}
	h.opts.Sets = sets
	cells := loadCells(t, fmt.Sprintf(accelScenario, "tcg"))
	sum, err := Run(t.Context(), cells, h.opts)
	checkNothingLeft(t, sum)
	if err != nil {
		t.Fatal(err)
	}
	env, err := results.ReadEnv(h.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(env.Set, sets) {
		t.Errorf("env.json set = %q, want %q", env.Set, sets)
	}
	repro := readFile(t, filepath.Join(h.opts.Dir, results.ReproduceFile))
	var line string
	for _, l := range strings.Split(repro, "\n") {
		if rest, ok := strings.CutPrefix(l, "# Scenario overrides: "); ok {
			line = rest
		}
	}
	if line == "" {
		t.Fatalf("reproduce.sh has no overrides line:\n%s", repro)
	}
	out, err := exec.Command(sh, "-c", `for a in `+line+`; do printf '%s\n' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh cannot read %q: %v", line, err)
	}
	want := "--set\n" + sets[0] + "\n--set\n" + sets[1] + "\n"
	if string(out) != want {
		t.Errorf("sh reads the overrides line %q as\n%s\nwant\n%s", line, out, want)
	}
	if err := exec.Command(sh, "-n", filepath.Join(h.opts.Dir, results.ReproduceFile)).Run(); err != nil {
		t.Errorf("sh -n reproduce.sh: %v", err)
	}
}
