package validate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// fakeVnetbench is a stand-in for the vnetbench binary in a recipe's
// gate script: every subcommand succeeds, writing what it was asked to
// (-o DIR or FILE, --junit FILE, --db FILE), except compare, which exits
// $FAKE_COMPARE_EXIT as compare's verdict would.
const fakeVnetbench = `#!/bin/sh
cmd=$1; shift
while [ $# -gt 0 ]; do
  case $1 in
    -o) [ "$cmd" = report ] && : > "$2" || mkdir -p "$2"; shift ;;
    --junit) echo '<testsuites/>' > "$2"; shift ;;
    --db) : > "$2"; shift ;;
  esac
  shift
done
[ "$cmd" = compare ] && exit "$FAKE_COMPARE_EXIT"
exit 0
`

// runGate runs script with sh -e (GitHub runs a step's run: with bash
// -e; Kubernetes' container here runs sh -ec) in dir, with the fake
// vnetbench as ./bin/vnetbench and on PATH, compare exiting code.
func runGate(t *testing.T, shell, dir, script string, code int) (string, int) {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "vnetbench"), []byte(fakeVnetbench), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shell, "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), fmt.Sprintf("FAKE_COMPARE_EXIT=%d", code), "FAIL_ON=tx_pps<-3%")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// The workflow's gate step fails on compare's 1 (a regression or a
// missing cell) and 2 (bad input), passes on 0, and on 3 (UNKNOWN)
// passes with a warning annotation; gates.xml is written in every case.
func TestGitHubGateExitCodes(t *testing.T) {
	wf, errs := actionlint.Parse(readRecipe(t, "github-actions.yml"))
	if len(errs) > 0 {
		t.Fatalf("parse: %v", errs)
	}
	var script string
	for _, st := range wf.Jobs["merge"].Steps {
		if st.ID != nil && st.ID.Value == "gate" {
			script = st.Exec.(*actionlint.ExecRun).Run.Value
		}
	}
	if script == "" {
		t.Fatal("no step with id gate")
	}
	for code, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 0} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "history", "baseline"), 0o755)
		out, got := runGate(t, "bash", dir, script, code)
		warned := strings.Contains(out, "::warning title=vnetbench gate::") && strings.Contains(out, "UNKNOWN")
		if _, err := os.Stat(filepath.Join(dir, "gates.xml")); got != want || warned != (code == 3) || err != nil {
			t.Errorf("compare exit %d: step exit %d (want %d), warning %v, gates.xml %v:\n%s", code, got, want, warned, err, out)
		}
	}
	out, got := runGate(t, "bash", t.TempDir(), script, 1)
	if got != 0 || !strings.Contains(out, "no baseline yet") {
		t.Errorf("without a baseline: exit %d:\n%s", got, out)
	}
}

// The Kubernetes merge Job fails on compare's 1 and 2, succeeds on 0 and
// on 3 (UNKNOWN, with a warning in its log); the baseline moves when no
// gate tripped, and the gate's JUnit stays in the run in every case.
func TestKubernetesGateExitCodes(t *testing.T) {
	jobs, _, err := k8sDocs(t, readRecipe(t, "kubernetes/merge.yaml"))
	if err != nil || len(jobs) != 1 {
		t.Fatalf("merge.yaml: %v", err)
	}
	c := jobs[0].Spec.Template.Spec.Containers[0]
	if strings.Join(c.Command, " ") != "sh -ec" {
		t.Fatalf("merge command %q, want sh -ec", c.Command)
	}
	for code, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 0} {
		dir := t.TempDir()
		runs := filepath.Join(dir, "runs")
		os.MkdirAll(filepath.Join(runs, "incoming", "shard-1"), 0o755)
		os.MkdirAll(filepath.Join(runs, "old"), 0o755)
		os.Symlink(filepath.Join(runs, "old"), filepath.Join(runs, "baseline"))
		script := strings.ReplaceAll(strings.Join(c.Args, "\n"), "/runs", runs)
		out, got := runGate(t, "sh", dir, script, code)
		base, _ := os.Readlink(filepath.Join(runs, "baseline"))
		moved := base != filepath.Join(runs, "old")
		junit, _ := filepath.Glob(filepath.Join(runs, "[0-9]*", "gates.xml")) // the new run, named by its date
		warned := strings.Contains(out, "warning: ") && strings.Contains(out, "UNKNOWN")
		if got != want || moved != (want == 0) || len(junit) != 1 || warned != (code == 3) {
			t.Errorf("compare exit %d: Job exit %d (want %d), baseline moved %v, junit %v, warning %v:\n%s", code, got, want, moved, junit, warned, out)
		}
	}
}
