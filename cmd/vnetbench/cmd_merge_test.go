package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
)

func TestMergeInProcess(t *testing.T) {
	tmp := t.TempDir()
	var dirs []string
	for i, cell := range []string{"tap/trafgen", "tap/iperf3-p1"} {
		d := filepath.Join(tmp, "shard"+string(rune('1'+i)))
		w, err := results.Create(d, results.Env{Run: "r" + cell})
		if err != nil {
			t.Fatal(err)
		}
		w.Append(results.Sample{Cell: cell, Kernel: "host", Start: time.Unix(0, 0), WindowS: 1, Metrics: map[metric.Key]float64{"tx_pps": 1}})
		w.Close()
		dirs = append(dirs, d)
	}
	out := filepath.Join(tmp, "all")
	var so, se bytes.Buffer
	if err := run(t.Context(), append([]string{"merge"}, append(dirs, "-o", out)...), &so, &se); err != nil {
		t.Fatal(err)
	}
	set, err := results.Load(out)
	if err != nil || len(set.Samples) != 2 {
		t.Fatalf("merged: %v, %v", set, err)
	}
	if !strings.Contains(so.String(), "merged 2") {
		t.Errorf("output %q", so.String())
	}
	if got := exitCode(run(t.Context(), []string{"merge", dirs[0]}, &so, &se)); got != exitBadInput {
		t.Errorf("merge without -o: exit %d", got)
	}
}

// One directory merged reads "1 run directory", as CI logs quote it.
func TestMergeOneSaysDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "all")
	var b strings.Builder
	if err := run(t.Context(), []string{"merge", real + "quickstart-tcg", "-o", out}, &b, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := "merged 1 run directory into " + out + "\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}

// merge's and run's -o take the same paths: missing parents are made,
// as mkdir -p makes them; a parent that is a file is one line, exit 2,
// before anything is read or built (run: runner.CheckRunDir, which run
// calls before its lock, builds and boots).
func TestMergeAndRunOutParents(t *testing.T) {
	tmp := t.TempDir()
	for _, cmd := range []string{"merge", "run"} {
		os.MkdirAll(filepath.Join(tmp, cmd), 0o755)
		os.WriteFile(filepath.Join(tmp, cmd, "file"), nil, 0o644)
	}
	for _, c := range []struct {
		out  string
		code int
	}{{"a/b/c", 0}, {"file/c", exitBadInput}} {
		var se strings.Builder
		err := run(t.Context(), []string{"merge", real + "quickstart-tcg", "-o", filepath.Join(tmp, "merge", c.out)}, io.Discard, &se)
		if got := exitCode(err); got != c.code || strings.Count(se.String(), "\n") > 1 {
			t.Errorf("merge -o %s: exit %d, want %d; said %q", c.out, got, c.code, se.String())
		}
		if err := runner.CheckRunDir(filepath.Join(tmp, "run", c.out), false); exitCode(err) != c.code {
			t.Errorf("run -o %s: %v, exit %d, want %d as merge", c.out, err, exitCode(err), c.code)
		}
	}
	if _, err := results.Load(filepath.Join(tmp, "merge", "a/b/c")); err != nil {
		t.Errorf("merged into missing parents: %v", err)
	}
}
