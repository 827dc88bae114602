package kbuild

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

// fakeSourceDeb builds a linux-source-6.1 .deb as Debian's is laid out
// (usr/src/linux-source-6.1.tar.xz holding linux-source-6.1/) and puts an
// apt-get in front of PATH whose download copies it into the working
// directory and counts its calls in the returned file.
func fakeSourceDeb(t *testing.T) (calls string) {
	t.Helper()
	for _, tool := range []string{"dpkg-deb", "tar", "xz", "bash"} {
		testenv.NeedCommand(t, tool, "")
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src", "linux-source-6.1")
	pkg := filepath.Join(tmp, "pkg")
	for _, d := range []string{src, filepath.Join(pkg, "DEBIAN"), filepath.Join(pkg, "usr", "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(src, "Makefile"), "VERSION = 6\nPATCHLEVEL = 1\n")
	write(filepath.Join(pkg, "DEBIAN", "control"), "Package: linux-source-6.1\nVersion: 6.1.192-1\nArchitecture: all\nMaintainer: t <t@example.invalid>\nDescription: test\n")
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v: %s", name, args, err, out)
		}
	}
	run("tar", "-cJf", filepath.Join(pkg, "usr", "src", "linux-source-6.1.tar.xz"), "-C", filepath.Join(tmp, "src"), "linux-source-6.1")
	deb := filepath.Join(tmp, "linux-source-6.1_6.1.192-1_all.deb")
	run("dpkg-deb", "--build", "--root-owner-group", pkg, deb)
	bin := filepath.Join(tmp, "bin")
	calls = filepath.Join(tmp, "calls")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$*\" >> '" + calls + "'\n[ \"$1 $3\" = \"download linux-source-6.1\" ] || { echo 'E: Unable to locate package' \"$3\" >&2; exit 100; }\ncp '" + deb + "' .\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return calls
}

// DebianSource fetches and unpacks the package once, under a lock: two
// concurrent callers get the same complete tree, apt-get runs once, and
// nothing temporary is left; a later call finds the tree without apt-get.
func TestDebianSource(t *testing.T) {
	calls := fakeSourceDeb(t)
	root := filepath.Join(t.TempDir(), "src")
	var wg sync.WaitGroup
	dirs, errs := make([]string, 2), make([]error, 2)
	for i := range dirs {
		wg.Go(func() { dirs[i], errs[i] = DebianSource(t.Context(), root, "6.1", nil) })
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != filepath.Join(root, "linux-source-6.1") {
			t.Fatalf("call %d: %q, %v", i, dirs[i], errs[i])
		}
	}
	if b, err := os.ReadFile(filepath.Join(dirs[0], "Makefile")); err != nil || !strings.Contains(string(b), "PATCHLEVEL = 1") {
		t.Errorf("tree Makefile: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "download") != 1 {
		t.Errorf("apt-get calls:\n%s", b)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".unpack-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	os.Remove(calls)
	if d, err := DebianSource(t.Context(), root, "6.1", nil); err != nil || d != dirs[0] {
		t.Errorf("cached: %q, %v", d, err)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Errorf("apt-get ran for a tree already there")
	}
}

// What goes wrong is said with what to do: a bad version is bad input, a
// package apt cannot fetch or a missing tool is the host's, and a failed
// fetch leaves no tree.
func TestDebianSourceErrors(t *testing.T) {
	fakeSourceDeb(t)
	root := t.TempDir()
	if _, err := DebianSource(t.Context(), root, "6.1.0-47", nil); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "such as 6.1") {
		t.Errorf("bad version: %v", err)
	}
	_, err := DebianSource(t.Context(), root, "6.99", nil)
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "Unable to locate package linux-source-6.99") || !strings.Contains(err.Error(), "run apt-get update") {
		t.Errorf("unknown package: %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 || ents[0].Name() != ".linux-source-6.99.lock" {
		t.Errorf("a failed fetch left %v", ents)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := DebianSource(t.Context(), root, "6.1", nil); !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "apt-get not found: install apt") {
		t.Errorf("no apt-get: %v", err)
	}
}
