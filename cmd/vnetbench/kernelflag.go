package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/scenarios"
)

// kernelFlags is the repeatable --kernel LABEL=SPEC: kernels that replace
// the scenario's (the column axis).
type kernelFlags []string

func (k *kernelFlags) String() string { return strings.Join(*k, " ") }

func (k *kernelFlags) Set(v string) error {
	*k = append(*k, v)
	return nil
}

// addKernelFlag registers --kernel on fs.
func addKernelFlag(fs *flag.FlagSet) *kernelFlags {
	var k kernelFlags
	fs.Var(&k, "kernel", "`LABEL=SPEC`: a kernel under test, replacing the scenario's kernels (repeat for more columns); SPEC is debian:6.1, image=PATH[,modules=DIR], tree=PATH[,ref=REF][,patches=GLOB]...[,config=FRAGMENT], source=debian:6.1[,patches=series:NAME]...[,build=auto|full|modules] or running")
	return &k
}

// apply replaces s's kernels with the flags' (none given: unchanged).
// Paths are taken relative to the working directory, "~/" as $HOME.
func (k kernelFlags) apply(s *scenarios.Scenario) error {
	if len(k) == 0 {
		return nil
	}
	var ks []scenarios.Kernel
	for _, v := range k {
		kn, err := scenarios.ParseKernelSpec(v)
		if err != nil {
			return err
		}
		kn.Image, kn.Modules, kn.Tree, kn.Config = absPath(kn.Image), absPath(kn.Modules), absPath(kn.Tree), absPath(kn.Config)
		for i, p := range kn.Patches {
			if _, ok := scenarios.SeriesName(p); !ok { // series:NAME is no path
				kn.Patches[i] = absPath(p)
			}
		}
		ks = append(ks, kn)
	}
	return s.SetKernels(ks)
}

// applyLabel names the running kernel label (--label NAME): the
// scenario's (or --kernel's) kernel that is the running one takes the
// label, so a bare-metal A/B across a reboot gives each boot its own
// column. A scenario whose kernels all boot in lab VMs is bad input.
func applyLabel(s *scenarios.Scenario, label string) error {
	if label == "" {
		return nil
	}
	if msg := scenarios.CheckLabel(label); msg != "" {
		return usageErrorf("--label: %s", msg)
	}
	ks := append([]scenarios.Kernel(nil), s.Kernels...)
	n := 0
	for i := range ks {
		if ks[i].Running() {
			ks[i].Label = label
			n++
		}
	}
	if n == 0 {
		return usageErrorf("--label %s names the running kernel, but every kernel of %s boots in a lab VM; label those in the scenario or with --kernel LABEL=SPEC", label, s.Name)
	}
	if err := s.SetKernels(ks); err != nil {
		return usageErrorf("--label %s: %v", label, err)
	}
	return nil
}

// args returns the flags as arguments again (for the run inside a lab VM,
// which must know the same labels).
func (k kernelFlags) args() []string {
	var out []string
	for _, v := range k {
		out = append(out, "--kernel", v)
	}
	return out
}

// absPath makes p absolute, expanding a leading ~/; "" and "-" (standard
// output) stay as they are.
func absPath(p string) string {
	if p == "" || p == "-" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, rest)
		}
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
