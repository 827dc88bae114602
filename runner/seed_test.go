package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// The seed of a run: the flag, then the scenario's, then for a shard the
// pipeline's id, else random; a shard with no seed it could share is
// refused with what fixes it.
func TestResolveSeed(t *testing.T) {
	gitlab := envOf("CI_PIPELINE_ID", "1043", "CI_NODE_INDEX", "2", "CI_NODE_TOTAL", "4")
	for _, tc := range []struct {
		name     string
		flag     SeedFlag
		scenario int64
		shard    string
		env      func(string) string
		seed     int64
		source   string // prefix
		err      string
	}{
		{"flag wins", SeedFlag{N: 7}, 42, "2/4", gitlab, 7, "--seed", ""},
		{"auto over the scenario", SeedFlag{Auto: true}, 42, "", gitlab, 1043, "CI_PIPELINE_ID=1043 (GitLab", ""},
		{"scenario over the pipeline", SeedFlag{}, 42, "2/4", gitlab, 42, "scenario", ""},
		{"shard takes the pipeline's", SeedFlag{}, 0, "2/4", gitlab, 1043, "CI_PIPELINE_ID=1043", ""},
		{"github run, not its attempt", SeedFlag{}, 0, "1/4", envOf("GITHUB_RUN_ID", "15623401234", "GITHUB_RUN_ATTEMPT", "2"), 15623401234, "GITHUB_RUN_ID=15623401234 (GitHub Actions", ""},
		{"vnetbench's own first", SeedFlag{}, 0, "1/2", envOf("VNETBENCH_PIPELINE_ID", "99", "CI_PIPELINE_ID", "5"), 99, "VNETBENCH_PIPELINE_ID=99", ""},
		{"shard without any", SeedFlag{}, 0, "2/4", envOf("CI_NODE_INDEX", "2"), 0, "", "run --shard 2/4: no seed that every shard shares"},
		{"auto outside a pipeline", SeedFlag{Auto: true}, 42, "", envOf(), 0, "", "run --seed auto: no pipeline id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed, src, err := ResolveSeed(tc.flag, tc.scenario, tc.shard, tc.env)
			if tc.err != "" {
				if !errors.Is(err, fault.ErrInput) || !strings.HasPrefix(err.Error(), tc.err) || !strings.Contains(err.Error(), "--seed N") {
					t.Errorf("got %d %q %v, want bad input %q naming --seed N", seed, src, err, tc.err)
				}
				return
			}
			if err != nil || seed != tc.seed || !strings.HasPrefix(src, tc.source) {
				t.Errorf("got %d %q %v, want %d from %q...", seed, src, err, tc.seed, tc.source)
			}
		})
	}
	a, src, err := ResolveSeed(SeedFlag{}, 0, "", gitlab)
	if err != nil || a < 1 || a >= 1<<31 || src != SeedRandom {
		t.Errorf("unsharded run without a seed: %d %q %v, want a random one", a, src, err)
	}
}

// A pipeline id that is not a number (a Kubernetes Job's uid) is hashed:
// alike on every shard of the Job, another for another Job, in the range
// of random seeds.
func TestSeedFromEnvUID(t *testing.T) {
	uid := "3f6c2a1e-8b1d-4c55-9e0a-7d2f1b9c4e11"
	a, src, ok := SeedFromEnv(envOf(PipelineIDEnv, uid))
	b, _, _ := SeedFromEnv(envOf(PipelineIDEnv, uid, "JOB_COMPLETION_INDEX", "3"))
	c, _, _ := SeedFromEnv(envOf(PipelineIDEnv, "3f6c2a1e-8b1d-4c55-9e0a-7d2f1b9c4e12"))
	if !ok || a != b || a == c || a < 1 || a >= 1<<31 || src != PipelineIDEnv+"="+uid+" (vnetbench's pipeline id)" {
		t.Errorf("uid seeds %d %d %d from %q", a, b, c, src)
	}
	for _, id := range []string{"0", "-4", "99999999999999999999", " "} {
		s, _, ok := SeedFromEnv(envOf("CI_PIPELINE_ID", id))
		if strings.TrimSpace(id) == "" {
			if ok {
				t.Errorf("blank id gave seed %d", s)
			}
			continue
		}
		if !ok || s < 1 || s >= 1<<31 {
			t.Errorf("id %q: seed %d, want a hashed one", id, s)
		}
	}
}
