package kbuild

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/vmimages"
)

// modSeries reads a test series of testdata/modseries.
func modSeries(t *testing.T, name string) []Patch {
	t.Helper()
	ps, err := ReadPatches([]string{filepath.Join("testdata", "modseries", name+".patch")})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// needModuleTools skips (fails under CI) without what a module build
// runs.
func needModuleTools(t *testing.T) {
	t.Helper()
	for _, d := range ModuleDeps {
		testenv.NeedCommand(t, d.Name, d.Package)
	}
}

// TestModuleBuildLinuxSource is the module build end to end on Debian's
// packages, into the harness cache (where the lab e2e and README's
// lab-pktgen find the same entries): linux-source-6.1, the
// linux-headers and linux-image of its version, the shipped
// tun-backpressure series decided to touch module tun only, tun.ko
// rebuilt stock and patched; then how four more series are decided.
func TestModuleBuildLinuxSource(t *testing.T) {
	testenv.SkipIfShort(t, "fetches Debian's linux-source, headers and kernel and builds modules")
	needModuleTools(t)
	tree := debianSource(t)
	b := &Builder{Dir: filepath.Join(vmimages.CacheDir(), "kbuild"), Log: testWriter{t}}
	patched, err := ReadPatches([]string{tunPatchFile})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mp, err := b.PlanModules(t.Context(), ModGroup{Series: "6.1", Tree: tree, Kernels: []ModKernel{{Label: "stock"}, {Label: "patched", Patches: patched}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan: %s, %v, full %q (%s)", mp.Release, mp.Modules, mp.Full, time.Since(start).Round(time.Second))
	if mp.Full != "" || len(mp.Modules) != 1 || mp.Modules[0] != (ModTarget{Name: "tun", File: "tun.ko", Dir: "drivers/net"}) {
		t.Fatalf("tun-backpressure: modules %v, full %q; want tun only", mp.Modules, mp.Full)
	}
	var builds []*ModBuild
	for _, k := range []ModKernel{{Label: "stock"}, {Label: "patched", Patches: patched}} {
		mb, err := b.BuildModules(t.Context(), ModSpec{Label: k.Label, Tree: tree, Series: "6.1", Version: mp.Version, Headers: mp.Headers, Modules: mp.Modules, Patches: k.Patches})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v (cached %v, %.0fs)", k.Label, mb.Modules, mb.Cached, mb.Seconds)
		builds = append(builds, mb)
	}
	pkg, err := vmimages.ReadModuleID(filepath.Join(mp.ModulesDir, "kernel", "drivers", "net", "tun.ko"))
	if err != nil {
		t.Fatal(err)
	}
	st, pa := builds[0].Modules[0], builds[1].Modules[0]
	if st.SrcVersion == "" || pa.SrcVersion == "" || st.SrcVersion == pa.SrcVersion || pkg.SrcVersion != "" {
		t.Errorf("srcversion: stock %q, patched %q, packaged %q; want two different ones and none packaged", st.SrcVersion, pa.SrcVersion, pkg.SrcVersion)
	}
	if st.BuildID == "" || st.BuildID == pa.BuildID || st.BuildID == pkg.BuildID || pa.BuildID == pkg.BuildID {
		t.Errorf("build IDs: stock %s, patched %s, packaged %s; want three different", st.BuildID, pa.BuildID, pkg.BuildID)
	}
	for _, id := range []vmimages.ModuleID{st, pa} {
		if !strings.HasPrefix(id.Vermagic, mp.Release+" ") || id.Vermagic != pkg.Vermagic {
			t.Errorf("vermagic %q, packaged %q", id.Vermagic, pkg.Vermagic)
		}
	}
	script := readString(builds[1].Script)
	for _, want := range []string{"apt-get download linux-source-6.1=" + mp.Version, "git apply", "M=\"$PWD/drivers/net\"", pa.SHA256 + "  drivers/net/tun.stripped.ko"} {
		if !strings.Contains(script, want) {
			t.Errorf("build.sh lacks %q:\n%s", want, script)
		}
	}
	decideSeries(t, b, tree, mp)
}

// decideSeries decides the test series of testdata/modseries: a header
// whose built-in includer compiles to the same code both ways, a built-in
// source, a header nearly everything includes; with
// VNETBENCH_E2E_SERIES=1 also a header whose built-in includer changes
// code (its decision takes as long as the first one's: minutes of a
// loaded 2-core machine; sameCode's own test covers the comparison).
func decideSeries(t *testing.T, b *Builder, tree string, mp *ModPlan) {
	type series struct {
		series   string
		full     string // a part of Full; "" = modules
		modules  []string
		compared []string
	}
	cases := []series{
		{"skb-array-helper", "", []string{"ipvtap", "macvtap", "tap", "tun", "vhost_net"}, []string{"net/sched/sch_generic.o"}},
		{"sch-generic-overlimit", "net/sched/sch_generic.c is built into Debian's " + mp.Release, nil, nil},
		{"ptr-ring-helper", "sources (through include/net/page_pool.h, then include/linux/skbuff.h, then", nil, nil},
	}
	if os.Getenv("VNETBENCH_E2E_SERIES") == "1" {
		cases = append(cases, series{"skb-array-produce", "built-in net/sched/sch_generic.o includes a touched header and compiles to different code", nil, nil})
	}
	for _, tc := range cases {
		start := time.Now()
		d, err := b.Decide(t.Context(), tree, mp.Headers, mp.ModulesDir, modSeries(t, tc.series), testWriter{t})
		if err != nil {
			t.Fatalf("%s: %v", tc.series, err)
		}
		t.Logf("%s (%s): modules %v, compared %v, full %q", tc.series, time.Since(start).Round(time.Second), d.Names(), d.Compared, d.Full)
		if !strings.Contains(d.Full, tc.full) || (tc.full == "") != (d.Full == "") {
			t.Errorf("%s: full %q, want %q", tc.series, d.Full, tc.full)
		}
		for _, m := range tc.modules {
			if !slices.Contains(d.Names(), m) {
				t.Errorf("%s: modules %v lack %s", tc.series, d.Names(), m)
			}
		}
		if tc.full == "" && !slices.Equal(d.Compared, tc.compared) {
			t.Errorf("%s: compared %v, want %v", tc.series, d.Compared, tc.compared)
		}
	}
}
