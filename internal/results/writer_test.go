package results

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
)

func TestWriterAppendResume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	env := Env{Run: "r1", KernelRelease: "6.18.0", CPUModel: "Test CPU", CPUs: 2, Accel: "tcg"}
	w, err := Create(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	for rep := 0; rep < 2; rep++ {
		s := Sample{Run: "r1", Cell: "tap/pktgen-t1", Rep: rep, Kernel: "stock", Start: time.Unix(0, 0).UTC(),
			WindowS: 1, Metrics: map[metric.Key]float64{"tx_pps": 450000}, Emulated: true}
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	out, rel, err := w.ArtifactDir("tap+vhost/pktgen-t4", "stock", 3)
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	abs := out.Path()
	if want := filepath.Join("artifacts", "tap+vhost__pktgen-t4", "stock", "3"); rel != want {
		t.Errorf("rel = %q, want %q", rel, want)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() || abs != filepath.Join(dir, rel) {
		t.Errorf("artifact dir %s missing: %v", abs, err)
	}
	// A second attempt at the same sample starts from an empty directory.
	os.WriteFile(filepath.Join(abs, "stale.txt"), []byte("x"), 0o644)
	if _, _, err := w.ArtifactDir("tap+vhost/pktgen-t4", "stock", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "stale.txt")); err == nil {
		t.Error("ArtifactDir kept a stale file of an earlier attempt")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, env); err == nil {
		t.Fatal("Create on a run with results succeeded, want an error")
	} else if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("Create on a run with results: %v, want bad input suggesting --resume", err)
	}

	// Tear the last line, as a crash mid-write would.
	f, err := os.OpenFile(filepath.Join(dir, ResultsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"schema":1,"cell":"tap/pktgen-t1","rep":2,"ker`)
	f.Close()

	w, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Warnings()) != 1 || !strings.Contains(w.Warnings()[0], "torn") {
		t.Errorf("warnings = %q, want one about the torn line", w.Warnings())
	}
	if !w.Done("tap/pktgen-t1", "stock", 1) || w.Done("tap/pktgen-t1", "stock", 2) {
		t.Errorf("Done: rep1=%v rep2=%v, want true false", w.Done("tap/pktgen-t1", "stock", 1), w.Done("tap/pktgen-t1", "stock", 2))
	}
	if err := w.Append(Sample{Cell: "tap/pktgen-t1", Rep: 2, Kernel: "stock", Metrics: map[metric.Key]float64{"tx_pps": 1, "lost_pps": math.NaN()}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 3 || len(set.Warnings) != 0 {
		t.Errorf("after resume: %d samples, warnings %q; want 3 and none", len(set.Samples), set.Warnings)
	}
	if last := set.Samples[2]; len(last.Metrics) != 1 || len(last.Warnings) != 1 || !strings.Contains(last.Warnings[0], "lost_pps") {
		t.Errorf("NaN metric: metrics %v warnings %q; want lost_pps dropped with a warning", last.Metrics, last.Warnings)
	}
	got, err := ReadEnv(dir)
	if err != nil || got.CPUModel != "Test CPU" || !got.Emulated() {
		t.Errorf("ReadEnv = %+v, %v", got, err)
	}
}

func TestLookup(t *testing.T) {
	for key, want := range map[metric.Key]metric.Direction{
		"tx_pps": metric.HigherIsBetter, "lost_pps": metric.LowerIsBetter, "perf.context-switches": metric.LowerIsBetter,
		"perf.cycles@vhost": metric.Neutral, "perf.ipc": metric.HigherIsBetter, "perf.L1-dcache-load-misses": metric.LowerIsBetter,
	} {
		m, ok := Lookup(key)
		if !ok || m.Better != want {
			t.Errorf("Lookup(%q) = %+v, %v; want direction %v", key, m, ok, want)
		}
	}
	if _, ok := Lookup("tx_ppx"); ok {
		t.Error("Lookup(tx_ppx) ok, want unknown")
	}
}

// A failed sample (Error set) is kept in results.jsonl but is not done
// (--resume runs it again), stays out of the samples statistics use, and
// is reported once in the warnings until a later sample replaces it.
func TestFailedSample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir, Env{Run: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	ok := Sample{Cell: "tap", Kernel: "stock", Rep: 0, WindowS: 1, Metrics: map[metric.Key]float64{"tx_pps": 1000}}
	bad := Sample{Cell: "tap", Kernel: "stock", Rep: 1, Metrics: map[metric.Key]float64{},
		Error: "cell tap rep 2: traffic: guest: the kernel reported a fault on its console: [ 1.0] BUG: soft lockup\nlast console lines:\n..."}
	for _, s := range []Sample{ok, bad} {
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	if !w.Done("tap", "stock", 0) || w.Done("tap", "stock", 1) {
		t.Errorf("Done after append: rep0=%v rep1=%v, want true false", w.Done("tap", "stock", 0), w.Done("tap", "stock", 1))
	}
	w.Close()
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 1 || len(set.Failed) != 1 || set.Failed[0].Rep != 1 {
		t.Fatalf("%d samples, failed %+v; want 1 and rep 1", len(set.Samples), set.Failed)
	}
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0], "cell tap on stock rep 2 failed: ") ||
		!strings.Contains(set.Warnings[0], "soft lockup") || strings.Contains(set.Warnings[0], "last console lines") {
		t.Errorf("warnings %q, want one line naming the failed cell", set.Warnings)
	}
	w, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.Done("tap", "stock", 1) {
		t.Error("a failed sample counts as done after OpenRun")
	}
	bad.Error, bad.Metrics = "", map[metric.Key]float64{"tx_pps": 900}
	w.Append(bad)
	w.Close()
	set, _ = Load(dir)
	if len(set.Samples) != 2 || len(set.Failed) != 0 || len(set.Warnings) != 0 {
		t.Errorf("after the retry: %d samples, %d failed, warnings %q; want 2, 0, none", len(set.Samples), len(set.Failed), set.Warnings)
	}
}

// Symbol.Row: a named symbol is its own row; an address perf could not
// name is its module's row (any JIT tid is one "[JIT]"); a row the runner
// already summed (Addresses > 0) keeps its name.
func TestSymbolRow(t *testing.T) {
	for _, tc := range []struct {
		sym     Symbol
		want    string
		grouped bool
	}{
		{Symbol{Symbol: "tun_net_xmit", DSO: "[kernel.kallsyms]"}, "tun_net_xmit", false},
		{Symbol{Symbol: "0x0000000000003305", DSO: "[pktgen]"}, "[pktgen] unresolved", true},
		{Symbol{Symbol: "0x3305", DSO: "[pktgen]"}, "[pktgen] unresolved", true},
		{Symbol{Symbol: "0x00007f1500b15350", DSO: "[JIT] tid 12619"}, "[JIT] unresolved", true},
		{Symbol{Symbol: "ffffffffc0a03305"}, "[unknown] unresolved", true},
		{Symbol{Symbol: "[pktgen] unresolved", DSO: "[pktgen]", Addresses: 3}, "[pktgen] unresolved", true},
		{Symbol{Symbol: "deadbeef", DSO: "x"}, "deadbeef", false},
	} {
		if got, g := tc.sym.Row(); got != tc.want || g != tc.grouped {
			t.Errorf("%+v.Row() = %q, %v; want %q, %v", tc.sym, got, g, tc.want, tc.grouped)
		}
	}
}

// PerfKey and SplitPerf are inverses: a perf event (hybrid and raw
// spellings too) with or without a target comes back as it went in.
func TestPerfKeySplitPerf(t *testing.T) {
	for _, tc := range []struct {
		ev, target string
		key        metric.Key
	}{
		{"cycles", "", "perf.cycles"},
		{"cycles", "vhost", "perf.cycles@vhost"},
		{"cpu_core/cycles/", "kpktgend", "perf.cpu_core/cycles/@kpktgend"},
		{"L1-dcache-load-misses", "qemu", "perf.L1-dcache-load-misses@qemu"},
	} {
		if got := PerfKey(tc.ev, tc.target); got != tc.key {
			t.Errorf("PerfKey(%q, %q) = %q, want %q", tc.ev, tc.target, got, tc.key)
		}
		if ev, target, ok := SplitPerf(tc.key); !ok || ev != tc.ev || target != tc.target {
			t.Errorf("SplitPerf(%q) = %q, %q, %v; want %q, %q", tc.key, ev, target, ok, tc.ev, tc.target)
		}
	}
}

// AppendAll writes what Append writes sample by sample, byte for byte,
// and marks the same samples done (warmups and failed ones not).
func TestAppendAllAsAppend(t *testing.T) {
	var ss []Sample
	for rep := range 3 {
		ss = append(ss, Sample{Run: "r", Cell: "tap/x", Rep: rep, Kernel: "k", Start: time.Unix(0, 0).UTC(), WindowS: 1,
			Metrics: map[metric.Key]float64{"tx_pps": float64(rep), "lost_pps": math.NaN()}, Warmup: rep == 0})
	}
	ss[2].Error = "failed"
	ss = append(ss, Sample{Run: "r", Cell: "tap/y", Kernel: "k", Metrics: map[metric.Key]float64{"tx_pps": 1}})
	write := func(all bool) (*Writer, []byte) {
		dir := filepath.Join(t.TempDir(), "run")
		w, err := Create(dir, Env{Run: "r"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		if all {
			err = w.AppendAll(ss)
		} else {
			for _, s := range ss {
				if err = w.Append(s); err != nil {
					break
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		return w, b
	}
	one, b1 := write(false)
	all, b2 := write(true)
	if !bytes.Equal(b1, b2) || bytes.Count(b2, []byte("\n")) != len(ss) {
		t.Errorf("AppendAll wrote\n%s\nAppend wrote\n%s", b2, b1)
	}
	for _, s := range ss {
		if got, want := all.Done(s.Cell, s.Kernel, s.Rep), one.Done(s.Cell, s.Kernel, s.Rep); got != want {
			t.Errorf("%s rep %d: done %v after AppendAll, %v after Append", s.Cell, s.Rep, got, want)
		}
	}
}

// CheckDir is Create's and Open's refusal, without writing: a file at
// the path, a directory with something in it, or a --resume of nothing
// is bad input that says what to do; an absent or empty directory is a
// new run's, one with results.jsonl a resume's.
func TestCheckDir(t *testing.T) {
	tmp := t.TempDir()
	file, empty, full, run := filepath.Join(tmp, "file"), filepath.Join(tmp, "empty"), filepath.Join(tmp, "full"), filepath.Join(tmp, "run")
	os.WriteFile(file, []byte("x"), 0o644)
	os.Mkdir(empty, 0o755)
	os.MkdirAll(filepath.Join(full, "old"), 0o755)
	w, err := Create(run, Env{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	// -o given as a link to an empty directory, or to a run: written
	// through before (merge -o LINK filled the link's target).
	toEmpty, toRun := filepath.Join(tmp, "to-empty"), filepath.Join(tmp, "to-run")
	os.Symlink(empty, toEmpty)
	os.Symlink(run, toRun)
	for _, tc := range []struct {
		dir    string
		resume bool
		want   string // "" = accepted
	}{
		{filepath.Join(tmp, "new"), false, ""},
		{empty, false, ""},
		{run, true, ""},
		{file, false, "is a file, not a directory; choose a new or empty directory for -o"},
		{filepath.Join(file, "sub"), false, "choose another -o"},
		{full, false, "is not empty (it holds old)"},
		{run, false, "already holds results; pass --resume"},
		{filepath.Join(tmp, "new"), true, "does not exist; --resume continues"},
		{file, true, "is a file, not a directory"},
		{empty, true, "no results.jsonl"},
		{toEmpty, false, "is a symbolic link (to " + empty + "); vnetbench writes nothing through a link"},
		{toRun, true, "is a symbolic link (to " + run + ")"},
	} {
		err := CheckDir(tc.dir, tc.resume)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (resume %v): %v", tc.dir, tc.resume, err)
		case tc.want != "" && (!errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), tc.want)):
			t.Errorf("%s (resume %v): %v, want bad input with %q", tc.dir, tc.resume, err, tc.want)
		}
	}
	// Create and Open refuse the same, as bad input (a file at -o was
	// exit 1, "mkdir: not a directory").
	if _, err := Create(file, Env{}); !errors.Is(err, fault.ErrInput) {
		t.Errorf("Create(file): %v, want bad input", err)
	}
	if _, err := Open(filepath.Join(tmp, "new")); !errors.Is(err, fault.ErrInput) {
		t.Errorf("Open(absent): %v, want bad input", err)
	}
	if _, err := Create(toEmpty, Env{}); !errors.Is(err, fault.ErrInput) {
		t.Errorf("Create(link): %v, want bad input", err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("Create(link) wrote %d entries into the link's target", len(ents))
	}
}

// The default run directory (runs/NAME, vnetbench's choice under the
// working directory) is made following no link: a link put at runs
// after run checked it (the check and the making are minutes apart,
// kernel builds between them) is refused as bad input naming it, and
// nothing is written where it points. Create, which run used for it
// before, made the directory through such a link.
func TestCreateChosenFollowsNoLink(t *testing.T) {
	wd, target := t.TempDir(), t.TempDir()
	rel := filepath.Join("runs", "s-20261205-000000")
	w, err := CreateChosen(wd, rel, Env{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := os.Lstat(filepath.Join(wd, rel, ResultsFile)); err != nil {
		t.Errorf("no %s in the chosen directory: %v", ResultsFile, err)
	}
	wd2 := t.TempDir()
	os.Symlink(target, filepath.Join(wd2, "runs")) // planted after the check
	_, err = CreateChosen(wd2, rel, Env{Run: "r"})
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), filepath.Join(wd2, "runs")+" is a symbolic link (to "+target+")") ||
		!strings.Contains(fmt.Sprint(err), "give -o DIR, or remove the link") {
		t.Errorf("CreateChosen through a link at runs: %v, want ChosenLink's bad input", err)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}
