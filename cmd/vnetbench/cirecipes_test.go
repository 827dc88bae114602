package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/runner"
)

// The CI recipes in docs/ci (validated against their engines' schemas by
// the docs/ci/validate module) call vnetbench as it is: every vnetbench
// command line in them parses with this CLI's subcommands and flags, and
// each recipe's 'run --shard auto --seed auto' plans every shard
// (--dry-run) from its engine's variables, all shards with the seed of
// the pipeline's id, and sudo keeps those variables.
func TestCIRecipesCommands(t *testing.T) {
	type engine struct {
		vars  func(shard int) []string // what the engine sets for shard 1..4 (and vnetbench reads)
		extra []string                 // set too, and ignored
		seed  string                   // the seed's line in run's output
	}
	const uid = "3f6c2a1e-8b1d-4c55-9e0a-7d2f1b9c4e11"
	uidSeed, _, _ := runner.SeedFromEnv(func(k string) string { return map[string]string{runner.PipelineIDEnv: uid}[k] })
	recipes := map[string]*engine{
		"github-actions.yml": {func(i int) []string {
			return []string{fmt.Sprintf("VNETBENCH_SHARD_INDEX=%d", i), "VNETBENCH_SHARD_TOTAL=4", "GITHUB_RUN_ID=15623401234"}
		}, []string{"GITHUB_RUN_ATTEMPT=2"}, "seed 15623401234 from GITHUB_RUN_ID=15623401234 (GitHub Actions run"},
		"gitlab-ci.yml": {func(i int) []string {
			return []string{fmt.Sprintf("CI_NODE_INDEX=%d", i), "CI_NODE_TOTAL=4", "CI_PIPELINE_ID=1043"}
		}, nil, "seed 1043 from CI_PIPELINE_ID=1043 (GitLab pipeline"},
		// VNETBENCH_PIPELINE_ID is the Job's uid (the downward API: the
		// validate module checks the field).
		"kubernetes/shards.yaml": {func(i int) []string {
			return []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i-1), "VNETBENCH_SHARD_TOTAL=4", runner.PipelineIDEnv + "=" + uid}
		}, nil, fmt.Sprintf("seed %d from %s=%s", uidSeed, runner.PipelineIDEnv, uid)},
		"kubernetes/merge.yaml": nil,
	}
	line := regexp.MustCompile(`(?:^|[\s/])vnetbench ((?:run|merge|compare|report|history)\b[^\n]*)`)
	seen := map[string]bool{}
	dir, err := filepath.Abs(filepath.Join("..", "..", "docs", "ci"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // what the commands write (history rebuild's default index) goes there
	for file, eng := range recipes {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if eng != nil {
			checkSudoKeeps(t, file, string(b), eng.vars(1))
		}
		for _, m := range line.FindAllStringSubmatch(string(b), -1) {
			args := recipeArgs(t, m[1])
			seen[args[0]] = true
			if args[0] == "run" {
				for i := 1; i <= 4; i++ {
					checkRecipeShard(t, file, slices.Concat(args, []string{"--dry-run"}), i, slices.Concat(eng.vars(i), eng.extra), eng.seed)
				}
				continue
			}
			var so, se bytes.Buffer
			err := run(t.Context(), args, &so, &se)
			if err != nil && regexp.MustCompile(`flag provided but not defined|invalid value|unknown subcommand|want `).MatchString(err.Error()) {
				t.Errorf("%s: %q: %v", file, args, err)
			}
		}
	}
	for _, c := range []string{"run", "merge", "compare", "report", "history"} {
		if !seen[c] {
			t.Errorf("no recipe calls vnetbench %s", c)
		}
	}
}

// checkRecipeShard dry-runs a recipe's run line as shard i of 4 with the
// engine's variables vars (and no other engine's): the shard and the seed
// (the same line for every shard) come from them.
func checkRecipeShard(t *testing.T, file string, args []string, i int, vars []string, seed string) {
	t.Helper()
	for _, k := range []string{"VNETBENCH_SHARD_INDEX", "VNETBENCH_SHARD_TOTAL", "CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX",
		runner.PipelineIDEnv, "CI_PIPELINE_ID", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT"} {
		t.Setenv(k, "")
	}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var so, se bytes.Buffer
	err := run(t.Context(), args, &so, &se)
	if out := so.String(); err != nil || !strings.Contains(out, "scenario quickstart, seed") || !strings.Contains(out, fmt.Sprintf("(shard %d/4)", i)) ||
		!strings.Contains(out, seed) {
		t.Errorf("%s: shard %d with %q: %v, want shard %d/4 and %q in:\n%s", file, i, vars, err, i, seed, out)
	}
}

// checkSudoKeeps: a recipe that runs vnetbench run under sudo keeps the
// variables it reads (sudo drops the environment otherwise, and --shard
// auto and --seed auto would find nothing).
func checkSudoKeeps(t *testing.T, file, recipe string, vars []string) {
	t.Helper()
	m := regexp.MustCompile(`sudo --preserve-env=(\S+)[\s\\]+\S*vnetbench run`).FindStringSubmatch(recipe)
	if m == nil {
		if strings.Contains(recipe, "sudo") {
			t.Errorf("%s: sudo without --preserve-env before vnetbench run", file)
		}
		return
	}
	kept := strings.Split(m[1], ",")
	for _, kv := range vars {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(kept, k) {
			t.Errorf("%s: sudo --preserve-env=%s drops %s", file, m[1], k)
		}
	}
}

// recipeArgs splits a recipe's command line as a shell would, up to a
// redirection or another command: "$SCENARIO" is the quickstart
// scenario, $RUN_FLAGS nothing, other variables are paths that do not
// exist.
func recipeArgs(t *testing.T, s string) []string {
	t.Helper()
	s = regexp.MustCompile(`\s(>>|>|\|\||&&|;|\|).*$`).ReplaceAllString(s, "")
	var out []string
	for _, f := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(s, -1) {
		f = strings.Trim(f, `"`)
		switch {
		case f == "$SCENARIO":
			f = "quickstart"
		case f == "$FAIL_ON":
			f = "tx_pps<-3%,lost_pps>+0%"
		case f == "$RUN_FLAGS": // the recipe's default: none
			continue
		case strings.Contains(f, "$"):
			f = filepath.Join(t.TempDir(), "x")
		}
		out = append(out, f)
	}
	return out
}
