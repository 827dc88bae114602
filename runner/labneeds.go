package runner

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// LabDep is a program or header file the lab kernels need on this host,
// to fetch or build them, and what for.
type LabDep struct {
	kbuild.Dep
	// For says why and for which kernels: "fetching Debian's kernel
	// packages (kernel stock)".
	For string
}

// labDeps are what the lab kernels of cells need here before any lab
// VM boots: apt-get and dpkg-deb for a Debian kernel (vmimages fetches
// it) unless the cache holds it (labvm.DebianCached), Debian's linux-source fetched (kbuild.SourceDeps) unless the
// cache holds it, and the build's tools: kbuild.ModuleDeps for modules
// rebuilt for Debian's kernel (build: auto finds out at run time whether
// the series needs the whole kernel; its compiler, Debian's gcc-12, keys
// the module cache, so it is needed even for cached modules), kbuild.Deps
// for a whole kernel (tree:, build: full). Each dep once, for the first
// need that names it.
func labDeps(cells []scenarios.Cell) []LabDep {
	type need struct {
		why    string
		deps   []kbuild.Dep
		labels []string
	}
	var needs []*need
	add := func(why string, deps []kbuild.Dep, label string) {
		i := slices.IndexFunc(needs, func(n *need) bool { return n.why == why })
		if i < 0 {
			needs = append(needs, &need{why: why, deps: deps})
			i = len(needs) - 1
		}
		needs[i].labels = append(needs[i].labels, label)
	}
	seen := map[string]bool{}
	for i := range cells {
		k := cells[i].Kernel
		if k.Running() || seen[k.Label] {
			continue
		}
		seen[k.Label] = true
		switch {
		case k.Debian != "" && !labvm.DebianCached(k.Debian, ""):
			add("fetching Debian's kernel packages", aptDeps, k.Label)
		case k.Source != "" && !sourceFetched(k.Source):
			add("fetching Debian's linux-source", kbuild.SourceDeps, k.Label)
		}
		switch {
		case k.Source != "" && k.Build != scenarios.BuildFull:
			add("rebuilding modules for Debian's kernel", kbuild.ModuleDeps, k.Label)
		case k.Builds():
			add("building the kernel from source", kbuild.Deps, k.Label)
		}
	}
	var out []LabDep
	for _, n := range needs {
		slices.Sort(n.labels) // plan's cells and the dry run's come in different orders
		which := "kernel " + n.labels[0]
		if len(n.labels) > 1 {
			which = "kernels " + strings.Join(n.labels, ", ")
		}
		for _, d := range n.deps {
			if !d.Optional && !slices.ContainsFunc(out, func(l LabDep) bool { return l.Name == d.Name }) {
				out = append(out, LabDep{d, n.why + " (" + which + ")"})
			}
		}
	}
	return out
}

// aptDeps are what vmimages runs to fetch a Debian kernel package.
var aptDeps = []kbuild.Dep{{Name: "apt-get", Package: "apt"}, {Name: "dpkg-deb", Package: "dpkg"}}

// sourceFetched reports whether the cache holds the linux-source a
// source: spec names (debian:6.1); another spec is not fetched.
func sourceFetched(src string) bool {
	v, ok := strings.CutPrefix(src, "debian:")
	return ok && exists(filepath.Join(vmimages.CacheDir(), "src", "linux-source-"+v, "Makefile"))
}

// labRefusals are what run refuses before any lab VM boots: the lab
// kernels' fetch and build deps (LabDeps), and the tools and guest
// programs of their cells, which each lab VM runs from this host's root
// (shared read-only) as the running kernel's cells do.
func (n Needs) labRefusals(f Facts) []Refusal {
	var out []Refusal
	for _, t := range n.Tools {
		if f.Missing[t] {
			out = append(out, Refusal{t + " is not installed: lab VMs run this host's programs", "install the Debian package " + debPackage(t) + " (make deps)"})
		}
	}
	out = append(out, n.guestRefusals(func(p string) bool { return !f.Missing[p] })...)
	for _, d := range n.LabDeps {
		if !f.Missing[d.Name] {
			continue
		}
		why := d.Name + " is not installed: " + d.For + " runs it"
		if d.Header {
			why = d.Name + " is missing: " + d.For + " needs it"
		}
		out = append(out, Refusal{why, "install the Debian package " + d.Package + " (make deps)"})
	}
	return out
}
