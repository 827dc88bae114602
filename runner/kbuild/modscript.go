package kbuild

// build.sh: the commands that rebuild a cache entry's modules from the
// Debian packages, in an empty directory, with the harness's make
// arguments; each module is checked against the hash the harness
// recorded.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/vmimages"
)

type modScript struct {
	b       strings.Builder
	s       ModSpec
	headers string // the headers' KDIR in the script: $W/root/usr/src/linux-headers-RELEASE
}

func newModScript(s ModSpec, sd *side) *modScript {
	ms := &modScript{s: s}
	h := s.Headers
	name := "linux-headers-" + h.Release
	rel, _ := filepath.Rel(h.Root, h.Dir)
	ms.headers = `"$W/root/` + rel + `"`
	common, _ := commonDir(h.Dir)
	crel, _ := filepath.Rel(h.Root, common)
	src := "linux-source-" + s.Series
	w := &ms.b
	fmt.Fprintf(w, "#!/bin/sh\n# Modules %s rebuilt out of tree for Debian's %s (%s %s) from %s %s",
		strings.Join(targetNames(s.Modules), ", "), h.Release, name, h.Version, src, s.Version)
	if n := len(s.Patches); n > 0 {
		fmt.Fprintf(w, " + %d patch(es)", n)
	}
	fmt.Fprintf(w, ",\n# as vnetbench built them. Run it in an empty directory (it needs apt-get, dpkg-deb, git, make and\n# Debian's kernel compiler); each module must come out with the recorded SHA-256.\nset -eu\nexport LC_ALL=C\nW=$(pwd)\n")
	pkgs, _ := headersPkgNames(h)
	args := []string{"apt-get", "download", src + "=" + s.Version}
	for _, p := range pkgs {
		args = append(args, p+"="+h.Version)
	}
	fmt.Fprintf(w, "%s\n", proc.Quote(args))
	fmt.Fprintf(w, "for d in linux-headers-*.deb linux-kbuild-*.deb; do dpkg-deb -x \"$d\" root; done\n")
	fmt.Fprintf(w, "echo 'include ../%s/Makefile' > %s/Makefile\n", filepath.Base(crel), ms.headers)
	fmt.Fprintf(w, "dpkg-deb --fsys-tarfile %s_*.deb | tar -xO ./usr/src/%s.tar.xz | tar -xJ\ncd %s\n", src, src, src)
	var touched []string
	for _, p := range s.Patches {
		touched = union(touched, Files(p.Data))
	}
	var incl []string
	for _, f := range touched {
		if Feeds(f) {
			incl = append(incl, "--include="+f)
		}
	}
	for i, p := range s.Patches {
		eof := fmt.Sprintf("VNETBENCH_PATCH_%d_%.12s", i+1, p.SHA256)
		fmt.Fprintf(w, "# %s\n%s - <<'%s'\n%s\n%s\n", p.Name(), proc.Quote(append([]string{"git", "apply", "--whitespace=nowarn"}, incl...)),
			eof, strings.TrimRight(string(p.Data), "\n"), eof)
	}
	for _, f := range touched {
		if globalHeader(f) {
			fmt.Fprintf(w, "rm -f \"$W/root/%s/%s\"; if [ -e %s ]; then cp %s \"$W/root/%s/%s\"; fi\n", crel, f, proc.Quote([]string{f}), proc.Quote([]string{f}), crel, f)
		}
	}
	return ms
}

// make adds the make of dir's targets.
func (ms *modScript) make(dir string, targets []string) {
	argv := kmakeArgs("KDIR", "$PWD/"+dir, "$PWD", "$W/root", 2)
	argv[2] = ms.headers
	argv[3] = `M="$PWD/` + dir + `"`
	argv[6] = `KCFLAGS="-ffile-prefix-map=$PWD/= -ffile-prefix-map=$W/root/=/"`
	fmt.Fprintf(&ms.b, "%s %s\n", strings.Join(argv, " "), proc.Quote(targets))
}

// check adds the strip and the hash check of module m.
func (ms *modScript) check(m ModTarget, id *vmimages.ModuleID) {
	ko := m.Dir + "/" + m.File
	out := strings.TrimSuffix(ko, ".ko") + ".stripped.ko"
	fmt.Fprintf(&ms.b, "strip --strip-debug -o %s %s\necho '%s  %s' | sha256sum -c -\n", out, ko, id.SHA256, out)
}

func (ms *modScript) String() string { return ms.b.String() }

// headersPkgNames are the packages DebianHeaders unpacked into h.Root,
// read back from it: linux-headers-RELEASE, its -common and linux-kbuild.
func headersPkgNames(h *Headers) ([]string, error) {
	var out []string
	for _, pat := range []string{"usr/src/linux-headers-*", "usr/lib/linux-kbuild-*"} {
		m, err := filepath.Glob(filepath.Join(h.Root, pat))
		if err != nil {
			return nil, err
		}
		for _, p := range m {
			out = append(out, filepath.Base(p))
		}
	}
	return out, nil
}
