package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// writtenPaths lists every file and directory under dir, relative,
// parents before children.
func writtenPaths(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// outsideTree is a directory outside every output directory that planted
// links point at: for each of n paths a file and a directory holding
// one, all "[]" (an empty JSON list, which a state file's reader would
// accept), so a write through a link, of a file or into a directory,
// changes it.
func outsideTree(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "files"), 0o755)
	for i := range n {
		os.MkdirAll(filepath.Join(dir, "dirs", fmt.Sprint(i)), 0o755)
		os.WriteFile(filepath.Join(dir, "dirs", fmt.Sprint(i), "victim"), []byte("[]"), 0o644)
		os.WriteFile(filepath.Join(dir, "files", fmt.Sprint(i)), []byte("[]"), 0o644)
	}
	return dir
}

// treeState is every name under dir with its content, mode and link
// target: what a write anywhere under it changes.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			b.WriteString("error " + err.Error() + "\n")
			return nil
		}
		fi, _ := e.Info()
		b.WriteString(p + " " + fi.Mode().String())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		case e.Type().IsRegular():
			c, _ := os.ReadFile(p)
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// linkWriter is a command that writes under an output directory.
type linkWriter struct {
	name string
	// prepare readies a fresh output directory before a link is
	// planted in it (nil: none).
	prepare func(t *testing.T, out string)
	run     func(t *testing.T, out string) error
	// extra are paths it writes that are gone when it ends (SQLite's
	// journal files).
	extra []string
}

// checkPlantedLinks runs w once into a fresh directory to learn every
// path it writes, then again into a fresh directory per path with a
// symbolic link planted at that path (to a file and to a directory
// outside, absolute and relative): nothing outside the directory
// changes, whatever the command answers.
func checkPlantedLinks(t *testing.T, w linkWriter) []string {
	t.Helper()
	ref := filepath.Join(t.TempDir(), "out")
	if w.prepare != nil {
		w.prepare(t, ref)
	}
	if err := w.run(t, ref); err != nil {
		t.Fatalf("%s: the reference run failed: %v", w.name, err)
	}
	paths := append(writtenPaths(t, ref), w.extra...)
	if len(paths) == 0 {
		t.Fatalf("%s wrote nothing", w.name)
	}
	outside := outsideTree(t, len(paths))
	for i, p := range paths {
		for _, kind := range []string{"files", "dirs", "relative"} {
			out := filepath.Join(t.TempDir(), "out")
			if w.prepare != nil {
				w.prepare(t, out)
			}
			link := filepath.Join(out, p)
			os.MkdirAll(filepath.Dir(link), 0o755)
			os.RemoveAll(link)
			target := filepath.Join(outside, "dirs", fmt.Sprint(i))
			switch kind {
			case "files":
				target = filepath.Join(outside, "files", fmt.Sprint(i))
			case "relative":
				target, _ = filepath.Rel(filepath.Dir(link), target)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			before := treeState(t, outside)
			err := w.run(t, out)
			if after := treeState(t, outside); after != before {
				t.Errorf("%s with a link at %s to %s: wrote outside its directory (it said %v)", w.name, p, target, err)
			}
		}
	}
	return paths
}

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
	for _, w := range []linkWriter{
		{name: "merge", run: func(t *testing.T, out string) error {
			return cl.run(t.Context(), []string{"merge", a, b, "-o", out}, io.Discard, io.Discard)
		}},
		{name: "bisect", run: func(t *testing.T, out string) error {
			return cl.run(t.Context(), []string{"bisect", "quickstart", "--tree", tree, "--good", commits[0], "--bad", commits[4], "--metric", "tx_pps", "-o", out}, io.Discard, io.Discard)
		}},
		{name: "history add", run: func(t *testing.T, out string) error {
			os.MkdirAll(out, 0o755)
			return cl.run(t.Context(), []string{"history", "add", a, b, "--db", filepath.Join(out, "index.db")}, io.Discard, io.Discard)
		}, extra: []string{"index.db-wal", "index.db-shm"}},
		{name: "history -o", run: func(t *testing.T, out string) error {
			os.MkdirAll(out, 0o755)
			return cl.run(t.Context(), []string{"history", a, b, "--order", "given", "-o", filepath.Join(out, "history.html")}, io.Discard, io.Discard)
		}},
		{name: "report -o", run: func(t *testing.T, out string) error {
			os.MkdirAll(out, 0o755)
			return cl.run(t.Context(), []string{"report", a, "-o", filepath.Join(out, "report.html")}, io.Discard, io.Discard)
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			paths := checkPlantedLinks(t, w)
			t.Logf("%s writes %v", w.name, paths)
		})
	}
}

// A real run (quickstart, one repetition: iperf3 and trafgen with perf
// stat, artifacts of every tool) resumed with a symbolic link planted at
// every path it writes: nothing outside the run directory changes. Four
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
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"run", "quickstart", "-o", dir, "--seed", "7", "--lock-wait", "180m", "--set", "repetitions=1"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ref := filepath.Join(tmp, "ref")
	if out, err := run(ref); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	paths := writtenPaths(t, ref)
	t.Logf("a run writes %d paths: %v", len(paths), paths)
	outside := outsideTree(t, len(paths))
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
		link := filepath.Join(d, p)
		os.RemoveAll(link)
		if err := os.Symlink(filepath.Join(outside, kind, fmt.Sprint(index[p])), link); err != nil {
			t.Fatal(err)
		}
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
	before := treeState(t, outside)
	check := func(what, out string, err error) {
		t.Helper()
		if after := treeState(t, outside); after != before {
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
			plant(d, p, "dirs")
		case fi.Mode().IsRegular() && p != results.ResultsFile && !strings.HasPrefix(p, sampleDir+"/"):
			plant(d, p, "files")
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
		plant(d, filepath.Join(c, "host"), "dirs")
	}
	out, err = run(d, "--resume")
	check("kernel directories", out, err)
	// (3), (4): refused before anything starts.
	for _, p := range []string{results.ResultsFile, results.ArtifactsDir} {
		d = copyRef(strings.ReplaceAll(p, ".", "-"))
		plant(d, p, "files")
		out, err = run(d, "--resume")
		check(p, out, err)
		if code := exitCode(err); err == nil || !strings.Contains(out, "symbolic link") {
			t.Errorf("a link at %s: exit %d, want a refusal naming the link:\n%s", p, code, out)
		}
	}
}
