package runner

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// --shard auto and auto/N read each engine's variables, with its base,
// and say which they used.
func TestShardFromEnv(t *testing.T) {
	for _, tc := range []struct {
		flag   string
		env    []string
		i, n   int
		source string
	}{
		{"auto", []string{"JOB_COMPLETION_INDEX", "0", ShardTotalEnv, "3"}, 1, 3, "JOB_COMPLETION_INDEX=0 (Kubernetes Indexed Job, 0-based), VNETBENCH_SHARD_TOTAL=3"},
		{"auto/4", []string{"JOB_COMPLETION_INDEX", "3"}, 4, 4, "JOB_COMPLETION_INDEX=3 (Kubernetes Indexed Job, 0-based), --shard auto/4"},
		{"auto", []string{"CI_NODE_INDEX", "2", "CI_NODE_TOTAL", "5"}, 2, 5, "CI_NODE_INDEX=2, CI_NODE_TOTAL=5 (GitLab parallel, 1-based)"},
		{"auto", []string{"CI_NODE_TOTAL", "1"}, 1, 1, "CI_NODE_TOTAL=1 (a GitLab job without parallel: the whole run)"},
		{"auto", []string{ShardIndexEnv, "2", ShardTotalEnv, "2"}, 2, 2, "VNETBENCH_SHARD_INDEX=2, VNETBENCH_SHARD_TOTAL=2 (vnetbench's convention, 1-based)"},
		// vnetbench's own variables win over the engine's.
		{"auto", []string{ShardIndexEnv, "1", ShardTotalEnv, "2", "CI_NODE_INDEX", "2", "CI_NODE_TOTAL", "2"}, 1, 2, "VNETBENCH_SHARD_INDEX=1"},
		{"2/3", []string{"CI_NODE_INDEX", "1", "CI_NODE_TOTAL", "3"}, 2, 3, ""},
	} {
		i, n, src, err := ParseShardFlag(tc.flag, envOf(tc.env...))
		if err != nil || i != tc.i || n != tc.n || !strings.HasPrefix(src, tc.source) || (tc.source == "") != (src == "") {
			t.Errorf("%s %v: %d/%d %q %v, want %d/%d %q", tc.flag, tc.env, i, n, src, err, tc.i, tc.n, tc.source)
		}
	}
	for _, tc := range []struct {
		flag string
		env  []string
		msg  string
	}{
		{"auto", nil, "no shard in the environment"},
		{"auto", []string{"JOB_COMPLETION_INDEX", "1"}, "gives no shard count"},
		{"auto", []string{"JOB_COMPLETION_INDEX", "3", ShardTotalEnv, "3"}, "gives shard 4 of 3"},
		{"auto", []string{"CI_NODE_INDEX", "0", "CI_NODE_TOTAL", "3"}, "gives shard 0 of 3"},
		{"auto", []string{"CI_NODE_INDEX", "x", "CI_NODE_TOTAL", "3"}, `CI_NODE_INDEX="x" is not a number`},
		{"auto", []string{ShardIndexEnv, "1"}, "set both"},
		{"auto/0", nil, "want auto/N"},
		{"0/2", nil, "want I/N"},
	} {
		_, _, _, err := ParseShardFlag(tc.flag, envOf(tc.env...))
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s %v: %v, want bad input saying %q", tc.flag, tc.env, err, tc.msg)
		}
	}
}

func writeShard(t *testing.T, dir string, env results.Env, cells ...string) string {
	t.Helper()
	w, err := results.Create(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, c := range cells {
		if err := w.Append(results.Sample{Run: env.Run, Cell: c, Kernel: "running", Start: time.Unix(0, 0).UTC(), WindowS: 1, Metrics: map[metric.Key]float64{"tx_pps": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// merge refuses shards of other scenarios, seeds, harness versions and
// kernels, names a missing or doubled shard, and drops the shard marks.
func TestMergeShardChecks(t *testing.T) {
	tmp := t.TempDir()
	base := results.Env{Scenario: "s", Seed: 7, Version: "v1", KernelRelease: "6.1", ConfigSHA256: "aa",
		Kernels: map[string]*results.Env{"patched": {KernelRelease: "6.1", Build: &results.KernelBuild{Key: "k1"}}}}
	shard := func(name, sh string, edit func(*results.Env)) string {
		e := base
		e.Run, e.Extra = name, map[string]string{ExtraShard: sh, ExtraShardSource: "test"}
		if edit != nil {
			edit(&e)
		}
		return writeShard(t, filepath.Join(tmp, name), e, "tap/"+name)
	}
	s1, s2, s3 := shard("s1", "1/3", nil), shard("s2", "2/3", nil), shard("s3", "3/3", nil)
	out := filepath.Join(tmp, "all")
	if _, err := Merge(out, []string{s1, s2, s3}); err != nil {
		t.Fatal(err)
	}
	env, _ := results.ReadEnv(out)
	if env.Extra[ExtraShard] != "" || env.Extra[ExtraShardSource] != "" || env.Extra["merged_from"] != "s1,s2,s3" || env.Scenario != "s" {
		t.Errorf("merged env %+v", env)
	}
	for _, tc := range []struct {
		dirs []string
		msg  string
	}{
		{[]string{s1, s3}, "shard 2/3 is missing (2 of 3 given); add its run directory, or rerun it with --shard 2/3"},
		{[]string{s2}, "shards 1/3, 3/3 are missing (1 of 3 given)"},
		{[]string{s1, s2, s3, shard("s2b", "2/3", nil)}, "shard 2/3 is given twice"},
		{[]string{s1, s2, shard("s3n", "3/4", nil)}, "share N"},
		{[]string{s1, s2, shard("x1", "3/3", func(e *results.Env) { e.Scenario = "other" })}, `different scenarios ("s" vs "other")`},
		{[]string{s1, s2, shard("x2", "3/3", func(e *results.Env) { e.Seed = 8 })}, "different seeds (7 vs 8)"},
		// A shard of another pipeline, its seed taken from that one's id.
		{[]string{s1, s2, shard("x2p", "3/3", func(e *results.Env) {
			e.Seed, e.Extra[ExtraSeedSource] = 1044, "CI_PIPELINE_ID=1044 (GitLab pipeline, kept by retried jobs)"
		})}, "different seeds (7 vs 1044 from CI_PIPELINE_ID=1044 (GitLab pipeline"},
		{[]string{s1, s2, shard("x3", "3/3", func(e *results.Env) { e.Version = "v2" })}, "different harness versions"},
		{[]string{s1, s2, shard("x4", "3/3", func(e *results.Env) { e.ConfigSHA256 = "bb" })}, "different kernels (identity vs kernel config sha256"},
		{[]string{s1, s2, shard("x5", "3/3", func(e *results.Env) { e.KernelRelease = "6.2" })}, "different kernels (6.1 vs 6.2)"},
		{[]string{s1, s2, shard("x6", "3/3", func(e *results.Env) {
			e.Kernels = map[string]*results.Env{"patched": {KernelRelease: "6.1", Build: &results.KernelBuild{Key: "k2"}}}
		})}, "different kernels labelled patched"},
		{[]string{s1, s2, shard("x7", "", nil)}, "one is a shard of 'run --shard', the other is not"},
	} {
		_, err := Merge(filepath.Join(tmp, "o-"+filepath.Base(tc.dirs[len(tc.dirs)-1])), tc.dirs)
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("merge %v: %v, want bad input saying %q", tc.dirs, err, tc.msg)
		}
	}
}
