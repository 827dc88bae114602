package main

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// fakeLoopEnv makes the test binary the CLI (TestMain) with the runner's
// real loop (netns, tap, qdisc, QEMU idling in its firmware, env.json,
// results) around a fake guest agent and a fake generator whose numbers
// depend on the cell and repetition only: a shard measures a cell exactly
// as a single machine does, so merged shards and one run can be compared
// sample by sample.
const fakeLoopEnv = "VNB_TEST_FAKE_LOOP"

func fakeLoopMain() int {
	cl := newCLI()
	cl.host = func() lab.Host { return testHost(tcgHost) } // as in the tests
	cl.runOptions = func(o *runner.Options) {
		o.LockPath = os.Getenv(fakeLoopEnv)
		o.Image = func(context.Context, scenarios.Guest, runner.GuestContents) (*runner.GuestImage, error) {
			return &runner.GuestImage{}, nil
		}
		o.DialAgent = func(context.Context, *qemu.VM) (runner.Agent, error) { return &loopAgent{}, nil }
		o.NewGenerator = func(c *scenarios.Cell) (workload.Generator, error) { return &loopGen{cell: c.Name, rep: c.Rep}, nil }
	}
	err := cl.run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vnetbench: %v\n", err)
	}
	return exitCode(err)
}

type loopAgent struct{ rx atomic.Uint64 }

func (a *loopAgent) WaitReady(context.Context) error { return nil }
func (a *loopAgent) Stats(context.Context) (runner.GuestStats, error) {
	return runner.GuestStats{RxPackets: a.rx.Add(1000)}, nil
}
func (a *loopAgent) Do(context.Context, string, string, ...string) (string, error) { return "", nil }
func (a *loopAgent) Sink(context.Context, string) error                            { return nil }
func (a *loopAgent) Poweroff(context.Context) error                                { return nil }
func (a *loopAgent) Close() error                                                  { return nil }

type loopGen struct {
	cell  string
	rep   int
	start time.Time
}

func (g *loopGen) Start(context.Context, *runner.Window) error { g.start = time.Now(); return nil }
func (g *loopGen) Threads() ([]int, bool)                      { return nil, false }
func (g *loopGen) Wait(ctx context.Context) (*workload.Result, error) {
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", g.cell, g.rep)
	return &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": float64(100000 + h.Sum32()%50000)}, Elapsed: time.Since(g.start)}, nil
}

const shardScenario = `
name: shardtest
backend: tap
qdisc: [pfifo_fast, noqueue, pfifo, bfifo]
guest: {vcpus: 1, memory: 128MiB, accel: tcg}
generator:
  trafgen: {duration: 1s}
repetitions: 2
timeouts: {boot: 30s, teardown: 10s}
`

// runProcess runs the test binary as vnetbench with env added.
func runProcess(t *testing.T, lock string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), fakeLoopEnv+"="+lock), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// N shards run as separate processes, each taking its shard from a
// Kubernetes Indexed Job's variables and its seed from the Job's uid as
// the recipe sets them (--shard auto --seed auto), merge into what one
// machine measures running every cell with that seed: the same samples
// (cell, kernel, repetition, axes, labels, the generator's numbers) and
// the same scenario, seed, harness and kernel in env.json; only
// timestamps, run ids and the harness's own timings differ. A shard of
// another Job (another uid, so another seed) does not merge.
func TestShardAutoMergeEqualsSingleRun(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces and a tap")
	testenv.NeedFile(t, "/dev/net/tun", "tun/tap")
	testenv.NeedCommand(t, qemu.DefaultBinary, "qemu-system-x86")
	testenv.NeedCommand(t, "trafgen", "netsniff-ng") // preflight looks for the scenario's tools
	tmp := t.TempDir()
	scen := filepath.Join(tmp, "shardtest.yaml")
	os.WriteFile(scen, []byte(shardScenario), 0o644)
	lock := filepath.Join(tmp, "lock")
	const n = 5 // 4 distinct cells: the fifth shard is empty
	const uid = "0b7f5c9e-2d41-4f0a-9a63-1e8d2c4b6a70"
	job := func(i int, uid string) []string {
		return []string{"JOB_COMPLETION_INDEX=" + fmt.Sprint(i), "VNETBENCH_SHARD_TOTAL=" + fmt.Sprint(n), runner.PipelineIDEnv + "=" + uid,
			"CI_NODE_INDEX=", "CI_NODE_TOTAL=", "VNETBENCH_SHARD_INDEX=", "CI_PIPELINE_ID=", "GITHUB_RUN_ID="}
	}
	var shards []string
	for i := range n {
		dir := filepath.Join(tmp, fmt.Sprintf("shard%d", i))
		out, err := runProcess(t, lock, job(i, uid), "run", scen, "--shard", "auto", "--seed", "auto", "-o", dir)
		want := fmt.Sprintf("shard %d/%d from JOB_COMPLETION_INDEX=%d (Kubernetes Indexed Job, 0-based), VNETBENCH_SHARD_TOTAL=%d", i+1, n, i, n)
		if err != nil || !strings.Contains(out, want) || !strings.Contains(out, " from VNETBENCH_PIPELINE_ID="+uid) {
			t.Fatalf("shard %d: %v, want %q and the seed's source in:\n%s", i, err, want, out)
		}
		if empty := strings.Contains(out, "shard 5/5 has no cells of this scenario (4 distinct cells over 5 shards)"); empty != (i == 4) {
			t.Errorf("shard %d: empty-shard note %v:\n%s", i+1, empty, out)
		}
		shards = append(shards, dir)
	}
	full := filepath.Join(tmp, "full")
	if out, err := runProcess(t, lock, []string{runner.PipelineIDEnv + "=" + uid}, "run", scen, "--seed", "auto", "-o", full); err != nil {
		t.Fatalf("single run: %v\n%s", err, out)
	}
	other := filepath.Join(tmp, "other-job")
	if out, err := runProcess(t, lock, job(1, uid+"x"), "run", scen, "--shard", "auto", "--seed", "auto", "-o", other); err != nil {
		t.Fatalf("shard of another Job: %v\n%s", err, out)
	}
	if out, err := runProcess(t, lock, nil, "merge", shards[0], other, shards[2], shards[3], shards[4], "-o", filepath.Join(tmp, "foreign")); err == nil || !strings.Contains(out, "ran different seeds") {
		t.Errorf("merge with a shard of another Job: %v\n%s", err, out)
	}
	if out, err := runProcess(t, lock, nil, "merge", shards[0], shards[2], "-o", filepath.Join(tmp, "bad")); err == nil || !strings.Contains(out, "shards 2/5, 4/5, 5/5 are missing") {
		t.Errorf("merge without shard 2: %v\n%s", err, out)
	}
	merged := filepath.Join(tmp, "merged")
	if out, err := runProcess(t, lock, nil, append(append([]string{"merge"}, shards...), "-o", merged)...); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	compareRuns(t, full, merged)
	for i, d := range shards {
		env, _ := results.ReadEnv(d)
		if env.Extra[runner.ExtraShard] != fmt.Sprintf("%d/%d", i+1, n) || !strings.HasPrefix(env.Extra[runner.ExtraShardSource], "JOB_COMPLETION_INDEX=") ||
			env.Extra[runner.ExtraSeedSource] != runner.PipelineIDEnv+"="+uid+" (vnetbench's pipeline id)" {
			t.Errorf("shard %d env extra %v", i, env.Extra)
		}
	}
}

// compareRuns: the same samples and environment, but for times, run ids
// and the harness's timings.
func compareRuns(t *testing.T, full, merged string) {
	t.Helper()
	a, err := results.Load(full)
	if err != nil {
		t.Fatal(err)
	}
	b, err := results.Load(merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Samples) != 8 || len(b.Samples) != len(a.Samples) || len(a.Failed)+len(b.Failed) != 0 {
		t.Fatalf("%d samples in one run, %d merged (want 8; failed %d+%d)", len(a.Samples), len(b.Samples), len(a.Failed), len(b.Failed))
	}
	canon := func(set *results.Set) []string {
		var out []string
		for _, s := range set.Samples {
			// The guest's boot time and the sample's phases: timings.
			delete(s.Labels, "boot_s")
			delete(s.Labels, "phases_s")
			out = append(out, fmt.Sprintf("%s|%s|%d|%v|%v|tx_pps=%v|emulated=%v", s.Cell, s.Kernel, s.Rep, s.Axes, s.Labels, s.Metrics["tx_pps"], s.Emulated))
		}
		slices.Sort(out)
		return out
	}
	if ca, cb := canon(a), canon(b); !slices.Equal(ca, cb) {
		t.Errorf("samples differ:\none run: %q\nmerged:  %q", ca, cb)
	}
	ea, eb := a.Env["running"], b.Env["running"]
	if ea == nil || eb == nil {
		t.Fatalf("env %v %v", a.Env, b.Env)
	}
	if ea.Scenario != eb.Scenario || ea.Seed != eb.Seed || ea.Version != eb.Version || ea.KernelRelease != eb.KernelRelease ||
		ea.ConfigSHA256 != eb.ConfigSHA256 || ea.Accel != eb.Accel || eb.Extra[runner.ExtraShard] != "" || eb.Extra["merged_from"] == "" {
		t.Errorf("env differs:\none run: %+v\nmerged:  %+v", ea, eb)
	}
}
