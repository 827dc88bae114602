package kbuild

import (
	"os"
	"sort"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
)

// Dep is one thing a kernel build needs on the host: a program in PATH or
// a header file, and the Debian package that has it.
type Dep struct {
	Name    string // program name, or the header's path
	Package string
	Header  bool // Name is a file (a library's header), not a program
	// Optional deps speed the build up (ccache) but are not required.
	Optional bool
}

// Deps are what building a kernel with the harness's config needs (x86-64,
// objtool, an IKCONFIG and a gzip-compressed bzImage): `make deps`
// installs the packages (the Makefile's KBUILD_PACKAGES, kept in step by a
// test).
var Deps = []Dep{
	{Name: "make", Package: "make"},
	{Name: "gcc", Package: "gcc"},
	{Name: "/usr/include/stdio.h", Package: "libc6-dev", Header: true}, // host tools
	{Name: "ld", Package: "binutils"},
	{Name: "flex", Package: "flex"},
	{Name: "bison", Package: "bison"},
	{Name: "bc", Package: "bc"},
	{Name: "perl", Package: "perl"},
	{Name: "gzip", Package: "gzip"},
	{Name: "git", Package: "git"}, // git apply, git worktree
	{Name: "cpio", Package: "cpio"},
	{Name: "/usr/include/gelf.h", Package: "libelf-dev", Header: true},             // objtool
	{Name: "/usr/include/openssl/opensslv.h", Package: "libssl-dev", Header: true}, // certs, sign-file
	{Name: "ccache", Package: "ccache", Optional: true},
}

// MissingDeps returns the required deps that are missing and, separately,
// the missing optional ones.
func MissingDeps() (required, optional []Dep) {
	for _, d := range Deps {
		ok := false
		if d.Header {
			_, err := os.Stat(d.Name)
			ok = err == nil
		} else {
			_, err := proc.LookPath(d.Name)
			ok = err == nil
		}
		if ok {
			continue
		}
		if d.Optional {
			optional = append(optional, d)
		} else {
			required = append(required, d)
		}
	}
	return required, optional
}

// Packages lists the Debian packages of deps, sorted, each once.
func Packages(deps []Dep) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range deps {
		if !seen[d.Package] {
			seen[d.Package] = true
			out = append(out, d.Package)
		}
	}
	sort.Strings(out)
	return out
}

// CheckDeps fails with a capability error naming what is missing and the
// packages that have it.
func CheckDeps() error {
	req, _ := MissingDeps()
	if len(req) == 0 {
		return nil
	}
	var names []string
	for _, d := range req {
		names = append(names, d.Name)
	}
	return fault.Capability("building a kernel needs %s, missing here: apt-get install %s (or make deps)",
		strings.Join(names, ", "), strings.Join(Packages(req), " "))
}

// ModuleDeps are what a module build runs besides Debian's packages (its
// compiler is gcc-12, Debian 12's gcc): make, git apply, cp -al, strip,
// apt-get and dpkg-deb for the packages.
var ModuleDeps = []Dep{
	{Name: "make", Package: "make"},
	{Name: "gcc-12", Package: "gcc-12"},
	{Name: "ld", Package: "binutils"},
	{Name: "strip", Package: "binutils"},
	{Name: "git", Package: "git"},
	{Name: "cp", Package: "coreutils"},
	{Name: "apt-get", Package: "apt"},
	{Name: "apt-cache", Package: "apt"},
	{Name: "dpkg-deb", Package: "dpkg"},
}
