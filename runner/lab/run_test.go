package lab

import (
	"context"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/runner"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload/pktgen"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// loadCells loads a scenario's cells in its order (seed 1).
// cachedDebian61 gives the test a harness cache holding Debian's 6.1 amd64
// kernel (testenv.CachedDebianKernels), so `debian: "6.1"` passes the
// run's check of its lab kernels whatever this machine has fetched.
func cachedDebian61(t testing.TB) { testenv.CachedDebianKernels(t, "6.1.0-47-amd64") }

func loadCells(t testing.TB, yaml string) []scenarios.Cell {
	t.Helper()
	s, err := scenarios.Load("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return scenarios.Order(s.Expand(), 1)
}

// twoKernelCells are the cells of a lab run of two Debian kernels, stock
// and patched, 4 samples each (tap and tap+vhost, 2 repetitions), with
// Debian's 6.1 in the harness cache (cachedDebian61).
func twoKernelCells(t testing.TB) []scenarios.Cell {
	t.Helper()
	cachedDebian61(t)
	return loadCells(t, `
kernels:
  - {label: stock, debian: "6.1"}
  - {label: patched, debian: "6.1"}
backend: [tap, tap+vhost]
generator: {trafgen: {duration: 1s}}
repetitions: 2
`)
}

func TestInside(t *testing.T) {
	cells := []scenarios.Cell{
		{Name: "a", Kernel: scenarios.Kernel{Label: "running"}},
		{Name: "a", Kernel: scenarios.Kernel{Label: "stock", Debian: "6.1"}},
		{Name: "a", Kernel: scenarios.Kernel{Label: "patched", Image: "/k", Modules: "/m"}},
	}
	in := Inside(cells, "patched")
	if len(in) != 1 || !in[0].Kernel.Running() || in[0].Kernel.Label != "patched" {
		t.Errorf("inside lab: %+v", in)
	}
}

// The inner run's samples land in the outer run under the label, with
// artifact paths re-rooted and the inner env under kernels.
func TestImportLab(t *testing.T) {
	outer := t.TempDir()
	w, err := results.Create(outer, results.Env{Run: "outer"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	inner := filepath.Join(outer, results.LabDir("stock"))
	iw, err := results.Create(inner, results.Env{Run: "inner", KernelRelease: "6.1.0-47-amd64", Extra: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(inner, "artifacts", "c", "stock", "0"), 0o755)
	os.WriteFile(filepath.Join(inner, "artifacts", "c", "stock", "0", "pktgen-vnbt0.txt"), []byte("x"), 0o644)
	iw.Append(results.Sample{Cell: "tap/pktgen-t1", Kernel: "stock", Start: time.Unix(0, 0), WindowS: 1,
		Metrics: map[metric.Key]float64{"tx_pps": 4000}, Artifacts: []string{"artifacts/c/stock/0/pktgen-vnbt0.txt"}})
	iw.Close()
	got, err := importLab(w, outer, inner, "stock", nil, "")
	if err != nil || len(got) != 1 {
		t.Fatalf("import: %d, %v", len(got), err)
	}
	if again, _ := importLab(w, outer, inner, "stock", nil, ""); len(again) != 0 {
		t.Errorf("second import appended %d", len(again))
	}
	set, err := results.Load(outer)
	if err != nil || len(set.Samples) != 1 {
		t.Fatalf("%v %v", set, err)
	}
	s := set.Samples[0]
	if s.Kernel != "stock" || s.Artifacts[0] != "lab/stock/run/artifacts/c/stock/0/pktgen-vnbt0.txt" {
		t.Errorf("sample %+v", s)
	}
	env, _ := results.ReadEnv(outer)
	if env.Kernels["stock"] == nil || env.Kernels["stock"].KernelRelease != "6.1.0-47-amd64" {
		t.Errorf("env kernels %+v", env.Kernels)
	}
}

// The lab wrote its run directory: a link at results.jsonl or env.json
// stops the import, and artifacts that are links, lie behind a linked
// directory or leave the directory ("../") are not imported (before, all
// were taken as they were).
func TestImportLabUntrusted(t *testing.T) {
	outer := t.TempDir()
	w, err := results.Create(outer, results.Env{Run: "outer"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	inner := filepath.Join(outer, results.LabDir("stock"))
	iw, err := results.Create(inner, results.Env{Run: "inner"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(inner, "artifacts", "c")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("x"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, "link.txt"))
	os.Symlink("/etc", filepath.Join(inner, "artifacts", "etc"))
	arts := []string{"artifacts/c/ok.txt", "artifacts/c/link.txt", "artifacts/etc/passwd", "../../../../etc/passwd", "/etc/passwd"}
	iw.Append(results.Sample{Cell: "tap/x", Kernel: "stock", Start: time.Unix(0, 0), WindowS: 1, Metrics: map[metric.Key]float64{"tx_pps": 1}, Artifacts: arts})
	iw.Close()
	got, err := importLab(w, outer, inner, "stock", nil, "")
	if err != nil || len(got) != 1 {
		t.Fatalf("import: %d, %v", len(got), err)
	}
	if want := []string{"lab/stock/run/artifacts/c/ok.txt"}; !slices.Equal(got[0].Artifacts, want) || len(got[0].Warnings) != 4 {
		t.Errorf("artifacts %q (want %q), warnings %q", got[0].Artifacts, want, got[0].Warnings)
	}

	// results.jsonl as a link.
	victim := filepath.Join(t.TempDir(), "results.jsonl")
	os.Rename(filepath.Join(inner, results.ResultsFile), victim)
	os.Symlink(victim, filepath.Join(inner, results.ResultsFile))
	if _, err := importLab(w, outer, inner, "stock", nil, ""); err == nil || !strings.Contains(err.Error(), "not a plain file") {
		t.Errorf("import through a linked results.jsonl: %v", err)
	}
}

func TestEnvDifferences(t *testing.T) {
	a := &results.Env{CPUModel: "EPYC", CPUs: 2, Accel: "tcg"}
	b := &results.Env{CPUModel: "EPYC", CPUs: 2, Accel: "tcg"}
	if w := EnvDifferences(map[string]*results.Env{"stock": a, "patched": b}); len(w) != 0 {
		t.Errorf("same envs: %v", w)
	}
	b.CPUs = 4
	w := EnvDifferences(map[string]*results.Env{"stock": a, "patched": b})
	if len(w) != 1 || !strings.Contains(w[0], `cpus "4" vs "2"`) && !strings.Contains(w[0], `cpus "2" vs "4"`) {
		t.Errorf("got %v", w)
	}
}

// The lab VM has no network: the lab config carries the nested guests'
// Debian kernels for the host to fetch first, once each, plus the cells'
// boot deadline.
func TestLabConfigPrefetch(t *testing.T) {
	lk := scenarios.Kernel{Label: "stock", Debian: "6.1"}
	cells := []scenarios.Cell{
		{Name: "tap", Kernel: lk, Timeouts: scenarios.Timeouts{Boot: 9 * time.Minute}},
		{Name: "tap+vhost", Kernel: lk},
		{Name: "deb", Kernel: lk, Guest: scenarios.Guest{Kernel: scenarios.Kernel{Debian: "6.1.0-47-cloud-amd64"}}},
		{Name: "img", Kernel: lk, Guest: scenarios.Guest{Kernel: scenarios.Kernel{Image: "/srv/bzImage"}}},
	}
	c := labConfigT(t, "stock", cells, runner.Options{Dir: "/run/x"}, Inner{Binary: "/bin/vnb"}, []string{"run"})
	want := []labvm.Kernel{{Debian: vmimages.DefaultDebianFlavour}, {Debian: "6.1.0-47-cloud-amd64"}}
	if !reflect.DeepEqual(c.Prefetch, want) {
		t.Errorf("Prefetch = %+v, want %+v", c.Prefetch, want)
	}
	if c.Kernel.Debian != "6.1" || c.Label != "stock" || c.RunDir != "/run/x" || c.Binary != "/bin/vnb" || c.Timeouts.Boot != 9*time.Minute {
		t.Errorf("config %+v", c)
	}
	// A lab kernel installed on the host: the inner run finds its
	// /boot image on the shared root, nothing to fetch.
	hk := scenarios.Kernel{Label: "host", Image: "/boot/vmlinuz-6.1.0-47-amd64"}
	if p := labPrefetch([]scenarios.Cell{{Kernel: hk}}); len(p) != 0 {
		t.Errorf("prefetch for a /boot lab kernel: %+v", p)
	}
}

// pktgen script mode's kernel tree and a guest kernel given by path (its
// image's directory, its modules) are shared into the lab (the lab's host
// root hides /root and /home under tmpfs), once each, and not again
// within a share (the modules under the image's directory).
func TestLabConfigShares(t *testing.T) {
	lk := scenarios.Kernel{Label: "stock", Debian: "6.1"}
	script := func(dir string) scenarios.Generator {
		return scenarios.Generator{Kind: "pktgen", Config: &pktgen.Config{Mode: "script", ScriptDir: dir}}
	}
	cells := []scenarios.Cell{
		{Name: "a", Kernel: lk, Generator: script("/root/linux")},
		{Name: "b", Kernel: lk, Generator: script("/root/linux")},
		{Name: "c", Kernel: lk, Generator: scenarios.Generator{Kind: "pktgen", Config: &pktgen.Config{Mode: "simple"}}},
		{Name: "d", Kernel: lk, Generator: script("/home/u/src/linux-6.1")},
		{Name: "e", Kernel: lk, Guest: scenarios.Guest{Kernel: scenarios.Kernel{Image: "/home/u/k/bzImage", Modules: "/home/u/k/lib/modules/6.18.0"}}},
		{Name: "f", Kernel: lk, Guest: scenarios.Guest{Kernel: scenarios.Kernel{Image: "/home/u/k/bzImage", Modules: "/home/u/k/lib/modules/6.18.0"}}},
		{Name: "g", Kernel: lk, Guest: scenarios.Guest{Kernel: scenarios.Kernel{Debian: "6.12"}}},
	}
	c := labConfigT(t, "stock", cells, runner.Options{Dir: "/run/x"}, Inner{}, []string{"run"})
	if want := []string{"/root/linux", "/home/u/src/linux-6.1", "/home/u/k"}; !reflect.DeepEqual(c.Shares, want) {
		t.Errorf("Shares = %q, want %q", c.Shares, want)
	}
}

// Labs run in the scenario's kernel order (the report's column order),
// not the shuffled cell order; labels it does not list follow.
// README's lab command, `vnetbench run lab-pktgen -o runs/lab`: the lab VM
// runs the inner command in the run directory, so the inner -o must be
// absolute (a relative one was once taken twice, the inner runs wrote into
// runs/lab/runs/lab/lab/LABEL/run and the outer run reported 0 samples).
// Every inner sample comes back, and the progress counts each one (not
// [0/8] with an ETA after both labs finished).
func TestRunLabInnerDirs(t *testing.T) {
	cells := twoKernelCells(t)
	tmp := t.TempDir()
	// cmd makes -o absolute where it parses it (Run refuses a
	// relative one: TestRunRefusesRelativeDir).
	rel := filepath.Join(tmp, "runs", "lab")
	var innerDirs []string
	var mu sync.Mutex // the labs may boot side by side (as this host holds them)
	boot := func(_ context.Context, c labvm.Config) (*labvm.Result, error) {
		// As the lab does: the inner command runs with the run directory
		// (absolute, at the same path) as its working directory.
		runDir, err := filepath.Abs(c.RunDir)
		if err != nil {
			return nil, err
		}
		o := c.Args[slices.Index(c.Args, "-o")+1]
		if !filepath.IsAbs(o) {
			o = filepath.Join(runDir, o)
		}
		mu.Lock()
		innerDirs = append(innerDirs, o)
		mu.Unlock()
		w, err := results.Create(o, results.Env{Run: "inner-" + c.Label, KernelRelease: "6.1.0-47-amd64"})
		if err != nil {
			return nil, err
		}
		defer w.Close()
		for _, cell := range Inside(cells, c.Label) {
			if err := w.Append(results.Sample{Cell: cell.Name, Rep: cell.Rep, Kernel: c.Label, Start: time.Unix(0, 0), WindowS: 1,
				Metrics: map[metric.Key]float64{"tx_pps": 1000}}); err != nil {
				return nil, err
			}
		}
		return &labvm.Result{}, nil
	}
	var prog []runner.Progress
	o := runner.Options{Dir: rel, Seed: 1, Exec: &proc.Fake{}, LockPath: filepath.Join(tmp, "lock"),
		Progress: func(p runner.Progress) { prog = append(prog, p) }}
	sum, err := Run(t.Context(), cells, o, Inner{Scenario: "lab-pktgen", Labels: []string{"stock", "patched"}, Boot: boot})
	if err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(tmp, "runs", "lab")
	want := []string{filepath.Join(abs, "lab", "patched", "run"), filepath.Join(abs, "lab", "stock", "run")}
	if slices.Sort(innerDirs); !slices.Equal(innerDirs, want) {
		t.Errorf("inner runs wrote into %q, want %q", innerDirs, want)
	}
	if sum.Samples != 8 || sum.Dir != rel {
		t.Errorf("summary: %d samples in %s, want 8 in %s", sum.Samples, sum.Dir, rel)
	}
	set, err := results.Load(rel)
	if err != nil || len(set.Samples) != 8 {
		t.Fatalf("outer run: %v, %v; want 8 samples", set, err)
	}
	if last := prog[len(prog)-1]; last.Done != 8 || last.Total != 8 || last.Sample == nil {
		t.Errorf("last progress %+v, want 8/8 with its sample", last)
	}
	var steps []int
	for _, p := range prog[1:] { // [0] is Started
		steps = append(steps, p.Done)
	}
	if !slices.Equal(steps, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("progress steps %v, want one per sample", steps)
	}

	// --resume of the finished run: every sample is a skip, counted.
	prog = nil
	o.Resume = true
	innerDirs = nil
	sum, err = Run(t.Context(), cells, o, Inner{Scenario: "lab-pktgen", Labels: []string{"stock", "patched"}, Boot: boot})
	if err != nil || sum.Skipped != 8 || sum.Samples != 0 || len(innerDirs) != 0 {
		t.Errorf("resume: %+v, %v, labs booted %v", sum, err, innerDirs)
	}
	if last := prog[len(prog)-1]; last.Done != 8 || !last.Skipped {
		t.Errorf("resume: last progress %+v", last)
	}
}

// TestLabModulesOfWorkloads: a lab VM loads the lab's own modules and
// those the registered workloads declare (pktgen's feature, vsock's
// vhost_vsock), each once.
func TestLabModulesOfWorkloads(t *testing.T) {
	got := labModules()
	for _, m := range append(slices.Clone(labvm.LabModules), "pktgen", "vhost_vsock") {
		if n := len(slices.DeleteFunc(slices.Clone(got), func(x string) bool { return x != m })); n != 1 {
			t.Errorf("%s appears %d times in %v, want once", m, n, got)
		}
	}
}
