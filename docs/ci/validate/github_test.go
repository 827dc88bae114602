package validate

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// lintWorkflow runs actionlint (the pinned library: every rule but the
// external shellcheck and pyflakes) over a workflow's content.
func lintWorkflow(t *testing.T, content []byte) []*actionlint.Error {
	t.Helper()
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{ConfigFile: "testdata/actionlint.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint("github-actions.yml", content, nil)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}

func readRecipe(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The workflow passes actionlint, and is the recipe docs/ci.md describes:
// a shard matrix whose jobs get their shard from the matrix, a merge job
// after them, the gate's JUnit and the HTML report as an artifact, the
// history updated on main.
func TestGitHubWorkflow(t *testing.T) {
	b := readRecipe(t, "github-actions.yml")
	for _, e := range lintWorkflow(t, b) {
		t.Errorf("actionlint: %s", e.Error())
	}
	wf, errs := actionlint.Parse(b)
	if len(errs) > 0 {
		t.Fatalf("parse: %v", errs)
	}
	shard, merge := wf.Jobs["shard"], wf.Jobs["merge"]
	if shard == nil || merge == nil {
		t.Fatalf("jobs %v", wf.Jobs)
	}
	rows := shard.Strategy.Matrix.Rows["shard"]
	if rows == nil || len(rows.Values) < 2 || len(rows.Values) > 256 {
		t.Errorf("shard matrix %+v: want 2 to 256 shards (GitHub's matrix limit)", rows)
	}
	if len(merge.Needs) != 1 || merge.Needs[0].Value != "shard" {
		t.Errorf("merge needs %v, want the shard jobs", merge.Needs)
	}
	var shardRun string
	for _, st := range shard.Steps {
		if r, ok := st.Exec.(*actionlint.ExecRun); ok && strings.Contains(r.Run.Value, "--shard auto --seed auto") {
			shardRun = r.Run.Value
			if st.Env == nil || st.Env.Vars["vnetbench_shard_index"] == nil || st.Env.Vars["vnetbench_shard_total"] == nil ||
				st.Env.Vars["vnetbench_shard_index"].Value.Value != "${{ matrix.shard }}" {
				t.Errorf("the shard step's env %+v: want VNETBENCH_SHARD_INDEX from matrix.shard and VNETBENCH_SHARD_TOTAL", st.Env)
			}
		}
	}
	if !strings.Contains(shardRun, "vnetbench run") {
		t.Errorf("no step runs 'vnetbench run ... --shard auto --seed auto'")
	}
	s := string(b)
	for _, want := range []string{"vnetbench merge shards/shard-*", "--junit gates.xml", "-o report.html", "report.html",
		`vnetbench history add "$RUN_DIR"`, "actions/upload-artifact@v4", "GITHUB_STEP_SUMMARY"} {
		if !strings.Contains(s, want) {
			t.Errorf("workflow lacks %q", want)
		}
	}
}

// actionlint does catch mistakes of the kinds a recipe could make (so a
// clean run above means something): a matrix key that does not exist, an
// unknown runner label, a job needing one that does not exist.
func TestActionlintCatches(t *testing.T) {
	b := readRecipe(t, "github-actions.yml")
	for _, tc := range []struct{ old, new, msg string }{
		{"VNETBENCH_SHARD_INDEX: ${{ matrix.shard }}", "VNETBENCH_SHARD_INDEX: ${{ matrix.shrd }}", "shrd"},
		{"[self-hosted, linux, x64, vnetbench]", "[self-hosted, linux, x64, vnetbnech]", "vnetbnech"},
		{"needs: shard", "needs: shards", "shards"},
	} {
		mut := bytes.Replace(b, []byte(tc.old), []byte(tc.new), 1)
		if bytes.Equal(mut, b) {
			t.Fatalf("%q is not in the workflow", tc.old)
		}
		errs := lintWorkflow(t, mut)
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Message, tc.msg)
		}
		if !found {
			t.Errorf("actionlint missed %q -> %q: %v", tc.old, tc.new, errs)
		}
	}
}
