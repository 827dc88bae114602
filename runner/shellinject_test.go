package runner_test

// An external test: the lab VMs' command lines come from runner/lab,
// which imports runner.

import (
	"fmt"
	"testing"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// scriptOf is what reproduce.sh and plan would hold for s: every cell's
// commands (plan's lines, the same builders as the run's), each lab VM's
// command line, under reproduce.sh's header.
func scriptOf(t *testing.T, s *scenarios.Scenario) string {
	cells, _ := runner.Distinct(s.Expand())
	var lines []string
	_, labCells := scenarios.SplitRunning(cells)
	host := lab.Host{KVM: qemu.KVMStatus{Why: "test"}, CPUs: []int{0, 1, 2, 3}, MemMiB: 32 << 10}
	labels, byLabel := scenarios.ByKernel(labCells, nil)
	for _, label := range labels {
		if argv, _, err := lab.VMArgs(label, byLabel[label], host); err == nil {
			lines = append(lines, proc.Quote(argv))
		}
	}
	for i := range cells {
		lines = append(lines, runner.Commands(&cells[i], qemu.TCG, cells...)...)
	}
	for _, l := range runner.PinNotes("vCPU", []int{1}, []int{0}, true) {
		lines = append(lines, runner.SafeComment(l))
	}
	return runner.ReproduceScript("RUNID", s.Name, 1, nil, lines)
}

// Every built-in's commands, and those of a scenario with shell syntax in
// each string field, parse as plain commands: no expansion, no command
// substitution, no command of the scenario's text.
func TestReproduceNoShellInjection(t *testing.T) {
	// The built-ins' Debian lab kernels as fetched: VMArgs checks them.
	testenv.CachedDebianKernels(t, "6.1.0-47-amd64", "6.12.117+deb12-amd64")
	for _, b := range scenarios.Builtins() {
		s, err := scenarios.LoadBuiltin(b.Name)
		if err != nil {
			t.Fatal(err)
		}
		runner.CheckShell(t, "built-in "+b.Name, scriptOf(t, s))
	}
	accepted := 0
	dir := t.TempDir()
	for _, evil := range runner.Evils {
		for field, y := range runner.EvilScenarios(t, dir, evil) {
			s, err := scenarios.Load("evil.yaml", []byte(y))
			if err != nil {
				continue // refused: nothing reaches a shell
			}
			accepted++
			what := fmt.Sprintf("scenario with %s %q", field, evil)
			script := scriptOf(t, s)
			runner.CheckShell(t, what, script)
			if field == "pktgen dst zone" {
				t.Errorf("%s: accepted:\n%s", what, script)
			}
		}
	}
	if accepted == 0 {
		t.Error("the loader refused every evil scenario: the check checked nothing")
	}
	t.Logf("%d evil scenarios accepted and checked", accepted)
	// Comments: the run's own text and merge's directory names.
	for _, evil := range runner.Evils {
		runner.CheckShell(t, "header", runner.ReproduceScript("RUNID", evil, 1, []string{evil}, []string{runner.SafeComment("# pin " + evil)}))
	}
}
