package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// fakeModBuilder is a fakeBuilder that also plans module builds: the
// group qualifies with module tun unless full says why not.
type fakeModBuilder struct {
	fakeBuilder
	full   string
	groups []kbuild.ModGroup
	mu     sync.Mutex
	mods   []string // labels whose modules were built
}

func (f *fakeModBuilder) PlanModules(_ context.Context, g kbuild.ModGroup) (*kbuild.ModPlan, error) {
	f.groups = append(f.groups, g)
	mp := &kbuild.ModPlan{Series: g.Series, Version: "6.1.192-3", Release: "6.1.0-57-amd64", Full: f.full,
		Headers: &kbuild.Headers{Release: "6.1.0-57-amd64", Version: "6.1.192-3"}, Image: "/cache/debian/vmlinuz", ModulesDir: "/cache/debian/lib/modules/6.1.0-57-amd64"}
	if f.full == "" {
		mp.Modules = []kbuild.ModTarget{{Name: "tun", File: "tun.ko", Dir: "drivers/net"}}
	}
	return mp, nil
}

func (f *fakeModBuilder) BuildModules(_ context.Context, s kbuild.ModSpec) (*kbuild.ModBuild, error) {
	f.mu.Lock()
	f.mods = append(f.mods, s.Label)
	f.mu.Unlock()
	return &kbuild.ModBuild{Label: s.Label, Release: s.Headers.Release, Headers: "linux-headers-6.1.0-57-amd64 6.1.192-3", Key: "k-" + s.Label, Seconds: 12,
		Modules: []vmimages.ModuleID{{Name: "tun", File: "/cache/mod/" + s.Label + "/tun.ko", SrcVersion: "SV-" + s.Label, SHA256: "sha-" + s.Label}}}, nil
}

// sourceCells are stock and patched from Debian's linux-source-6.1 (the
// patch a real file) and a Debian kernel, which builds nothing.
func sourceCells(t *testing.T, build string) ([]scenarios.Cell, Inner) {
	patch := filepath.Join(t.TempDir(), "0001.patch")
	os.WriteFile(patch, []byte("Subject: [PATCH] tun: x\n\n---\ndiff --git a/drivers/net/tun.c b/drivers/net/tun.c\n--- a/drivers/net/tun.c\n+++ b/drivers/net/tun.c\n@@ -1 +1 @@\n-a\n+b\n"), 0o644)
	cells := []scenarios.Cell{
		{Name: "tap", Kernel: scenarios.Kernel{Label: "stock", Source: "debian:6.1", Build: build}},
		{Name: "tap", Kernel: scenarios.Kernel{Label: "patched", Source: "debian:6.1", Patches: []string{patch}, Build: build}},
		{Name: "tap", Kernel: scenarios.Kernel{Label: "debian", Debian: "6.1"}},
	}
	return cells, Inner{Labels: []string{"stock", "patched", "debian"}, FetchSource: func(_ context.Context, v string) (string, error) {
		return "/cache/src/linux-source-" + v, nil
	}}
}

// Kernels of one Debian source whose series qualify are module builds:
// both get the modules (stock without the series), boot Debian's kernel
// with them in place of its own and record the mode, the modules and
// their identities; nothing is built whole.
func TestBuildKernelsModules(t *testing.T) {
	cells, in := sourceCells(t, "")
	fb := &fakeModBuilder{}
	in.Builder = fb
	kp, err := resolveKernels(t.Context(), cells, in, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, ids, _, err := kp.build(t.Context(), cells, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.groups) != 1 || fb.groups[0].Tree != "/cache/src/linux-source-6.1" || len(fb.groups[0].Kernels) != 2 || len(fb.groups[0].Kernels[1].Patches) != 1 {
		t.Fatalf("groups %+v", fb.groups)
	}
	slices.Sort(fb.mods)
	if fb.specs != nil || !slices.Equal(fb.mods, []string{"patched", "stock"}) {
		t.Errorf("full builds %v, module builds %v", fb.specs, fb.mods)
	}
	for _, c := range out[:2] {
		if c.Kernel.Image != "/cache/debian/vmlinuz" || c.Kernel.Modules != "/cache/debian/lib/modules/6.1.0-57-amd64" {
			t.Errorf("%s boots %+v", c.Kernel.Label, c.Kernel)
		}
	}
	pa := ids["patched"]
	if pa.Mode != results.ModeModules || len(pa.Modules) != 1 || pa.Modules[0].SrcVersion != "SV-patched" || len(pa.Patches) != 1 ||
		pa.Debian != "linux-image-6.1.0-57-amd64-unsigned 6.1.192-3" || ids["stock"].Modules[0].SHA256 != "sha-stock" {
		t.Errorf("identities %+v, %+v", ids["stock"], pa)
	}
	if !strings.Contains(pa.Describe(), "6.1.0-57-amd64 (Debian's kernel) with modules tun rebuilt from /cache/src/linux-source-6.1 + 1 patch (tun: x)") {
		t.Errorf("describe: %s", pa.Describe())
	}
	if !slices.Equal(kp.replace["patched"], []string{"/cache/mod/patched/tun.ko"}) {
		t.Errorf("replace %v", kp.replace)
	}
}

// A series that does not qualify gives the group the full build, and
// env.json says why; build: modules then is bad input, and build: full
// asks nothing.
func TestBuildKernelsModulesFallBack(t *testing.T) {
	cells, in := sourceCells(t, "")
	fb := &fakeModBuilder{full: "net/sched/sch_generic.c is built into Debian's 6.1.0-57-amd64"}
	in.Builder = fb
	kp, err := resolveKernels(t.Context(), cells, in, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, ids, _, err := kp.build(t.Context(), cells, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.specs) != 2 || fb.mods != nil || ids["patched"].FullReason != fb.full || ids["patched"].Mode != "" {
		t.Errorf("specs %v, module builds %v, identity %+v", fb.specs, fb.mods, ids["patched"])
	}

	cells, in = sourceCells(t, scenarios.BuildModules)
	in.Builder = fb
	if _, err := resolveKernels(t.Context(), cells, in, runner.Options{}); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "build: modules, but net/sched/sch_generic.c") {
		t.Errorf("build: modules not qualifying: %v", err)
	}

	cells, in = sourceCells(t, scenarios.BuildFull)
	fb = &fakeModBuilder{}
	in.Builder = fb
	if _, err := resolveKernels(t.Context(), cells, in, runner.Options{}); err != nil || fb.groups != nil || len(fb.specs) != 2 {
		t.Errorf("build: full: %v, planned %v, specs %d", err, fb.groups, len(fb.specs))
	}
}

// reproduce.sh holds each module-built kernel's build.sh.
func TestWriteBuildScript(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "cache")
	os.MkdirAll(mod, 0o755)
	os.WriteFile(filepath.Join(mod, "build.sh"), []byte("#!/bin/sh\nmake tun.ko\n"), 0o755)
	ids := map[string]*results.KernelBuild{
		"patched": {Release: "6.1.0-57-amd64", Mode: results.ModeModules, Modules: []results.RebuiltModule{{Name: "tun", File: filepath.Join(mod, "tun.ko")}}},
		"full":    {Release: "6.1.192"},
	}
	if err := writeBuildScript(dir, []string{"full", "patched"}, ids); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, results.ReproduceFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# kernel patched: 6.1.0-57-amd64 (Debian's kernel) with modules tun", "mkdir -p kernel-patched", "sh -eu <<'VNETBENCH_BUILD_patched'\n#!/bin/sh\nmake tun.ko\nVNETBENCH_BUILD_patched\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("reproduce.sh lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "kernel full") {
		t.Errorf("a full build in reproduce.sh:\n%s", b)
	}
}

// Before the source is fetched, a series that touches only C sources is
// predicted a module build, one that touches a header or a Makefile the
// full build.
func TestPredictMode(t *testing.T) {
	for _, c := range []struct {
		touched []string
		mode    string
	}{
		{[]string{"drivers/net/tun.c", "Documentation/x.rst"}, scenarios.BuildModules},
		{[]string{"drivers/net/tun.c", "include/linux/ptr_ring.h"}, scenarios.BuildFull},
		{[]string{"drivers/net/Makefile"}, scenarios.BuildFull},
		{[]string{"Documentation/x.rst"}, scenarios.BuildFull},
	} {
		if m, why := predictMode(c.touched); m != c.mode || why == "" {
			t.Errorf("%v: %s (%s), want %s", c.touched, m, why, c.mode)
		}
	}
}
