package validate

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"sigs.k8s.io/yaml"
)

// fakeVnetbench is a stand-in for the vnetbench binary in a recipe's
// gate script: every subcommand succeeds, writing what it was asked to
// (-o DIR or FILE, --junit FILE, --db FILE), except compare, which exits
// $FAKE_COMPARE_EXIT as compare's verdict would. Each call's arguments
// go on a line of vnetbench.log in the working directory.
const fakeVnetbench = `#!/bin/sh
echo "$*" >> "$FAKE_LOG"
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
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), fmt.Sprintf("FAKE_COMPARE_EXIT=%d", code), "FAIL_ON=tx_pps<-3%",
		"FAKE_LOG="+filepath.Join(dir, "vnetbench.log"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// calls are the fake vnetbench's calls in dir whose arguments start with
// subcommand, one string each.
func calls(t *testing.T, dir, subcommand string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "vnetbench.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, subcommand+" ") {
			out = append(out, l)
		}
	}
	return out
}

// gatedWithNoise: the gate compared once, with --noise-from db: the
// early looks take the cells' noise from the history index
// (docs/compare.md).
func gatedWithNoise(t *testing.T, what, dir, db string) {
	t.Helper()
	cs := calls(t, dir, "compare")
	if len(cs) != 1 || !strings.Contains(cs[0]+" ", " --noise-from "+db+" ") {
		t.Errorf("%s: compare calls %q, want one with --noise-from %s", what, cs, db)
	}
}

// The workflow's gate step fails on compare's 1 (a regression or a
// missing cell) and 2 (bad input), passes on 0, and on 3 (UNKNOWN)
// passes with a warning annotation; gates.xml is written in every case;
// compare takes the noise from the history index.
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
		os.WriteFile(filepath.Join(dir, "history", "index.db"), nil, 0o644)
		out, got := runGate(t, "bash", dir, script, code)
		gatedWithNoise(t, fmt.Sprintf("compare exit %d", code), dir, "history/index.db")
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
// on 3 (UNKNOWN, with a warning in its log); the gate takes the noise
// from the history index; the baseline moves when no gate tripped, the
// history records the run and the gate's JUnit stays in it in every case.
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
		os.WriteFile(filepath.Join(runs, "history.db"), nil, 0o644)
		script := strings.ReplaceAll(strings.Join(c.Args, "\n"), "/runs", runs)
		out, got := runGate(t, "sh", dir, script, code)
		gatedWithNoise(t, fmt.Sprintf("compare exit %d", code), dir, filepath.Join(runs, "history.db"))
		if adds := calls(t, dir, "history add"); len(adds) != 1 {
			t.Errorf("compare exit %d: history add calls %q, want the run recorded once", code, adds)
		}
		base, _ := os.Readlink(filepath.Join(runs, "baseline"))
		moved := base != filepath.Join(runs, "old")
		junit, _ := filepath.Glob(filepath.Join(runs, "[0-9]*", "gates.xml")) // the new run, named by its date
		warned := strings.Contains(out, "warning: ") && strings.Contains(out, "UNKNOWN")
		if got != want || moved != (want == 0) || len(junit) != 1 || warned != (code == 3) {
			t.Errorf("compare exit %d: Job exit %d (want %d), baseline moved %v, junit %v, warning %v:\n%s", code, got, want, moved, junit, warned, out)
		}
	}
}

// The workflow records every run of main in the history index, one
// whose gate tripped too (history's change points need the regressions;
// the gate compares two runs), but not when the gate never ran (merge
// failed: no run); the baseline moves only when the gate passed; the
// cache keeps what was recorded.
func TestGitHubHistoryEveryRun(t *testing.T) {
	wf, errs := actionlint.Parse(readRecipe(t, "github-actions.yml"))
	if len(errs) > 0 {
		t.Fatalf("parse: %v", errs)
	}
	var record, baseline, save string
	for _, st := range wf.Jobs["merge"].Steps {
		cond := ""
		if st.If != nil {
			cond = st.If.Value
		}
		switch e := st.Exec.(type) {
		case *actionlint.ExecRun:
			if strings.Contains(e.Run.Value, "vnetbench history add") {
				record = cond
			}
			if strings.Contains(e.Run.Value, "history/baseline") && !strings.Contains(e.Run.Value, "vnetbench compare") {
				baseline = cond
			}
		case *actionlint.ExecAction:
			if strings.HasPrefix(e.Uses.Value, "actions/cache/save@") {
				save = cond
			}
		}
	}
	onMain := "github.event_name == 'push' && github.ref == 'refs/heads/main'"
	if !strings.Contains(record, "!cancelled()") || !strings.Contains(record, "steps.gate.outcome != 'skipped'") || !strings.Contains(record, onMain) {
		t.Errorf("history add runs if %q; want after a tripped gate too (!cancelled()), not without a run (steps.gate.outcome != 'skipped'), on main", record)
	}
	if !strings.Contains(baseline, "steps.gate.outcome == 'success'") || strings.Contains(baseline, "always()") || strings.Contains(baseline, "cancelled()") {
		t.Errorf("the baseline moves if %q; want only when the gate passed", baseline)
	}
	if save != record {
		t.Errorf("the cache is saved if %q, the history recorded if %q; want the same", save, record)
	}
}

// The GitLab gate job exits with compare's code (the pipeline fails on 1
// and 2, warns on 3) and takes the noise from the history index; the
// history job, which runs after a tripped gate too (when: always),
// records the run every time there is one and moves the baseline only
// when the gate passed (0, 3, or no baseline yet).
func TestGitLabGateAndHistory(t *testing.T) {
	type job struct {
		Script []string            `json:"script"`
		Rules  []map[string]string `json:"rules"`
	}
	var raw map[string]json.RawMessage
	if err := yaml.Unmarshal(readRecipe(t, "gitlab-ci.yml"), &raw); err != nil {
		t.Fatal(err)
	}
	jobs := map[string]job{}
	for _, name := range []string{"gate", "history"} {
		var j job
		if err := json.Unmarshal(raw[name], &j); err != nil {
			t.Fatalf("job %s: %v", name, err)
		}
		jobs[name] = j
	}
	script := func(job string) string {
		lines := []string{"CI_PIPELINE_ID=1043"}
		for _, l := range jobs[job].Script {
			if l != "make build" {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	if r := jobs["history"].Rules; len(r) != 1 || r[0]["when"] != "always" {
		t.Errorf("history rules %v: want one rule with when: always (after a tripped gate too)", r)
	}
	for code, moves := range map[int]bool{0: true, 1: false, 2: false, 3: true, -1: true} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "runs", "pipeline-1043"), 0o755)
		if code >= 0 {
			os.MkdirAll(filepath.Join(dir, "history", "baseline"), 0o755)
			os.WriteFile(filepath.Join(dir, "history", "baseline", "old"), nil, 0o644)
			os.WriteFile(filepath.Join(dir, "history", "index.db"), nil, 0o644)
		}
		out, got := runGate(t, "bash", dir, script("gate"), max(code, 0))
		if code < 0 {
			if got != 0 || !strings.Contains(out, "no baseline yet") || len(calls(t, dir, "compare")) != 0 {
				t.Errorf("without a baseline: gate exit %d:\n%s", got, out)
			}
		} else {
			gatedWithNoise(t, fmt.Sprintf("compare exit %d", code), dir, "history/index.db")
			if got != code {
				t.Errorf("compare exit %d: gate job exit %d:\n%s", code, got, out)
			}
		}
		out, got = runGate(t, "bash", dir, script("history"), 0)
		_, err := os.Stat(filepath.Join(dir, "history", "baseline", "old"))
		_, nerr := os.Stat(filepath.Join(dir, "history", "baseline"))
		moved := os.IsNotExist(err) && nerr == nil
		if adds := calls(t, dir, "history add"); got != 0 || len(adds) != 1 || moved != moves {
			t.Errorf("compare exit %d: history job exit %d, history add %q, baseline moved %v (want %v):\n%s", code, got, adds, moved, moves, out)
		}
	}
	dir := t.TempDir() // merge failed: no run, no gate-status
	if out, got := runGate(t, "bash", dir, script("history"), 0); got != 0 || len(calls(t, dir, "history add")) != 0 {
		t.Errorf("without a merged run: history job exit %d, history add %q:\n%s", got, calls(t, dir, "history add"), out)
	}
}
