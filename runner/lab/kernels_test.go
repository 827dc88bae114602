package lab

import (
	"context"
	"errors"
	"fmt"
	"github.com/vnetbench/vnetbench/runner"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/internal/fakeqemu"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/scenarios"
)

// fakeBuilder records the specs it resolves and builds one kernel per
// plan (or fails with err; resolveErr fails Resolve).
type fakeBuilder struct {
	specs      []kbuild.Spec
	built      []string
	config     map[string]string // label -> final config hash
	err        error
	resolveErr error
}

func (f *fakeBuilder) Resolve(_ context.Context, s kbuild.Spec) (*kbuild.Plan, error) {
	if f.resolveErr != nil {
		return nil, f.resolveErr
	}
	f.specs = append(f.specs, s)
	return &kbuild.Plan{Spec: s}, nil
}

func (f *fakeBuilder) BuildPlans(_ context.Context, plans []*kbuild.Plan) ([]*kbuild.Kernel, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []*kbuild.Kernel
	for _, p := range plans {
		s := p.Spec
		f.built = append(f.built, s.Label)
		cfg := f.config[s.Label]
		if cfg == "" {
			cfg = "c0ffee"
		}
		out = append(out, &kbuild.Kernel{Image: "/cache/" + s.Label + "/bzImage", Modules: "/cache/" + s.Label + "/lib/modules/6.1.192",
			Identity: results.KernelBuild{Release: "6.1.192", Tree: s.Tree, Fragment: "f", ConfigSHA256: cfg, Key: s.Label}})
	}
	return out, nil
}

// buildKernels resolves and builds, as Run does around its lock.
func buildKernels(ctx context.Context, cells []scenarios.Cell, in Inner) ([]scenarios.Cell, map[string]*results.KernelBuild, []string, error) {
	kp, err := resolveKernels(ctx, cells, in, runner.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	return kp.build(ctx, cells, runner.Options{})
}

// Kernels named by source tree are built all at once, in the scenario's
// label order, before anything runs; their cells then boot the built
// image; other kernels are left alone; the identities go into env.json.
func TestBuildKernels(t *testing.T) {
	cells := []scenarios.Cell{
		{Name: "tap", Kernel: scenarios.Kernel{Label: "patched", Tree: "/src/linux", Patches: []string{"/p/1.patch"}}},
		{Name: "tap", Kernel: scenarios.Kernel{Label: "debian", Debian: "6.1"}},
		{Name: "tap", Kernel: scenarios.Kernel{Label: "stock", Tree: "/src/linux"}},
		{Name: "tap+vhost", Kernel: scenarios.Kernel{Label: "patched", Tree: "/src/linux", Patches: []string{"/p/1.patch"}}},
	}
	fb := &fakeBuilder{}
	out, ids, warns, err := buildKernels(t.Context(), cells, Inner{Labels: []string{"stock", "patched", "debian"}, Builder: fb})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range fb.specs {
		labels = append(labels, s.Label)
	}
	if !slices.Equal(labels, []string{"stock", "patched"}) || !slices.Equal(fb.built, labels) {
		t.Errorf("resolved %v, built %v; want stock then patched", labels, fb.built)
	}
	if !slices.Equal(fb.specs[1].Patches, []string{"/p/1.patch"}) || fb.specs[1].Tree != "/src/linux" {
		t.Errorf("patched spec %+v", fb.specs[1])
	}
	for _, c := range out {
		switch c.Kernel.Label {
		case "debian":
			if c.Kernel.Image != "" {
				t.Errorf("the Debian kernel got an image: %+v", c.Kernel)
			}
		default:
			if c.Kernel.Image != "/cache/"+c.Kernel.Label+"/bzImage" || !strings.HasSuffix(c.Kernel.Modules, "/lib/modules/6.1.192") {
				t.Errorf("cell %s/%s: %+v", c.Name, c.Kernel.Label, c.Kernel)
			}
		}
	}
	if cells[0].Kernel.Image != "" {
		t.Error("buildKernels changed its input")
	}
	if len(ids) != 2 || ids["patched"].Key != "patched" || len(warns) != 0 {
		t.Errorf("ids %v, warnings %v", ids, warns)
	}

	dir := t.TempDir()
	if err := results.WriteEnv(dir, results.Env{Run: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := recordBuilds(dir, ids); err != nil {
		t.Fatal(err)
	}
	env, err := results.ReadEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	if env.Run != "r" || env.Kernels["stock"].Build == nil || env.Kernels["patched"].Build.Tree != "/src/linux" {
		t.Errorf("env.json after recordBuilds: %+v", env)
	}

	// Configs that differ between kernels of one tree are a warning.
	fb = &fakeBuilder{config: map[string]string{"patched": "beef"}}
	if _, _, warns, _ = buildKernels(t.Context(), cells, Inner{Builder: fb}); len(warns) != 1 || !strings.Contains(warns[0], "final .config differs") {
		t.Errorf("warnings %v", warns)
	}
	// A failed build is the run's error; no tree kernel, no build.
	fb = &fakeBuilder{err: errors.New("boom")}
	if _, _, _, err := buildKernels(t.Context(), cells, Inner{Builder: fb}); err == nil || err.Error() != "boom" {
		t.Errorf("err %v", err)
	}
	fb = &fakeBuilder{}
	if _, _, _, err := buildKernels(t.Context(), cells[1:2], Inner{Builder: fb}); err != nil || fb.specs != nil || fb.built != nil {
		t.Errorf("a scenario without trees resolved %v, built %v (%v)", fb.specs, fb.built, err)
	}
}

// A kernel that does not build (or a patch that does not apply) ends a
// lab run before it has a run directory: nothing half-done. A spec that is
// bad input fails before the host lock is even asked for.
func TestRunLabBuildFailureLeavesNoRunDir(t *testing.T) {
	tmp := t.TempDir()
	dir := tmp + "/run"
	tree := tmp + "/linux" // a directory: the fake builder builds nothing from it
	os.Mkdir(tree, 0o755)
	cells := []scenarios.Cell{{Name: "tap", Kernel: scenarios.Kernel{Label: "patched", Tree: tree}}}
	started := false
	bad := &kbuild.BuildError{Label: "patched", Log: "/x.log", Err: errors.New("make exited 2")}
	_, err := Run(t.Context(), cells, runner.Options{Dir: dir, LockPath: tmp + "/lock",
		Started: func() { started = true }}, Inner{Scenario: "s", Labels: []string{"patched"}, Builder: &fakeBuilder{err: bad}})
	if !errors.Is(err, bad) {
		t.Fatalf("err %v", err)
	}
	if started {
		t.Error("the run was reported started")
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Error("a run directory exists after the failed build")
	}
	// A lock held by another run does not delay a bad spec.
	held, err := runner.AcquireLock(tmp + "/lock")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	bad2 := errors.New("kernel patched: /src/linux is not a Linux kernel tree")
	_, err = Run(t.Context(), cells, runner.Options{Dir: dir, LockPath: tmp + "/lock", LockWait: time.Minute},
		Inner{Scenario: "s", Labels: []string{"patched"}, Builder: &fakeBuilder{resolveErr: bad2}})
	if !errors.Is(err, bad2) {
		t.Errorf("err %v, want the resolve error at once", err)
	}
}

// A kernel with source: builds the fetched tree; series:NAME patches are
// the shipped series' files, written once into the harness cache (the
// same path for every kernel and run), other patches are passed as given.
func TestBuildKernelsFromSource(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("VNETBENCH_CACHE", cache)
	cells := []scenarios.Cell{
		{Name: "tap", Kernel: scenarios.Kernel{Label: "stock", Source: "debian:6.1"}},
		{Name: "tap", Kernel: scenarios.Kernel{Label: "patched", Source: "debian:6.1", Patches: []string{"series:tun-backpressure", "/p/2.patch"}}},
	}
	var fetched []string
	fb := &fakeBuilder{}
	in := Inner{Labels: []string{"stock", "patched"}, Builder: fb, FetchSource: func(_ context.Context, v string) (string, error) {
		fetched = append(fetched, v)
		return "/cache/src/linux-source-" + v, nil
	}}
	out, _, _, err := buildKernels(t.Context(), cells, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fetched, []string{"6.1", "6.1"}) || len(fb.specs) != 2 {
		t.Fatalf("fetched %v, specs %+v", fetched, fb.specs)
	}
	st, pa := fb.specs[0], fb.specs[1]
	if st.Tree != "/cache/src/linux-source-6.1" || pa.Tree != st.Tree || len(st.Patches) != 0 || len(pa.Patches) != 2 || pa.Patches[1] != "/p/2.patch" {
		t.Errorf("specs %+v", fb.specs)
	}
	want, err := scenarios.SeriesPatches("tun-backpressure")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pa.Patches[0])
	if err != nil || string(b) != string(want[0].Data) || !strings.HasPrefix(pa.Patches[0], cache+"/series/tun-backpressure-") {
		t.Errorf("series patch %s: %v (%d bytes, want the shipped %d)", pa.Patches[0], err, len(b), len(want[0].Data))
	}
	for _, c := range out {
		if c.Kernel.Image != "/cache/"+c.Kernel.Label+"/bzImage" {
			t.Errorf("cell of %s boots %q", c.Kernel.Label, c.Kernel.Image)
		}
	}
	// A second run finds the series written: same path, nothing left over.
	fb2 := &fakeBuilder{}
	in.Labels, in.Builder = nil, fb2
	if _, _, _, err := buildKernels(t.Context(), cells[1:], in); err != nil || fb2.specs[0].Patches[0] != pa.Patches[0] {
		t.Errorf("second run: %v, %+v", err, fb2.specs)
	}
	if ents, _ := os.ReadDir(cache + "/series"); len(ents) != 1 {
		t.Errorf("cache/series holds %d entries, want 1", len(ents))
	}
	// A fetch that fails names the kernel.
	in.FetchSource = func(context.Context, string) (string, error) {
		return "", errors.New("apt-get download linux-source-6.1: no network")
	}
	if _, _, _, err := buildKernels(t.Context(), cells, in); err == nil || !strings.Contains(err.Error(), "kernel stock: apt-get download") {
		t.Errorf("failed fetch: %v", err)
	}
}

// A lab kernel its lab VM would refuse is refused before the run makes
// anything, by run, its dry run (VMArgs) and plan alike: files that are
// no bzImage and modules directory, a Debian series that apt does not
// know (here an apt-cache that knows nothing). A bzImage and its modules
// directory pass, as do a cached Debian series and a Debian ABI, which
// only a fetch could refuse.
func TestKernelsRefusedFirst(t *testing.T) {
	dir := t.TempDir()
	img, mods, err := fakeqemu.Kernel(dir, "6.1.0-test")
	if err != nil {
		t.Fatal(err)
	}
	cachedDebian61(t)
	testenv.NoAPTPackages(t)
	for _, tc := range []struct{ spec, want string }{
		{"image: /nonexist", "kernel k: kernel image /nonexist: no such file or directory"},
		{"image: " + dir, "kernel image " + dir + " is not an x86 bzImage"},
		{"image: " + img + ", modules: " + img, "modules directory " + img + " does not exist"},
		{"image: " + img + ", modules: " + mods, ""},
		{`debian: "9.9"`, "kernel k: lab: no Debian 9.9 kernel (linux-image-9.9*-amd64-unsigned) cached or known to apt; run apt-get update"},
		{`debian: "6.1"`, ""},
		{`debian: "6.1.0-999"`, ""},
	} {
		cells := loadCells(t, "kernels: [{label: k, "+tc.spec+"}]\nbackend: tap\ngenerator: {trafgen: {duration: 1s}}\n")
		_, _, verr := VMArgs("k", cells, Host{CPUs: []int{0, 1}, MemMiB: 4096})
		run := filepath.Join(t.TempDir(), "run") // a passing case makes it
		o := runner.Options{Dir: run, Seed: 1, Exec: &proc.Fake{}, LockPath: filepath.Join(dir, "lock")}
		_, rerr := Run(t.Context(), cells, o, Inner{Scenario: "x", Labels: []string{"k"}, Boot: func(context.Context, labvm.Config) (*labvm.Result, error) {
			return nil, errors.New("booted")
		}})
		if tc.want == "" {
			if verr != nil {
				t.Errorf("%s: VMArgs: %v", tc.spec, verr)
			}
			continue
		}
		for what, err := range map[string]error{"VMArgs": verr, "Run": rerr} {
			if !errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("%s: %s: %v, want bad input saying %q", tc.spec, what, err, tc.want)
			}
		}
		if _, err := os.Stat(run); err == nil {
			t.Errorf("%s: the refused run made %s", tc.spec, run)
		}
	}
}

// A -o the run cannot use (a file, a directory that is not empty, a
// --resume of nothing) is bad input before the kernels are resolved and
// built: it was found only when the run directory was created, after
// minutes of building, and a file there was exit 1.
func TestRunLabBadRunDirRefusedFirst(t *testing.T) {
	tmp := t.TempDir()
	file, full := filepath.Join(tmp, "file"), filepath.Join(tmp, "full")
	os.WriteFile(file, []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(full, "old"), 0o755)
	cells := []scenarios.Cell{{Name: "tap", Kernel: scenarios.Kernel{Label: "patched", Tree: "/src/linux"}}}
	for _, tc := range []struct {
		dir    string
		resume bool
		want   string
	}{
		{file, false, "is a file, not a directory"},
		{full, false, "is not empty (it holds old)"},
		{filepath.Join(tmp, "none"), true, "does not exist; --resume continues"},
		{full, true, "no results.jsonl"},
	} {
		fb := &fakeBuilder{}
		_, err := Run(t.Context(), cells, runner.Options{Dir: tc.dir, Resume: tc.resume, LockPath: tmp + "/lock"},
			Inner{Scenario: "s", Labels: []string{"patched"}, Builder: fb})
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("-o %s (resume %v): err %v, want bad input with %q", tc.dir, tc.resume, err, tc.want)
		}
		if fb.specs != nil || fb.built != nil {
			t.Errorf("-o %s (resume %v): resolved %v, built %v before refusing it", tc.dir, tc.resume, fb.specs, fb.built)
		}
	}
}

// A kernel to build whose own files are not there (a tree that does not
// exist, patches matching no file, a config fragment that cannot be read)
// is bad input before the kernels are resolved: a source: kernel's
// patches were read only after Debian's linux-source was fetched and
// unpacked, and plan showed a tree that does not exist as a full build.
func TestBuildInputsRefusedFirst(t *testing.T) {
	tmp := t.TempDir()
	tree := filepath.Join(tmp, "linux")
	os.Mkdir(tree, 0o755)
	for _, tc := range []struct {
		k    scenarios.Kernel
		want string
	}{
		{scenarios.Kernel{Label: "p", Tree: filepath.Join(tmp, "none")}, "kernel p: tree " + filepath.Join(tmp, "none") + " is not a directory (no such file or directory)"},
		{scenarios.Kernel{Label: "p", Source: "debian:6.1", Patches: []string{filepath.Join(tmp, "v7", "*.patch")}}, "kernel p: patch pattern " + filepath.Join(tmp, "v7", "*.patch") + " matches no file"},
		{scenarios.Kernel{Label: "p", Tree: tree, Config: filepath.Join(tmp, "none.config")}, "kernel p: config fragment " + filepath.Join(tmp, "none.config")},
	} {
		fb := &fakeBuilder{}
		cells := []scenarios.Cell{{Name: "tap", Kernel: tc.k}}
		_, err := Run(t.Context(), cells, runner.Options{Dir: filepath.Join(tmp, "run"), LockPath: tmp + "/lock"},
			Inner{Scenario: "s", Labels: []string{"p"}, Builder: fb, FetchSource: func(context.Context, string) (string, error) {
				t.Errorf("%+v: fetched the source before refusing it", tc.k)
				return tree, nil
			}})
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%+v: %v, want bad input with %q", tc.k, err, tc.want)
		}
		if fb.specs != nil {
			t.Errorf("%+v: resolved %v before refusing it", tc.k, fb.specs)
		}
		if _, _, verr := VMArgs("p", cells, Host{}); !errors.Is(verr, fault.ErrInput) {
			t.Errorf("%+v: VMArgs (plan, run --dry-run): %v, want it refused", tc.k, verr)
		}
	}
}
