package runner

import (
	"slices"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// What lab kernels need here: apt-get for a Debian kernel, the build's
// tools and headers for a tree, each missing one a refusal naming the
// kernels, why and the Debian package; the running kernel's cells add
// nothing to them.
func TestLabRefusals(t *testing.T) {
	t.Setenv("VNETBENCH_CACHE", t.TempDir())
	cells := []scenarios.Cell{
		{Kernel: scenarios.Kernel{Label: "deb", Debian: "6.1"}},
		{Kernel: scenarios.Kernel{Label: "b", Tree: "/src/linux"}},
		{Kernel: scenarios.Kernel{Label: "a", Tree: "/src/linux", Build: scenarios.BuildFull}},
		{Kernel: scenarios.Kernel{Label: "running"}},
	}
	missing := map[string]bool{"apt-get": true, "bison": true, "/usr/include/gelf.h": true, "ccache": true}
	look := func(n Needs) Facts {
		f := Facts{Missing: map[string]bool{}}
		for _, d := range n.LabDeps {
			f.Missing[d.Name] = missing[d.Name]
		}
		f.Missing[qemu.DefaultBinary] = true
		return f
	}
	var got []string
	for _, r := range LabRefusals(cells, look) {
		got = append(got, r.String())
	}
	want := []string{
		"run would refuse: qemu-system-x86_64 is not installed: lab VMs run this host's programs; fix: install the Debian package qemu-system-x86 (make deps)",
		"run would refuse: apt-get is not installed: fetching Debian's kernel packages (kernel deb) runs it; fix: install the Debian package apt (make deps)",
		"run would refuse: bison is not installed: building the kernel from source (kernels a, b) runs it; fix: install the Debian package bison (make deps)",
		"run would refuse: /usr/include/gelf.h is missing: building the kernel from source (kernels a, b) needs it; fix: install the Debian package libelf-dev (make deps)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("refusals\n%q\nwant\n%q", got, want)
	}
	if r := LabRefusals(cells[3:], look); len(r) != 0 {
		t.Errorf("the running kernel's cells: %v", r)
	}
}

// A Debian kernel the cache already holds is not fetched: its cells need
// no apt-get or dpkg-deb here, so a host without them is not refused. A
// series (6.1) is cached when one of its ABIs is; apt is not asked.
func TestLabDepsDebianCached(t *testing.T) {
	testenv.CachedDebianKernels(t, "6.1.0-47-amd64")
	testenv.NoAPTPackages(t)
	for _, v := range []string{"6.1", "6.1.0-47", "6.1.0-47-amd64"} {
		cells := []scenarios.Cell{{Kernel: scenarios.Kernel{Label: "deb", Debian: v}}}
		if deps := labDeps(cells); len(deps) != 0 {
			t.Errorf("debian %s, cached: needs %v, want nothing", v, deps)
		}
	}
	for _, v := range []string{"6.12", "6.1.0-48"} {
		cells := []scenarios.Cell{{Kernel: scenarios.Kernel{Label: "deb", Debian: v}}}
		if deps := labDeps(cells); len(deps) != 2 || deps[0].Name != "apt-get" {
			t.Errorf("debian %s, not cached: needs %v, want apt-get and dpkg-deb", v, deps)
		}
	}
}
