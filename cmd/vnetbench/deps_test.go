package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/kbuild"
)

// makeDeps returns the Debian packages `make deps` installs: the words of
// the Makefile's DEB_PACKAGES and KBUILD_PACKAGES.
func makeDeps(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, v := range []string{"DEB_PACKAGES", "KBUILD_PACKAGES"} {
		m := regexp.MustCompile(`(?m)^` + v + `\s*:=(.*)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("Makefile has no %s := line", v)
		}
		pkgs = append(pkgs, strings.Fields(string(m[1]))...)
	}
	return pkgs
}

// Every program a workload, the runner or a kernel build declares comes
// from a package make deps installs: a fresh machine has nothing else
// (socat, the vsock workload's tool, was missing while the machine it was
// written on had it installed by hand).
func TestMakeDepsInstallsDeclaredTools(t *testing.T) {
	have := makeDeps(t)
	want := map[string]string{} // package -> who needs it
	for _, tool := range runner.AllTools() {
		want[tool.Package] = "tool " + tool.Name
	}
	for _, d := range slices.Concat(kbuild.Deps, kbuild.SourceDeps, kbuild.ModuleDeps) {
		want[d.Package] = "kernel builds' " + d.Name
	}
	if len(want) < 8 {
		t.Fatalf("only %d declared packages: the registry did not load", len(want))
	}
	for pkg, who := range want {
		if pkg == "" {
			t.Errorf("%s declares no Debian package", who)
			continue
		}
		if !slices.Contains(have, pkg) {
			t.Errorf("%s needs Debian package %s, which the Makefile's DEB_PACKAGES/KBUILD_PACKAGES (make deps) lacks", who, pkg)
		}
	}
}
