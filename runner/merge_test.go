package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

func writeRun(t *testing.T, dir, id string, cells ...string) {
	t.Helper()
	w, err := results.Create(dir, results.Env{Run: id, Hostname: "h1", KernelRelease: "6.18", Accel: "tcg"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, c := range cells {
		rel := results.ArtifactDir(c, "host", 0)
		os.MkdirAll(filepath.Join(dir, rel), 0o755)
		os.WriteFile(filepath.Join(dir, rel, "trafgen.txt"), []byte(c), 0o644)
		os.WriteFile(filepath.Join(dir, "artifacts", "console-0.log"), []byte(id), 0o644)
		if err := w.Append(results.Sample{Run: id, Cell: c, Kernel: "host", Start: time.Unix(0, 0).UTC(), WindowS: 5,
			Metrics: map[metric.Key]float64{"tx_pps": 1000}, Artifacts: []string{filepath.Join(rel, "trafgen.txt")}}); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, results.ReproduceFile), []byte("#!/bin/sh\necho "+id+"\n"), 0o755)
}

func TestMerge(t *testing.T) {
	tmp := t.TempDir()
	a, b, out := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "all")
	writeRun(t, a, "run-a", "tap/x", "tap/y")
	writeRun(t, b, "run-b", "tap/z", "tap/y")
	warns, err := Merge(out, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "tap/y") {
		t.Errorf("warnings %v", warns)
	}
	set, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 3 {
		t.Fatalf("%d samples, want 3", len(set.Samples))
	}
	for _, s := range set.Samples {
		for _, art := range s.Artifacts {
			if _, err := os.Stat(filepath.Join(out, art)); err != nil {
				t.Errorf("artifact of %s: %v", s.Cell, err)
			}
		}
	}
	// The second shard's console log did not overwrite the first's.
	if got, _ := os.ReadFile(filepath.Join(out, "artifacts", "console-0.log")); string(got) != "run-a" {
		t.Errorf("console-0.log = %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "artifacts", "shard-2", "console-0.log")); string(got) != "run-b" {
		t.Errorf("shard-2 console = %q", got)
	}
	env, _ := results.ReadEnv(out)
	if env.Extra["merged_from"] != "run-a,run-b" {
		t.Errorf("env extra %v", env.Extra)
	}
	repro, _ := os.ReadFile(filepath.Join(out, results.ReproduceFile))
	if !strings.Contains(string(repro), "echo run-a") || !strings.Contains(string(repro), "echo run-b") {
		t.Errorf("reproduce.sh %q", repro)
	}
	// Bad input.
	for _, args := range [][]string{{}, {filepath.Join(tmp, "nope")}, {out}} {
		_, err := Merge(out, args)
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("Merge(%v) = %v", args, err)
		}
	}
}

// A run directory given twice is refused: it was merged with itself,
// with a warning per sample and "merged 2 run directories".
func TestMergeSameDirTwice(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	writeRun(t, a, "run-a", "tap/x")
	writeRun(t, b, "run-b", "tap/y")
	if err := os.Symlink(a, filepath.Join(tmp, "link")); err != nil {
		t.Fatal(err)
	}
	for i, dirs := range [][]string{{a, b, a + "/"}, {a, filepath.Join(tmp, "link")}} {
		out := filepath.Join(tmp, fmt.Sprint("all", i))
		_, err := Merge(out, dirs)
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "is given twice") {
			t.Errorf("Merge(%v) = %v, want bad input: given twice", dirs, err)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("Merge(%v) made %s", dirs, out)
		}
	}
}

// Directory names reach reproduce.sh only in comments: a name with a line
// break and shell syntax stays in its comment (before, the line after the
// break was a command of the merged reproduce.sh).
func TestMergeReproduceDirNames(t *testing.T) {
	tmp := t.TempDir()
	var dirs []string
	for i, evil := range evils {
		d := filepath.Join(tmp, fmt.Sprintf("%d%s", i, strings.ReplaceAll(evil, "/", "_")))
		writeRun(t, d, fmt.Sprintf("run-%d", i), fmt.Sprintf("tap/c%d", i))
		dirs = append(dirs, d)
	}
	out := filepath.Join(tmp, "all")
	if _, err := Merge(out, dirs); err != nil {
		t.Fatal(err)
	}
	repro, err := os.ReadFile(filepath.Join(out, results.ReproduceFile))
	if err != nil {
		t.Fatal(err)
	}
	checkShell(t, "merged reproduce.sh", string(repro))
}

// merge copies no link: one a shard's artifacts hold is skipped (before,
// WalkDir skipped it too, but a non-empty -o with links planted in it was
// written through); an output directory that is not empty is refused.
func TestMergeNoFollow(t *testing.T) {
	tmp := t.TempDir()
	a, out := filepath.Join(tmp, "a"), filepath.Join(tmp, "all")
	writeRun(t, a, "run-a", "tap/x")
	victim := filepath.Join(tmp, "victim")
	os.WriteFile(victim, []byte("untouched"), 0o644)
	os.Symlink(victim, filepath.Join(a, "artifacts", "link"))
	os.MkdirAll(out, 0o755)
	os.Symlink(victim, filepath.Join(out, results.ReproduceFile))
	if _, err := Merge(out, []string{a}); !errors.Is(err, fault.ErrInput) {
		t.Errorf("merge into a non-empty directory: %v, want bad input", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Errorf("written through a planted link: %q", b)
	}
	os.RemoveAll(out)
	if _, err := Merge(out, []string{a}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(out, "artifacts", "link")); err == nil {
		t.Error("a shard's link was copied")
	}
}

// A forged shard count (env.json of 1/99999999) costs merge what the
// directories given cost, not one name per missing shard (6.4 GB once).
func TestMergeForgedShardCount(t *testing.T) {
	tmp := t.TempDir()
	var dirs []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(tmp, fmt.Sprint("s", i))
		w, err := results.Create(d, results.Env{Run: "r", Extra: map[string]string{ExtraShard: fmt.Sprintf("%d/5000000", i)}})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		dirs = append(dirs, d)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Merge(filepath.Join(tmp, "out"), dirs)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "4999998 of 5000000 shards are missing") {
		t.Errorf("merge: %.300v, want the missing shards counted", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("merge allocated %d MB for 2 directories", alloc>>20)
	}
}

// An -o that holds a run is refused before the shards are read, in
// merge's words: the message was run's, "pass --resume to continue it",
// and merge has no --resume. A run's results.jsonl stands for its
// directory, as for report (it was "has no results.jsonl"), and counts
// as that directory when given twice.
func TestMergeOutHoldsRunAndResultsFile(t *testing.T) {
	tmp := t.TempDir()
	a, b, out := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "all")
	writeRun(t, a, "run-a", "tap/x")
	writeRun(t, b, "run-b", "tap/y")
	_, err := Merge(b, []string{a})
	if !errors.Is(err, fault.ErrInput) || strings.Contains(err.Error(), "--resume") || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("Merge into a run directory = %v, want bad input naming the run it holds, without --resume", err)
	}
	// One spelling twice is said once: "given twice (as A and A)" was.
	_, err = Merge(filepath.Join(tmp, "same"), []string{a, a})
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "is given twice; give each") {
		t.Errorf("Merge of one directory twice = %v, want bad input: given twice, one spelling", err)
	}
	_, err = Merge(filepath.Join(tmp, "twice"), []string{a, filepath.Join(a, results.ResultsFile)})
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "is given twice") {
		t.Errorf("Merge of a run and its results.jsonl = %v, want bad input: given twice", err)
	}
	if _, err := Merge(out, []string{a, filepath.Join(b, results.ResultsFile)}); err != nil {
		t.Fatalf("Merge with a results.jsonl: %v", err)
	}
	set, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 2 {
		t.Errorf("merged %d samples, want 2", len(set.Samples))
	}
}
