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

// parse is the flags' kernels, their paths taken relative to the
// working directory and "~/" as $HOME (none given: nil, the scenario's).
func (k kernelFlags) parse() ([]scenarios.Kernel, error) {
	var ks []scenarios.Kernel
	for _, v := range k {
		kn, err := scenarios.ParseKernelSpec(v)
		if err != nil {
			return nil, err
		}
		kn.Image, kn.Modules, kn.Tree, kn.Config = absPath(kn.Image), absPath(kn.Modules), absPath(kn.Tree), absPath(kn.Config)
		for i, p := range kn.Patches {
			if _, ok := scenarios.SeriesName(p); !ok { // series:NAME is no path
				kn.Patches[i] = absPath(p)
			}
		}
		ks = append(ks, kn)
	}
	return ks, nil
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
