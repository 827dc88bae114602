package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/linkcheck"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// writeShard writes a small run directory for merge and history.
func writeShard(t *testing.T, dir, id string, shard int, cells ...string) {
	t.Helper()
	start := time.Unix(1700000000, 0).UTC()
	env := results.Env{Run: id, Created: start, Scenario: "links", Hostname: "h", KernelRelease: "6.18", Accel: "tcg",
		Extra: map[string]string{"shard": string(rune('0'+shard)) + "/2"}}
	w, err := results.Create(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, c := range cells {
		out, rel, err := w.ArtifactDir(c, "host", 0)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteFile("trafgen.txt", []byte(c), 0o644)
		out.Close()
		if err := w.Append(results.Sample{Run: id, Cell: c, Kernel: "host", Start: start, WindowS: 5,
			Metrics: map[metric.Key]float64{"tx_pps": 1000}, Artifacts: []string{filepath.Join(rel, "trafgen.txt")}}); err != nil {
			t.Fatal(err)
		}
	}
	w.Root().WriteFile(results.ReproduceFile, []byte("#!/bin/sh\n"), 0o755)
}

// Every path merge, bisect, history and report write, with a link planted
// at it: nothing outside the output directory changes.
func TestOutputsWriteThroughNoLink(t *testing.T) {
	in := t.TempDir()
	a, b := filepath.Join(in, "a"), filepath.Join(in, "b")
	writeShard(t, a, "run-a", 1, "tap/x")
	writeShard(t, b, "run-b", 2, "tap/y")
	tree, commits := gitTree(t, 4)
	cl := testCLI()
	cl.judge = func(_ context.Context, _ *bisectOpts, c string, _, _ io.Writer) (bisect.Outcome, error) {
		return bisect.Outcome{Verdict: verdict.Same, Bad: c == commits[4] || c == commits[3], Reps: 3}, nil
	}
	for _, w := range []linkcheck.Writer{
		{Name: "merge", Run: func(t *testing.T, out string) error {
			return cl.run(t.Context(), []string{"merge", a, b, "-o", out}, io.Discard, io.Discard)
		}},
		{Name: "bisect", Run: func(t *testing.T, out string) error {
			return cl.run(t.Context(), []string{"bisect", "quickstart", "--tree", tree, "--good", commits[0], "--bad", commits[4], "--metric", "tx_pps", "-o", out}, io.Discard, io.Discard)
		}},
		{Name: "history add", Run: func(t *testing.T, out string) error {
			os.MkdirAll(out, 0o755)
			return cl.run(t.Context(), []string{"history", "add", a, b, "--db", filepath.Join(out, "index.db")}, io.Discard, io.Discard)
		}, Extra: []string{"index.db-wal", "index.db-shm"}},
		{Name: "history -o", Run: func(t *testing.T, out string) error {
			os.MkdirAll(out, 0o755)
			return cl.run(t.Context(), []string{"history", a, b, "--order", "given", "-o", filepath.Join(out, "history.html")}, io.Discard, io.Discard)
		}},
		{Name: "report -o", Run: func(t *testing.T, out string) error {
			os.MkdirAll(out, 0o755)
			return cl.run(t.Context(), []string{"report", a, "-o", filepath.Join(out, "report.html")}, io.Discard, io.Discard)
		}},
	} {
		t.Run(w.Name, func(t *testing.T) {
			paths := linkcheck.Check(t, w)
			t.Logf("%s writes %v", w.Name, paths)
		})
	}
}

// A real run (quickstart, one repetition of 1 s windows: iperf3 and
// trafgen with perf stat, artifacts of every tool; the paths a run
// writes do not depend on how long it measures) resumed with a symbolic
// link planted at every path it writes: nothing outside the run
// directory changes. Four
// resumed runs cover every path: (1) every file replaced by a link to a
// file outside, and the sample directories of one cell by links to
// directories (the run replaces them and completes); (2) each kernel
// level directory a link (those cells are refused); (3) results.jsonl
// and (4) artifacts/ a link (the run is refused at once).
func TestRunWritesThroughNoLinkE2E(t *testing.T) {
	needRunHost(t)
	bin := vnetbenchBin(t)
	tmp := t.TempDir()
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"run", "quickstart", "-o", dir, "--seed", "7", "--lock-wait", "180m", "--set", "repetitions=1",
			"--set", "generator.iperf3.duration=1s", "--set", "generator.trafgen.duration=1s"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ref := filepath.Join(tmp, "ref")
	if out, err := run(ref); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	paths := linkcheck.Paths(t, ref)
	t.Logf("a run writes %d paths: %v", len(paths), paths)
	outside := linkcheck.Outside(t, len(paths))
	index := map[string]int{}
	for i, p := range paths {
		index[p] = i
	}
	// copyRef is the reference run with its samples to do again.
	copyRef := func(name string) string {
		d := filepath.Join(tmp, name)
		if out, err := exec.Command("cp", "-a", ref, d).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		os.Truncate(filepath.Join(d, results.ResultsFile), 0)
		return d
	}
	plant := func(d, p, kind string) {
		linkcheck.Plant(t, filepath.Join(d, p), linkcheck.Target(outside, kind, index[p]))
	}
	var cells []string // artifacts/CELL
	for _, p := range paths {
		if strings.Count(p, "/") == 1 && strings.HasPrefix(p, results.ArtifactsDir+"/") {
			if fi, err := os.Lstat(filepath.Join(ref, p)); err == nil && fi.IsDir() {
				cells = append(cells, p)
			}
		}
	}
	if len(cells) < 2 {
		t.Fatalf("the run wrote cells %v, want 2", cells)
	}
	before := linkcheck.Tree(outside)
	check := func(what, out string, err error) {
		t.Helper()
		if after := linkcheck.Tree(outside); after != before {
			t.Errorf("%s: the run wrote outside its directory (it said %v)\n%s", what, err, out)
		}
		t.Logf("%s: %v", what, err)
	}
	// (1) Files everywhere but under the first cell's sample directory,
	// which is a link to a directory.
	d := copyRef("files")
	sampleDir := filepath.Join(cells[0], "host", "0")
	for _, p := range paths {
		fi, _ := os.Lstat(filepath.Join(ref, p))
		switch {
		case p == sampleDir:
			plant(d, p, linkcheck.Dirs)
		case fi.Mode().IsRegular() && p != results.ResultsFile && !strings.HasPrefix(p, sampleDir+"/"):
			plant(d, p, linkcheck.Files)
		}
	}
	out, err := run(d, "--resume")
	check("files and a sample directory", out, err)
	if err != nil {
		t.Errorf("the run did not replace the links at its files: %v\n%s", err, out)
	}
	// (2) Every kernel-level directory.
	d = copyRef("kernels")
	for _, c := range cells {
		plant(d, filepath.Join(c, "host"), linkcheck.Dirs)
	}
	out, err = run(d, "--resume")
	check("kernel directories", out, err)
	// (3), (4): refused before anything starts.
	for _, p := range []string{results.ResultsFile, results.ArtifactsDir} {
		d = copyRef(strings.ReplaceAll(p, ".", "-"))
		plant(d, p, linkcheck.Files)
		out, err = run(d, "--resume")
		check(p, out, err)
		if code := exitCode(err); err == nil || !strings.Contains(out, "symbolic link") {
			t.Errorf("a link at %s: exit %d, want a refusal naming the link:\n%s", p, code, out)
		}
	}
}
