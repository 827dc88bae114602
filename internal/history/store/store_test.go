package store

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/history"
)

// The real captures of report/testdata (see its README).
const realRuns = "../../../report/testdata/real/"

func TestReadRunReal(t *testing.T) {
	r, err := ReadRun(realRuns + "quickstart-tcg")
	if err != nil {
		t.Fatal(err)
	}
	if r.Scenario != "quickstart" || !r.Time.Equal(time.Date(2026, 11, 30, 0, 0, 3, 259107005, time.UTC)) {
		t.Errorf("scenario %q, time %v; want env.json's", r.Scenario, r.Time)
	}
	if got := r.Labels["running"]; got != "6.18.44-fc-v657" {
		t.Errorf("label %q, want the kernel release", got)
	}
	found := false
	for _, v := range r.Values {
		if v.Cell == "tap/trafgen/pfifo_fast" && v.Metric == "tx_pps" {
			found = true
			// The median of the two repetitions, 8951.7 and 14799.7 pps.
			if want := (8951.734150246464 + 14799.695181738156) / 2; v.Value != want || v.Kernel != "running" {
				t.Errorf("tx_pps %v on %q, want %v on running", v.Value, v.Kernel, want)
			}
		}
	}
	if !found {
		t.Error("no tx_pps of the trafgen cell")
	}
	lab, err := ReadRun(realRuns + "lab-pktgen-tcg")
	if err != nil {
		t.Fatal(err)
	}
	if got := lab.Labels["stock"]; got != "6.1.192 cfg 70846e11" {
		t.Errorf("lab stock label %q, want its release and config hash", got)
	}
}

func TestIndexAddReplaceRebuild(t *testing.T) {
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "h.db")
	x, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ReadRun(realRuns + "quickstart-tcg")
	if err != nil {
		t.Fatal(err)
	}
	lab, err := ReadRun(realRuns + "lab-pktgen-tcg")
	if err != nil {
		t.Fatal(err)
	}
	// The lab run was recorded a day after the quickstart; added first.
	for _, r := range []*Run{lab, q, q} {
		if err := x.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := x.Paths(ctx)
	if err != nil || len(paths) != 2 {
		t.Fatalf("paths %v (%v), want the two runs once each", paths, err)
	}
	byTime, err := x.Series(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	direct := Series([]*Run{q, lab})
	if len(byTime) != len(direct) {
		t.Fatalf("%d series from the index, %d from the runs", len(byTime), len(direct))
	}
	want := map[[4]string]history.Series{}
	for _, s := range direct {
		want[[4]string{s.Scenario, s.Cell, s.Kernel, s.Metric}] = s
	}
	for _, s := range byTime {
		w := want[[4]string{s.Scenario, s.Cell, s.Kernel, s.Metric}]
		if len(s.Points) != len(w.Points) || s.Points[0].Value != w.Points[0].Value || s.Points[0].Label != w.Points[0].Label || s.Better != w.Better {
			t.Errorf("%s: index %+v, runs %+v", s.Title(), s, w)
		}
	}
	x.Close()
	n, err := Rebuild(ctx, db, nil)
	if err != nil || n != 2 {
		t.Fatalf("rebuild from the index's own paths: %d runs, %v", n, err)
	}
	// A recorded directory since removed: the error says the index named
	// it and is unchanged (it said "pass a run directory written by
	// 'vnetbench run'", to a command given none).
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.CopyFS(gone, os.DirFS(realRuns+"quickstart-tcg")); err != nil {
		t.Fatal(err)
	}
	g, err := ReadRun(gone)
	if err != nil {
		t.Fatal(err)
	}
	x, err = Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add(ctx, g); err != nil {
		t.Fatal(err)
	}
	x.Close()
	os.RemoveAll(gone)
	_, err = Rebuild(ctx, db, nil)
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "history rebuild: a run that "+db+" records cannot be read, so the index is left as it was") || strings.Contains(err.Error(), "\n") {
		t.Errorf("rebuild with a recorded run gone: %v", err)
	}
	if x, err = Open(db); err == nil {
		if paths, _ := x.Paths(ctx); len(paths) != 3 {
			t.Errorf("index after the refused rebuild: %v, want the 3 runs", paths)
		}
		x.Close()
	}
}

// The index keeps each run's within-run noise: the variance of the logs
// of its repetitions, which compare --noise-from pools into a scale.
func TestIndexNoise(t *testing.T) {
	ctx := t.Context()
	x, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	q, err := ReadRun(realRuns + "quickstart-tcg")
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add(ctx, q, q); err != nil {
		t.Fatal(err)
	}
	nz, err := x.Noise(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := nz.Scale("tap/trafgen/pfifo_fast", "tx_pps")
	// The two repetitions, 8951.7 and 14799.7 pps: the variance of two
	// logs is half their squared difference. The run, added twice, is
	// one record.
	want := math.Pow(math.Log(14799.695181738156/8951.734150246464), 2) / 2
	if s == nil || s.Runs != 1 || s.DF != 1 || math.Abs(s.Var-want) > 1e-12 {
		t.Fatalf("scale %+v, want one run of 1 degree of freedom and variance %g", s, want)
	}
	if nz.Scale("tap/trafgen/pfifo_fast", "no_such_metric") != nil || (*Noise)(nil).Scale("a", "b") != nil {
		t.Error("a scale for a series the index does not have")
	}
}

// A run whose kernel label is its directory's name (docs/lab.md's run
// --label stock -o runs/stock) keeps its label: a series is one per
// kernel label. The label was dropped as if the run had none, so
// history of runs/stock and runs/patched made one series of both. A
// benchfmt file without a kernel label still joins the series across
// files.
func TestReadRunLabelNamedAsDir(t *testing.T) {
	r, err := ReadRun("../../../report/testdata/generated/stock")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Values {
		if v.Kernel != "stock" {
			t.Fatalf("%s %s: kernel %q, want the run's label stock", v.Cell, v.Metric, v.Kernel)
		}
	}
	dir := t.TempDir()
	bench := filepath.Join(dir, "c001.bench")
	os.WriteFile(bench, []byte("BenchmarkTx 1 450000 tx_pps\n"), 0o644)
	labelled := filepath.Join(dir, "stock.bench")
	os.WriteFile(labelled, []byte("kernel: stock\nBenchmarkTx 1 450000 tx_pps\n"), 0o644)
	for path, want := range map[string]string{bench: "", labelled: "stock"} {
		r, err := ReadRun(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Values) != 1 || r.Values[0].Kernel != want {
			t.Errorf("%s: values %+v, want one of kernel %q", filepath.Base(path), r.Values, want)
		}
	}
}

// An index in a directory that does not exist: SQLite's "unable to open
// database file" came out as "delete it and run 'vnetbench history
// rebuild'", where there was nothing to delete. It names the directory.
func TestOpenMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodir")
	_, err := Open(filepath.Join(dir, "index.db"))
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), "directory "+dir+" does not exist") || strings.Contains(fmt.Sprint(err), "delete it") {
		t.Errorf("Open: %v, want bad input naming the missing directory", err)
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Errorf("Open made %s", dir)
	}
}

// An index path that is a directory: SQLite's "unable to open database
// file" came out as "delete it and run 'vnetbench history rebuild'",
// telling the user to delete a directory that is no index. It says it
// is a directory.
func TestOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir)
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), dir+": it is a directory, not an index") || strings.Contains(fmt.Sprint(err), "delete it") {
		t.Errorf("Open: %v, want bad input saying it is a directory", err)
	}
}

// A run's results.jsonl is the run: the same scenario, time, labels and
// path as its directory, so history add of either is one record.
func TestReadRunResultsFile(t *testing.T) {
	dir, err := ReadRun(realRuns + "quickstart-tcg")
	if err != nil {
		t.Fatal(err)
	}
	file, err := ReadRun(realRuns + "quickstart-tcg/results.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if file.Scenario != dir.Scenario || !file.Time.Equal(dir.Time) || file.Path != filepath.Clean(dir.Path) {
		t.Errorf("results.jsonl read as scenario %q, time %v, path %q; want the directory's %q, %v, %q",
			file.Scenario, file.Time, file.Path, dir.Scenario, dir.Time, dir.Path)
	}
	if fmt.Sprint(file.Labels) != fmt.Sprint(dir.Labels) {
		t.Errorf("labels %v, want the directory's %v", file.Labels, dir.Labels)
	}
}
