package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The CI recipes in docs/ci (validated against their engines' schemas by
// the docs/ci/validate module) call vnetbench as it is: every vnetbench
// command line in them parses with this CLI's subcommands and flags, and
// each recipe's 'run --shard auto' plans a shard (--dry-run) from its
// engine's variables.
func TestCIRecipesCommands(t *testing.T) {
	recipes := map[string][]string{ // file -> the shard variables its engine sets
		"github-actions.yml":     {"VNETBENCH_SHARD_INDEX=2", "VNETBENCH_SHARD_TOTAL=4"},
		"gitlab-ci.yml":          {"CI_NODE_INDEX=2", "CI_NODE_TOTAL=4"},
		"kubernetes/shards.yaml": {"JOB_COMPLETION_INDEX=1", "VNETBENCH_SHARD_TOTAL=4"},
		"kubernetes/merge.yaml":  nil,
	}
	line := regexp.MustCompile(`(?:^|[\s/])vnetbench ((?:run|merge|compare|report|history)\b[^\n]*)`)
	seen := map[string]bool{}
	for file, vars := range recipes {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range line.FindAllStringSubmatch(string(b), -1) {
			args := recipeArgs(t, m[1])
			seen[args[0]] = true
			if _, ok := commands[args[0]]; !ok && args[0] == "history" {
				t.Logf("%s: %q: vnetbench has no history subcommand yet (being built on another branch)", file, m[1])
				continue
			}
			for _, kv := range []string{"VNETBENCH_SHARD_INDEX", "VNETBENCH_SHARD_TOTAL", "CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX"} {
				t.Setenv(kv, "")
			}
			for _, kv := range vars {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			if args[0] == "run" {
				args = append(args, "--dry-run")
			}
			var so, se bytes.Buffer
			err := run(t.Context(), args, &so, &se)
			if args[0] == "run" {
				if err != nil || !strings.Contains(so.String(), "scenario quickstart, seed") || !strings.Contains(so.String(), "(shard 2/4)") {
					t.Errorf("%s: %q: %v\n%s", file, args, err, so.String())
				}
				continue
			}
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

// recipeArgs splits a recipe's command line as a shell would, up to a
// redirection or another command: "$SCENARIO" is the quickstart
// scenario, other variables are paths that do not exist.
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
		case strings.Contains(f, "$"):
			f = filepath.Join(t.TempDir(), "x")
		}
		out = append(out, f)
	}
	return out
}
