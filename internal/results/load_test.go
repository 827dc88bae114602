package results

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

// writeRun writes a run directory with env and samples through Writer, as
// the runner does, and returns its path.
func writeRun(t *testing.T, name string, env Env, samples ...Sample) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	w, err := Create(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pktgenSamples are the repetitions of one pktgen cell on kernel: tx_pps
// from txs, two threads sharing it, perf cycles of vhost.
func pktgenSamples(kernel, backend string, txs ...float64) []Sample {
	var out []Sample
	for rep, tx := range txs {
		lost := tx / 1000
		out = append(out, Sample{Cell: backend + "/pktgen-t2", Rep: rep, Kernel: kernel,
			Axes:    map[string]string{"backend": backend, "generator": "pktgen-t2"},
			Metrics: map[metric.Key]float64{"tx_pps": tx, "lost_pps": 2 * lost, "perf.cycles@vhost": 3e9 + tx},
			Threads: []ThreadSample{{I: 0, TxPPS: tx * 0.4, LostPPS: &lost}, {I: 1, TxPPS: tx * 0.6, LostPPS: &lost}},
			Labels:  map[string]string{"threads": "2"}})
	}
	return out
}

// stockPatched writes two runs, one per kernel label, with two cells each.
func stockPatched(t *testing.T) []string {
	stock := append(pktgenSamples("stock", "tap", 450000, 451000, 452000, 453000, 454000),
		pktgenSamples("stock", "tap+vhost", 900000, 905000, 910000, 915000, 920000)...)
	patched := append(pktgenSamples("patched", "tap", 560000, 561000, 562000, 563000, 564000),
		pktgenSamples("patched", "tap+vhost", 1000000, 1001000, 1002000, 1003000, 1004000)...)
	return []string{
		writeRun(t, "stock", Env{Run: "s", Accel: "kvm", CPUModel: "Test CPU"}, stock...),
		writeRun(t, "patched", Env{Run: "p", Accel: "kvm", CPUModel: "Test CPU"}, patched...),
	}
}

func TestLoadJoinsByKernel(t *testing.T) {
	set, err := Load(stockPatched(t)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Kernels(), ","); got != "stock,patched" {
		t.Errorf("kernels %q, want stock,patched", got)
	}
	if got := strings.Join(set.Cells(), ","); got != "tap/pktgen-t2,tap+vhost/pktgen-t2" {
		t.Errorf("cells %q", got)
	}
	if n := len(set.Samples); n != 20 {
		t.Errorf("%d samples, want 2 kernels x 2 cells x 5 reps = 20", n)
	}
	if len(set.Warnings) != 0 {
		t.Errorf("warnings: %q", set.Warnings)
	}
	if e := set.Env["patched"]; e == nil || e.Run != "p" {
		t.Errorf("env of patched: %+v", e)
	}
	if got := set.Values("tap/pktgen-t2", "patched", "tx_pps_thread"); len(got) != 5 || got[0] != 280000 {
		t.Errorf("tx_pps_thread (mean of the threads) = %v, want 5 values from 280000", got)
	}
	if got := metric.Join(set.MetricKeys(), ","); got != "tx_pps,tx_pps_thread,lost_pps,perf.cycles@vhost,lost_pps_thread" {
		t.Errorf("metric keys %s", got)
	}

	// Lab mode: one directory, per-kernel envs, samples without a kernel
	// label named after the directory; emulation comes from env.json.
	lab := writeRun(t, "labrun", Env{Accel: "tcg", Kernels: map[string]*Env{"patched": {KernelRelease: "6.1.0+fix", Accel: "tcg"}}},
		append(pktgenSamples("patched", "tap", 1, 2), pktgenSamples("", "tap", 3)...)...)
	set, err = Load(lab)
	if err != nil {
		t.Fatal(err)
	}
	if e := set.Env["patched"]; e == nil || e.KernelRelease != "6.1.0+fix" {
		t.Errorf("per-kernel env of patched: %+v", e)
	}
	if got := strings.Join(set.Kernels(), ","); got != "patched,labrun" {
		t.Errorf("kernels %q, want patched,labrun", got)
	}
	if !set.Emulated("patched") || !set.Samples[0].Emulated {
		t.Error("TCG run not marked emulated")
	}

	// A lab kernel's samples (label "lab", from before Nested was
	// recorded) are nested; the running kernel's are not.
	old := pktgenSamples("stock", "tap", 1)
	old[0].Labels = map[string]string{"lab": "stock"}
	set, err = Load(writeRun(t, "mixed", Env{}, append(old, pktgenSamples("running", "tap", 1)...)...))
	if err != nil {
		t.Fatal(err)
	}
	if !set.Nested("stock") || set.Nested("running") {
		t.Errorf("nested: stock %v (want true), running %v (want false)", set.Nested("stock"), set.Nested("running"))
	}
}

func TestLoadSkipsWarmupsAndFlagsDuplicates(t *testing.T) {
	s := pktgenSamples("stock", "tap", 1, 2)
	warm := s[0]
	warm.Warmup = true
	a := writeRun(t, "a", Env{}, warm, s[0], s[1])
	b := writeRun(t, "b", Env{}, s[1])
	set, err := Load(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 3 {
		t.Errorf("%d samples, want 3 (the warmup skipped)", len(set.Samples))
	}
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0], "duplicate sample tap/pktgen-t2 on stock rep 1 (2 times)") || !strings.HasSuffix(set.Warnings[0], "(vnetbench run --label NAME)") {
		t.Errorf("warnings %q, want one duplicate", set.Warnings)
	}
}

// void_rerun survives a write and a load; a sample from before it was
// recorded that carries only the runner's warning reads as a re-run whose
// cause is unknown, and another warning does not make one.
func TestLoadVoidRerun(t *testing.T) {
	s := pktgenSamples("stock", "tap", 1, 2, 3)
	s[0].VoidRerun = "connection reset by peer"
	s[0].Warnings = []string{VoidRerunNote + "cell tap/pktgen-t2 rep 1: traffic: iperf3: Connection reset by peer"}
	s[1].Warnings = []string{VoidRerunNote + "cell tap/pktgen-t2 rep 2: traffic: pktgen: void"}
	s[2].Warnings = []string{"generator was 50% busy: " + VoidRerunNote}
	set, err := Load(writeRun(t, "a", Env{}, s...))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, smp := range set.Samples {
		got = append(got, smp.VoidRerun)
	}
	if want := []string{"connection reset by peer", VoidRerunUnknown, ""}; !slices.Equal(got, want) {
		t.Errorf("void_rerun %q, want %q", got, want)
	}
}

// fault_rerun survives a write and a load like void_rerun, and a sample
// from before it was recorded reads as one whose cause is unknown; a lab
// kernel's lab_retry in env.json is that kernel's Env.
func TestLoadFaultRerun(t *testing.T) {
	const line = "[  140.000001] Kernel panic - not syncing: Fatal exception in interrupt"
	s := pktgenSamples("a", "tap", 1, 2, 3)
	s[0].FaultRerun = line
	s[0].Warnings = []string{FaultRerunNote + " (" + line + "), most likely the emulator's fault"}
	s[1].Warnings = []string{FaultRerunNote + " (BUG: soft lockup), most likely the emulator's fault"}
	s[2].Warnings = []string{"TCG in use: numbers measure the emulator, not the kernel datapath"}
	retry := &LabRetry{Why: line, Console: LabFirstConsole("a")}
	set, err := Load(writeRun(t, "a", Env{Kernels: map[string]*Env{"a": {LabRetry: retry}}}, s...))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, smp := range set.Samples {
		got = append(got, smp.FaultRerun)
	}
	if want := []string{line, RerunCauseUnknown, ""}; !slices.Equal(got, want) {
		t.Errorf("fault_rerun %q, want %q", got, want)
	}
	if e := set.Env["a"]; e == nil || e.LabRetry == nil || *e.LabRetry != *retry {
		t.Errorf("kernel a's env %+v, want lab_retry %+v", e, retry)
	}
}

func TestLoadTornLine(t *testing.T) {
	dir := writeRun(t, "stock", Env{}, pktgenSamples("stock", "tap", 1, 2, 3, 4)...)
	f, err := os.OpenFile(filepath.Join(dir, ResultsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"schema":1,"run":"thread-stock","cell":"tap/pktg`)
	f.Close()
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != 4 || len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0], "torn last line") {
		t.Errorf("%d samples, warnings %q; want 4 and one torn-line warning", len(set.Samples), set.Warnings)
	}
	// A bad line in the middle is an error naming file and line.
	b, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = "{oops\n"
	os.WriteFile(filepath.Join(dir, ResultsFile), []byte(strings.Join(lines, "")), 0o644)
	_, err = Load(dir)
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "results.jsonl:3:") {
		t.Errorf("Load with a damaged line 3: %v, want bad input naming results.jsonl:3", err)
	}
	// A newer schema is bad input that says to upgrade.
	os.WriteFile(filepath.Join(dir, ResultsFile), []byte(`{"schema":99,"cell":"c"}`+"\n"), 0o644)
	if _, err := Load(dir); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("Load of schema 99: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.txt")
	os.WriteFile(empty, []byte("no benchmarks here\n"), 0o644)
	for _, p := range []string{"testdata/nope", t.TempDir(), empty} {
		if _, err := Load(p); !errors.Is(err, fault.ErrInput) {
			t.Errorf("Load(%s) = %v, want bad input", p, err)
		}
	}
	if _, err := Load(); !errors.Is(err, fault.ErrInput) {
		t.Errorf("Load() = %v, want bad input", err)
	}
}

func TestLoadBenchfmt(t *testing.T) {
	set, err := Load("testdata/gotest.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Kernels(), ","); got != "stock,patched" {
		t.Errorf("kernels %q", got)
	}
	if got := set.Values("64", "patched", "ns/op"); len(got) != 4 || got[0] != 980 {
		t.Errorf("patched ns/op = %v", got)
	}
	s := set.Samples[0]
	if s.Cell != "64" || s.Axes["size"] != "64" || s.Labels["benchmark"] != "Xmit" || s.Rep != 0 || set.Samples[1].Rep != 1 {
		t.Errorf("first sample %+v", s)
	}
	if e := set.Env["stock"]; e == nil || !strings.Contains(e.CPUModel, "i5-6300HQ") {
		t.Errorf("env of stock: %+v", e)
	}
	if m := Describe("MB/s"); m.Better != metric.HigherIsBetter || !m.Rate {
		t.Errorf("Describe(MB/s) = %+v, want a rate, higher is better", m)
	}
	if m := Describe("ns/op"); m.Better != metric.LowerIsBetter {
		t.Errorf("Describe(ns/op) = %+v, want lower is better", m)
	}
}

// Our benchfmt output reads back to the same numbers.
func TestBenchfmtRoundTrip(t *testing.T) {
	set, err := Load(stockPatched(t)...)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBenchfmt(&buf, set); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Unit tx_pps better=higher assume=nothing\n", "Unit lost_pps better=lower assume=nothing\n",
		"\nkernel: patched\n", "\naccel: kvm\n", "\ncpu: Test CPU\n",
		// generator is pktgen-t2 in every sample: a file-level line, not
		// a name part (benchstat's tables stay narrow).
		"\ngenerator: pktgen-t2\n",
		"\nBenchmarkVnetbench/backend=tap 1 450000 tx_pps 225000 tx_pps_thread 900 lost_pps 3.00045e+09 perf.cycles@vhost 450 lost_pps_thread\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("benchfmt output lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "nested:") {
		t.Errorf("no sample is nested, yet the output says nested:\n%s", buf.String())
	}
	path := filepath.Join(t.TempDir(), "out.bench")
	os.WriteFile(path, buf.Bytes(), 0o644)
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// A lab kernel's samples (nested) say so, and it reads back.
	for i := range set.Samples {
		set.Samples[i].Nested = set.Samples[i].Kernel == "patched"
	}
	buf.Reset()
	if err := WriteBenchfmt(&buf, set); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nnested: true\n") || !strings.Contains(buf.String(), "\nnested: false\n") {
		t.Errorf("nested samples: benchfmt lacks nested: true/false:\n%s", buf.String())
	}
	nestedPath := filepath.Join(t.TempDir(), "nested.bench")
	os.WriteFile(nestedPath, buf.Bytes(), 0o644)
	if nb, err := Load(nestedPath); err != nil || !nb.Nested("patched") || nb.Nested("stock") {
		t.Errorf("nested read back: patched %v, stock %v, err %v", nb != nil && nb.Nested("patched"), nb != nil && nb.Nested("stock"), err)
	}
	for _, cell := range set.Cells() {
		// The name leaves out the constant generator axis: cell
		// tap/pktgen-t2 reads back as tap.
		backCell, _, _ := strings.Cut(cell, "/")
		for _, k := range set.Kernels() {
			for _, m := range []metric.Key{"tx_pps", "lost_pps", "tx_pps_thread", "lost_pps_thread", "perf.cycles@vhost"} {
				a, b := set.Values(cell, k, m), back.Values(backCell, k, m)
				if len(a) != len(b) || len(a) != 5 {
					t.Errorf("%s %s %s: %d values, read back %d", cell, k, m, len(a), len(b))
					continue
				}
				for i := range a {
					if math.Abs(a[i]-b[i]) > 1e-9*math.Abs(a[i]) {
						t.Errorf("%s %s %s[%d]: %v, read back %v", cell, k, m, i, a[i], b[i])
					}
				}
			}
		}
	}
}

// benchstat (golang.org/x/perf/cmd/benchstat, required by go.mod) reads
// our benchfmt output and finds the change.
func TestBenchstatReadsBenchfmt(t *testing.T) {
	gobin := testenv.NeedCommand(t, "go", "")
	dir := t.TempDir()
	bin := filepath.Join(dir, "benchstat")
	build := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build benchstat: %v\n%s", err, out)
	}
	set, err := Load(stockPatched(t)...)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBenchfmt(&buf, set); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "results.bench")
	os.WriteFile(in, buf.Bytes(), 0o644)
	out, err := exec.CommandContext(t.Context(), bin, "-col", "kernel", "-filter", ".unit:tx_pps", in).CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	got := string(out)
	// Medians 452k -> 562k: +24.34%, all five of one side below the other.
	for _, want := range []string{"stock", "patched", "tx_pps", "Vnetbench/backend=tap ", "generator: pktgen-t2", "452.0k", "562.0k", "+24.34%", "p=0.008 n=5"} {
		if !strings.Contains(got, want) {
			t.Errorf("benchstat output lacks %q:\n%s", want, got)
		}
	}
}

// Two runs that give one label to different kernels (two builds of one
// release: the same uname -r, another /proc/version, config or module) are
// refused as bad input with a hint to label them; the same kernel in two
// runs (shards, a second session) pools; runs whose env.json predates the
// identity pool as before.
func TestLoadRefusesOneLabelForTwoKernels(t *testing.T) {
	id := func(banner, config, srcversion string) Env {
		return Env{KernelRelease: "6.1.0-41-amd64", ProcVersion: banner, ConfigSHA256: config,
			Modules: map[string]ModuleID{"tun": {State: "loaded", SrcVersion: srcversion}}}
	}
	b1 := "Linux version 6.1.0-41-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)"
	b2 := "Linux version 6.1.0-41-amd64 (me@box) #2 SMP PREEMPT_DYNAMIC Mon Nov 30 10:00:00 UTC 2026"
	a := pktgenSamples("running", "tap", 450000, 451000)
	b := pktgenSamples("running", "tap", 560000, 561000)
	for i := range b {
		b[i].Rep += 2
	}
	for _, tc := range []struct {
		name       string
		envA, envB Env
		want       string // "" = pools
	}{
		{"banner", id(b1, "aa", "X"), id(b2, "aa", "X"), "/proc/version"},
		{"config", id(b1, "aa", "X"), id(b1, "bb", "X"), "kernel config sha256 aa vs bb"},
		{"module", id(b1, "aa", "X"), id(b1, "aa", "Y"), "tun srcversion X vs Y"},
		{"same kernel", id(b1, "aa", "X"), id(b1, "aa", "X"), ""},
		{"no identity", Env{KernelRelease: "6.1.0-41-amd64"}, id(b2, "bb", "Y"), ""},
	} {
		da := writeRun(t, "a-"+strings.ReplaceAll(tc.name, " ", "-"), tc.envA, a...)
		db := writeRun(t, "b-"+strings.ReplaceAll(tc.name, " ", "-"), tc.envB, b...)
		set, err := Load(da, db)
		if tc.want == "" {
			if err != nil || len(set.Samples) != 4 {
				t.Errorf("%s: err %v, want the 4 samples pooled", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--label") ||
			!strings.Contains(err.Error(), `label their kernel "running"`) {
			t.Errorf("%s: err %v, want bad input naming %q and the --label hint", tc.name, err, tc.want)
		}
	}
}

// A lab kernel's column takes the command and overrides of the run, not
// of the lab's inner run: the inner run adds per_patch=false and has no
// --kernel, so a per-patch run's mail said to reproduce it with
// "--set per_patch=true ... --set per_patch=false" and no kernels.
func TestLabEnvTakesTheRunsCommand(t *testing.T) {
	cmd := []string{"vnetbench", "run", "lab-pktgen", "--kernel", "stock=source=debian:6.1", "--set", "per_patch=true", "--seed", "7"}
	env := Env{Accel: "tcg", Scenario: "lab-pktgen", Seed: 7, Set: []string{"per_patch=true"}, Command: cmd,
		Kernels: map[string]*Env{"stock": {KernelRelease: "6.1.0-57-amd64", Scenario: "lab-pktgen", Seed: 7, Set: []string{"per_patch=true", "per_patch=false"}}}}
	set, err := Load(writeRun(t, "perpatch", env, pktgenSamples("stock", "tap", 1)...))
	if err != nil {
		t.Fatal(err)
	}
	e := set.Env["stock"]
	if e == nil || e.KernelRelease != "6.1.0-57-amd64" {
		t.Fatalf("stock's env %+v: not the lab kernel's", e)
	}
	if !slices.Equal(e.Command, cmd) || !slices.Equal(e.Set, []string{"per_patch=true"}) {
		t.Errorf("stock's command %q and overrides %q, want the run's %q and [per_patch=true]", e.Command, e.Set, cmd)
	}
}

// 'vnetbench report runs' (the parent of the run directories) said only
// that runs has no results.jsonl: it names the run directories in it.
func TestLoadParentOfRunsNamesThem(t *testing.T) {
	parent := t.TempDir()
	for _, name := range []string{"lab", "quickstart-1"} {
		if err := os.MkdirAll(filepath.Join(parent, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, name, ResultsFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(parent)
	want := parent + " has no results.jsonl but holds run directories (lab, quickstart-1); pass them, e.g. " + filepath.Join(parent, "*")
	if !errors.Is(err, fault.ErrInput) || fmt.Sprint(err) != want {
		t.Errorf("%v, want bad input %q", err, want)
	}
	_, err = Load(t.TempDir())
	if !errors.Is(err, fault.ErrInput) || !strings.HasSuffix(fmt.Sprint(err), "has no results.jsonl; pass a run directory written by 'vnetbench run'") {
		t.Errorf("empty directory: %v", err)
	}
}

// The same run directory twice is refused, and a copy of a run (the same
// run id, cell, kernel, repetition and start) is counted once: both made
// "median of 4 runs" of a run of 2.
func TestLoadCountsOneMeasurementOnce(t *testing.T) {
	const real = "../../report/testdata/real/quickstart-tcg"
	one, err := Load(real)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(real, real+"/"); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "is given twice") {
		t.Errorf("Load(dir, dir/) = %v, want bad input: given twice", err)
	}
	cp := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(cp, os.DirFS(real)); err != nil {
		t.Fatal(err)
	}
	set, err := Load(real, cp)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Samples) != len(one.Samples) {
		t.Errorf("run and its copy: %d samples, want the run's %d", len(set.Samples), len(one.Samples))
	}
	if !slices.ContainsFunc(set.Warnings, func(w string) bool { return strings.Contains(w, "copies of another input's") }) {
		t.Errorf("warnings %q, want one naming the copies", set.Warnings)
	}
}

// A pinned vhost reads back as pin.vhost, its cell name part as the run
// spelled it ("vhost-pin0", "vhost-unpinned"). WriteBenchfmt writes it
// "vhost=0" where only some cells have the pin (tap cells have no vhost)
// or where it varies; read back as axis "vhost" with a part "0", the
// pinning was lost to report's context and its TAP-beside-TAP+vhost
// rows, and cells no longer matched a run directory's.
func TestBenchfmtRoundTripPin(t *testing.T) {
	sample := func(backend, pin string) Sample {
		s := Sample{Cell: backend + "/pktgen-t1", Kernel: "stock", Axes: map[string]string{"backend": backend, "generator": "pktgen-t1"},
			Metrics: map[metric.Key]float64{"tx_pps": 1}}
		if pin != "" {
			s.Axes["pin.vhost"] = pin
			s.Cell += "/vhost-" + map[bool]string{true: "unpinned", false: "pin" + pin}[pin == "none"]
		}
		return s
	}
	// The cells read back lack the parts every sample shares (the
	// generator; in the second case the backend too).
	for _, c := range []struct {
		samples []Sample
		cells   []string
	}{
		{[]Sample{sample("tap", ""), sample("tap+vhost", "0")}, []string{"tap", "tap+vhost/vhost-pin0"}},
		{[]Sample{sample("tap+vhost", "0"), sample("tap+vhost", "none")}, []string{"vhost-pin0", "vhost-unpinned"}},
		{[]Sample{sample("tap", ""), sample("tap+vhost", "0-1"), sample("tap+vhost", "none")},
			[]string{"tap", "tap+vhost/vhost-pin0-1", "tap+vhost/vhost-unpinned"}},
	} {
		var buf bytes.Buffer
		if err := WriteBenchfmt(&buf, &Set{Samples: c.samples}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "pin.bench")
		os.WriteFile(path, buf.Bytes(), 0o644)
		back, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range back.Samples {
			if want := c.samples[i].Axes["pin.vhost"]; s.Cell != c.cells[i] || s.Axes["pin.vhost"] != want || s.Axes["vhost"] != "" {
				t.Errorf("read back %q %v, want %q with pin.vhost %q; from\n%s", s.Cell, s.Axes, c.cells[i], want, buf.String())
			}
		}
	}
	// Another tool's vhost=on is no pin.
	other := filepath.Join(t.TempDir(), "other.bench")
	os.WriteFile(other, []byte("BenchmarkX/vhost=on 1 5 ns/op\n"), 0o644)
	if set, err := Load(other); err != nil || set.Samples[0].Axes["vhost"] != "on" || set.Samples[0].Cell != "on" {
		t.Errorf("vhost=on: %+v, %v", set, err)
	}
}
