package runner

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// PipelineIDEnv is vnetbench's own pipeline id variable (SeedFromEnv):
// any string every shard of one pipeline shares and the next pipeline
// does not, for engines that export none vnetbench knows (the
// Kubernetes recipe sets it to the shard Job's uid with the downward
// API).
const PipelineIDEnv = "VNETBENCH_PIPELINE_ID"

// pipelineIDs are the variables SeedFromEnv reads, the first set wins.
// GitHub's run id is taken without GITHUB_RUN_ATTEMPT: "Re-run failed
// jobs" runs only the failed shards again, as a new attempt, and they
// must merge with the shards that passed in the first.
var pipelineIDs = []struct{ name, what string }{
	{PipelineIDEnv, "vnetbench's pipeline id"},
	{"CI_PIPELINE_ID", "GitLab pipeline, kept by retried jobs"},
	{"GITHUB_RUN_ID", "GitHub Actions run, the same on every attempt"},
}

// ExtraSeedSource is the env.json Extra key saying where the run's seed
// came from (ResolveSeed's source).
const ExtraSeedSource = "seed_source"

// SeedFromEnv derives a seed that every job of one CI pipeline computes
// alike, from the first of VNETBENCH_PIPELINE_ID, CI_PIPELINE_ID and
// GITHUB_RUN_ID that is set: a decimal id (1 to 2^63-1) is the seed
// itself, any other string (a Kubernetes uid) its FNV-1a hash folded to
// 1..2^31-1. source names the variable, its value and the engine.
func SeedFromEnv(getenv func(string) string) (seed int64, source string, ok bool) {
	for _, p := range pipelineIDs {
		v := strings.TrimSpace(getenv(p.name))
		if v == "" {
			continue
		}
		return seedOf(v), fmt.Sprintf("%s=%s (%s)", p.name, v, p.what), true
	}
	return 0, "", false
}

func seedOf(id string) int64 {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > 0 {
		return n
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return int64(h.Sum64()%(1<<31-1)) + 1
}

// SeedFlag is run's --seed: a number N, "auto" (the pipeline's id:
// SeedFromEnv, required) or unset (the zero value).
type SeedFlag struct {
	N    int64
	Auto bool
}

// Seed sources ResolveSeed names (besides SeedFromEnv's).
const (
	SeedFromFlag     = "--seed"
	SeedFromScenario = "scenario"
	SeedRandom       = "random"
)

// ResolveSeed picks a run's cell-order seed and says where it came from,
// the first of: --seed N; --seed auto (SeedFromEnv); the scenario's
// seed:; for a shard (shard "I/N", not ""), SeedFromEnv, since the shards
// of one run must share a seed (merge refuses others) and a pipeline's
// id is all they share; else a random one. A shard without any of
// these, or --seed auto outside a pipeline, is bad input: refused before
// anything is measured, with the line that fixes it.
func ResolveSeed(f SeedFlag, scenario int64, shard string, getenv func(string) string) (seed int64, source string, err error) {
	vars := make([]string, len(pipelineIDs))
	for i, p := range pipelineIDs {
		vars[i] = p.name
	}
	list := strings.Join(vars, ", ")
	switch {
	case f.N != 0:
		return f.N, SeedFromFlag, nil
	case f.Auto:
		if seed, source, ok := SeedFromEnv(getenv); ok {
			return seed, source, nil
		}
		return 0, "", fault.Input("run --seed auto: no pipeline id in the environment (%s; under sudo keep it with --preserve-env=NAME): pass --seed N instead, the same on every shard", list)
	case scenario != 0:
		return scenario, SeedFromScenario, nil
	case shard != "":
		if seed, source, ok := SeedFromEnv(getenv); ok {
			return seed, source, nil
		}
		return 0, "", fault.Input("run --shard %s: no seed that every shard shares (merge refuses shards of different seeds): pass the same --seed N to every shard, set seed: in the scenario, or in CI pass --seed auto with one of %s set (under sudo: --preserve-env=NAME)", shard, list)
	}
	return rand.Int64N(1<<31-1) + 1, SeedRandom, nil
}
