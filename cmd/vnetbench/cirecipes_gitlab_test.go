package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/history/store"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/qemu"
)

// gitlabRunFlags make the quickstart as small as it gets for the test
// (RUN_FLAGS, the recipe's variable for more run flags): one repetition
// of each of its 2 cells, 1 s windows instead of 5 s, and a wait for the
// host lock that another run on this machine may hold.
const gitlabRunFlags = "--lock-wait 60m --repetitions 1 --set generator.iperf3.duration=1s --set generator.trafgen.duration=1s"

// The GitLab recipe, run as GitLab runs it: gitlab-ci-local (the version
// docs/ci/gitlab-ci-local pins; make deps installs it, make test's
// test-gitlab lane installs it if missing, says where and runs this test
// alone, beside the VM packages) executes docs/ci/gitlab-ci.yml,
// included from a .gitlab-ci.yml as its header says, in a copy of this
// module (each job in a fresh copy, artifacts and the cache passed between
// jobs and pipelines: --shell-isolation), twice on the quickstart. The
// first pipeline measures 4 shards, merges them, has no baseline yet and
// records the history; the second gates against the first with the
// history's noise (--noise-from, which has no spreads to give from runs
// of 1 repetition and says so): too few repetitions to decide, so
// compare exits 3 (UNKNOWN), which the recipe makes a warning, and the
// pipeline passes. Every shard of a pipeline
// takes its seed from CI_PIPELINE_ID; the merged run has every sample a
// single run of the scenario has; gates.xml has a case per cell that
// measured the gated tx_pps; the
// history index holds both runs.
func TestGitLabRecipeRuns(t *testing.T) {
	gcl := needGitLabRunner(t)
	project := gitlabProject(t)
	var ids []string
	for p := 1; p <= 2; p++ {
		start := time.Now()
		out, err := runGitLabPipeline(t, gcl, project)
		// The whole output, for -v and failures (docs/ci.md quotes it).
		t.Logf("pipeline %d: %s wall time:\n%s", p, time.Since(start).Round(time.Second), out)
		if err != nil {
			t.Fatalf("pipeline %d: %v", p, err)
		}
		ids = append(ids, checkPipelineSeed(t, p, out))
		wants := []string{"no baseline yet: this run becomes it"}
		if p == 2 {
			// --noise-from read the index: its one run of 1 repetition
			// has no spreads, and compare says so.
			wants = []string{"UNKNOWN", "--noise-from history/index.db: no run there has 2 or more repetitions"}
		}
		gate := jobLog(t, project, "gate")
		for _, want := range wants {
			if !strings.Contains(gate, want) {
				t.Errorf("pipeline %d: gate's output lacks %q:\n%s", p, want, gate)
			}
		}
	}
	if ids[0] == ids[1] {
		t.Errorf("both pipelines ran with CI_PIPELINE_ID %s", ids[0])
	}
	state := filepath.Join(project, ".gitlab-ci-local")
	merged := filepath.Join(state, "artifacts", "merge", "runs", "pipeline-"+ids[1])
	cells := checkMergedCells(t, merged)
	checkGates(t, filepath.Join(state, "artifacts", "gate", "gates.xml"), cells)
	x, err := store.Open(filepath.Join(state, "cache", "vnetbench-history", "history", "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	paths, err := x.Paths(t.Context())
	if err != nil || len(paths) != 2 || !strings.HasSuffix(paths[0], "pipeline-"+ids[0]) || !strings.HasSuffix(paths[1], "pipeline-"+ids[1]) {
		t.Errorf("history index holds %q (%v), want the two pipelines' runs", paths, err)
	}
}

// needGitLabRunner returns gitlab-ci-local's path (VNETBENCH_GITLAB_CI_LOCAL,
// else PATH's), or skips (fails under CI) when it, the version
// docs/ci/gitlab-ci-local pins, or what the pipeline's jobs run is missing.
func needGitLabRunner(t *testing.T) string {
	t.Helper()
	testenv.SkipIfShort(t, "e2e: two pipelines of the GitLab recipe, each with real runs")
	testenv.NeedRoot(t, "the recipe's sudo vnetbench run: network namespaces, a tap")
	testenv.NeedFile(t, "/dev/net/tun", "tun/tap")
	testenv.NeedCommand(t, qemu.DefaultBinary, "qemu-system-x86")
	testenv.NeedCommand(t, "iperf3", "iperf3")
	testenv.NeedCommand(t, "trafgen", "netsniff-ng")
	for _, c := range []string{"rsync", "sudo", "git", "make"} {
		testenv.NeedCommand(t, c, c)
	}
	testenv.NeedCommand(t, "go", "")
	b, err := os.ReadFile("../../docs/ci/gitlab-ci-local/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Dependencies["gitlab-ci-local"] == "" {
		t.Fatalf("docs/ci/gitlab-ci-local/package.json pins no gitlab-ci-local (%v)", err)
	}
	pin := pkg.Dependencies["gitlab-ci-local"]
	gcl := os.Getenv("VNETBENCH_GITLAB_CI_LOCAL") // make test-gitlab sets it
	if gcl == "" {
		gcl = "gitlab-ci-local"
	}
	gcl, err = exec.LookPath(gcl)
	if err != nil {
		testenv.Skipf(t, "needs gitlab-ci-local %s (make deps installs it; make test-gitlab installs it and passes its path in VNETBENCH_GITLAB_CI_LOCAL): %v", pin, err)
	}
	v, err := exec.Command(gcl, "--version").Output()
	if got := strings.TrimSpace(string(v)); err != nil || got != pin {
		testenv.Skipf(t, "needs gitlab-ci-local %s, docs/ci/gitlab-ci-local's pin (make deps installs it); %s is %q (%v)", pin, gcl, got, err)
	}
	return gcl
}

// gitlabProject copies this module's files (tracked, and new ones not
// ignored: the working tree as it is) into a new git repository on
// branch main, with a .gitlab-ci.yml that includes the recipe.
func gitlabProject(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "project")
	for _, f := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		st, serr := os.Lstat(filepath.Join(root, f))
		if err != nil || serr != nil {
			t.Fatal(err, serr)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	include := "include:\n  - local: docs/ci/gitlab-ci.yml\n"
	if err := os.WriteFile(filepath.Join(dir, ".gitlab-ci.yml"), []byte(include), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-q", "-m", "vnetbench"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// runGitLabPipeline runs the project's pipeline once, as the recipe's
// user would (docs/ci.md shows this command and its output).
func runGitLabPipeline(t *testing.T, gcl, project string) (string, error) {
	t.Helper()
	end := time.Now().Add(60 * time.Minute) // mostly waits for the host lock, when other runs hold it
	if d, ok := t.Deadline(); ok && d.Add(-2*time.Minute).Before(end) {
		end = d.Add(-2 * time.Minute) // time to tear down and report
	}
	ctx, cancel := context.WithDeadline(t.Context(), end)
	defer cancel()
	cmd := exec.CommandContext(ctx, gcl, "--shell-isolation", "--concurrency", "1", "--variable", "SCENARIO=quickstart",
		"--variable", "FAIL_ON=tx_pps<-3%", "--variable", "RUN_FLAGS="+gitlabRunFlags)
	cmd.Dir = project
	// The jobs get the test's environment (PATH, Go's caches) but not the
	// variables the pipeline sets: CI is gitlab-ci-local's, and no other
	// engine's shard or seed leaks in.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"CI", "VNETBENCH_SHARD_INDEX", "VNETBENCH_SHARD_TOTAL", "VNETBENCH_PIPELINE_ID", "GITHUB_RUN_ID", "JOB_COMPLETION_INDEX"}, k)
	})
	cmd.Env = append(cmd.Env, "NO_COLOR=1", "FORCE_COLOR=0")
	// On the timeout, SIGTERM to the whole process group: gitlab-ci-local
	// and its jobs' shells, sudo and vnetbench, which then tears down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// jobLog is the output of the job's last run (gitlab-ci-local keeps it).
func jobLog(t *testing.T, project, job string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, ".gitlab-ci-local", "output", job+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkPipelineSeed: the 4 measure jobs of the pipeline ran shards 1..4
// of 4 with one seed, the pipeline's id, which it returns.
func checkPipelineSeed(t *testing.T, p int, out string) string {
	t.Helper()
	seeds := regexp.MustCompile(`seed (\d+) from CI_PIPELINE_ID=(\d+) `).FindAllStringSubmatch(out, -1)
	shards := regexp.MustCompile(`shard (\d)/4 from CI_NODE_INDEX=`).FindAllStringSubmatch(out, -1)
	var got []string
	for _, s := range shards {
		got = append(got, s[1])
	}
	slices.Sort(got)
	if len(seeds) != 4 || !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Fatalf("pipeline %d: shards %v, seeds %v, want shards 1..4 of 4 each with the pipeline's seed:\n%s", p, got, seeds, out)
	}
	for _, s := range seeds {
		if s[1] != seeds[0][1] || s[2] != s[1] {
			t.Errorf("pipeline %d: seeds %v, want one, the pipeline's id", p, seeds)
		}
	}
	return seeds[0][2]
}

// checkMergedCells: the merged run has the samples a single run of the
// scenario (with the same flags) has, each once, none failed; it
// returns the cells that measured tx_pps, the gated metric (iperf3's
// cell has none).
func checkMergedCells(t *testing.T, merged string) []string {
	t.Helper()
	var so, se bytes.Buffer
	args := append([]string{"run", "quickstart", "--dry-run", "--seed", "1"}, strings.Fields(gitlabRunFlags)...)
	if err := run(t.Context(), args, &so, &se); err != nil {
		t.Fatalf("dry run: %v\n%s", err, se.String())
	}
	var want, got, cells []string
	for _, m := range regexp.MustCompile(`(?m)^\s*\d+\. (\S+) rep (\d+) \(kernel`).FindAllStringSubmatch(so.String(), -1) {
		want = append(want, m[1]+" rep "+m[2])
	}
	set, err := results.Load(merged)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range set.Samples {
		got = append(got, fmt.Sprintf("%s rep %d", s.Cell, s.Rep+1))
		if _, ok := s.Metrics["tx_pps"]; ok && !slices.Contains(cells, s.Cell) {
			cells = append(cells, s.Cell)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) || len(set.Failed) > 0 || len(cells) == 0 {
		t.Errorf("merged run %s has %q (%d failed; tx_pps in %q), a single run %q", merged, got, len(set.Failed), cells, want)
	}
	slices.Sort(cells)
	return cells
}

// checkGates: the gate's JUnit file has one case for the gated tx_pps
// per cell that measured it.
func checkGates(t *testing.T, file string, cells []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the gate's JUnit report: %v", err)
	}
	var doc struct {
		Cases []struct {
			Class string `xml:"classname,attr"`
			Name  string `xml:"name,attr"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var got []string
	for _, c := range doc.Cases {
		if c.Class == "vnetbench.compare.tx_pps" {
			got = append(got, c.Name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, cells) {
		t.Errorf("gates.xml cases for tx_pps %q, want one per cell that has it %q:\n%s", got, cells, b)
	}
}
