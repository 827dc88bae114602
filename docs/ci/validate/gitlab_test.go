package validate

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// gitlabSchema compiles GitLab's CI schema (testdata/README.md says where
// it comes from). Its patterns are ECMA regular expressions; the
// validator compiles them with Go's regexp, which takes all of them today
// (a future lookaround would fail here rather than be skipped).
func gitlabSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/gitlab-ci.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("gitlab-ci.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("gitlab-ci.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func gitlabDoc(t *testing.T, b []byte) any {
	t.Helper()
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The GitLab file validates against GitLab's CI schema and is the recipe
// docs/ci.md describes: parallel measure jobs taking their shard from
// CI_NODE_INDEX and their seed from the pipeline, a merge after all of
// them, the gate's JUnit as a test report, compare's UNKNOWN (exit 3) a
// warning, the history on the default branch.
func TestGitLabCI(t *testing.T) {
	sch := gitlabSchema(t)
	b := readRecipe(t, "gitlab-ci.yml")
	if err := sch.Validate(gitlabDoc(t, b)); err != nil {
		t.Fatalf("gitlab-ci.yml does not validate: %v", err)
	}
	type job struct {
		Parallel  int      `json:"parallel"`
		Needs     []string `json:"needs"`
		Script    []string `json:"script"`
		Artifacts struct {
			Reports map[string]string `json:"reports"`
		} `json:"artifacts"`
		Rules        []map[string]string `json:"rules"`
		AllowFailure struct {
			ExitCodes []int `json:"exit_codes"`
		} `json:"allow_failure"`
	}
	var raw map[string]json.RawMessage
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	ci := map[string]job{}
	for _, name := range []string{"measure", "merge", "gate", "history"} {
		var j job
		if err := json.Unmarshal(raw[name], &j); err != nil {
			t.Fatalf("job %s: %v", name, err)
		}
		ci[name] = j
	}
	m := ci["measure"]
	if m.Parallel < 2 || m.Parallel > 200 || !strings.Contains(strings.Join(m.Script, "\n"), `vnetbench run "$SCENARIO" --shard auto --seed auto`) {
		t.Errorf("measure: parallel %d (want 2..200), script %q", m.Parallel, m.Script)
	}
	if n := ci["merge"].Needs; len(n) != 1 || n[0] != "measure" {
		t.Errorf("merge needs %v, want every measure job", n)
	}
	if r := ci["gate"].Artifacts.Reports["junit"]; r != "gates.xml" || !strings.Contains(strings.Join(ci["gate"].Script, "\n"), "--junit gates.xml") {
		t.Errorf("gate: junit report %q, script %q", r, ci["gate"].Script)
	}
	if ec := ci["gate"].AllowFailure.ExitCodes; len(ec) != 1 || ec[0] != 3 {
		t.Errorf("gate: allow_failure exit_codes %v, want [3] (UNKNOWN warns, a regression fails)", ec)
	}
	if h := ci["history"]; len(h.Rules) != 1 || !strings.Contains(strings.Join(h.Script, "\n"), `vnetbench history add "runs/pipeline-$CI_PIPELINE_ID"`) {
		t.Errorf("history job %+v", h)
	}
}

// The schema catches what GitLab refuses (so the validation above is a
// real check): parallel above 200, a misspelled job keyword, a wrong
// artifacts:when.
func TestGitLabSchemaCatches(t *testing.T) {
	sch := gitlabSchema(t)
	b := readRecipe(t, "gitlab-ci.yml")
	for _, tc := range []struct{ old, new string }{
		{"parallel: 4 ", "parallel: 201 "},
		{"  artifacts:\n    when: always\n    paths: [runs/]", "  artifact:\n    when: always\n    paths: [runs/]"},
		{"when: always\n    paths: [\"runs/pipeline", "when: sometimes\n    paths: [\"runs/pipeline"},
	} {
		mut := bytes.Replace(b, []byte(tc.old), []byte(tc.new), 1)
		if bytes.Equal(mut, b) {
			t.Fatalf("%q is not in the file", tc.old)
		}
		if err := sch.Validate(gitlabDoc(t, mut)); err == nil {
			j, _ := json.Marshal(tc)
			t.Errorf("schema accepted %s", j)
		}
	}
}
