package kbuild

// Debian's linux-headers for out-of-tree module builds: the package of one
// kernel release (linux-headers-6.1.0-57-amd64), the common headers it
// includes and the kbuild tools, fetched at one package version and
// unpacked into the harness cache.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Flavour is the Debian kernel flavour module builds target: the generic
// one, which lab VMs boot (the cloud flavour has no 9p).
const Flavour = "amd64"

// Headers is Debian's linux-headers of one kernel release, unpacked: a
// KDIR for `make -C KDIR M=DIR`.
type Headers struct {
	Release string // "6.1.0-57-amd64"
	Version string // the Debian package version, "6.1.192-3"
	Dir     string // KDIR: ROOT/usr/src/linux-headers-RELEASE
	Root    string // where the three packages are unpacked
}

// Config is the kernel's .config (Debian's).
func (h *Headers) Config() string { return readString(filepath.Join(h.Dir, ".config")) }

// UTSVersion is the kernel's build banner tail ("#1 SMP PREEMPT_DYNAMIC
// Debian 6.1.192-3 (2026-11-26)"), from the headers' generated files.
func (h *Headers) UTSVersion() string {
	for _, f := range []string{"utsversion.h", "compile.h"} {
		s := readString(filepath.Join(h.Dir, "include", "generated", f))
		if m := utsRe().FindStringSubmatch(s); m != nil {
			return m[1]
		}
	}
	return ""
}

var utsRe = lazyre.New(`#define UTS_VERSION "([^"]*)"`)

// HeadersFor finds the Debian kernel release of flavour whose packages
// were built from the same source package version as linux-source-SERIES
// version (its linux-headers-ABI-FLAVOUR has that version), from apt's
// index. It is "" with no error when apt knows none: the versions cannot
// be matched.
func HeadersFor(ctx context.Context, ex proc.Executor, series, version string) (string, error) {
	out, err := ex.Run(ctx, proc.Cmd{Argv: []string{"apt-cache", "pkgnames", "linux-headers-" + series}})
	if err != nil {
		return "", fmt.Errorf("apt-cache pkgnames linux-headers-%s: %w", series, err)
	}
	var names []string
	for _, n := range strings.Fields(string(out)) {
		abi, ok := strings.CutSuffix(strings.TrimPrefix(n, "linux-headers-"), "-"+Flavour)
		if !ok || strings.HasSuffix(abi, "-cloud") || strings.HasSuffix(abi, "-rt") {
			continue
		}
		if a, err := vmimages.ParseDebianABI(abi); err == nil && a.InSeries(series) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	out, err = ex.Run(ctx, proc.Cmd{Argv: append([]string{"apt-cache", "madison"}, names...)})
	if err != nil {
		return "", fmt.Errorf("apt-cache madison: %w", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(l, "|")
		if len(f) >= 2 && strings.TrimSpace(f[1]) == version {
			return strings.TrimPrefix(strings.TrimSpace(f[0]), "linux-headers-"), nil
		}
	}
	return "", nil
}

// DebianHeaders returns linux-headers-RELEASE at package version, with
// the common headers and kbuild tools it depends on (at the same
// version), unpacked under root/linux-headers-RELEASE_VERSION. The first
// call fetches them with apt-get download (~14 MB) and unpacks them into a
// temporary directory renamed when complete; later calls find them. The
// directory holds safefs.OwnFile saying headersOwner: a directory at its
// name that is not complete is removed only with it (a link there is
// neither used nor followed).
func DebianHeaders(ctx context.Context, ex proc.Executor, root, release, version string, log io.Writer) (*Headers, error) {
	name := "linux-headers-" + release
	h := &Headers{Release: release, Version: version, Root: filepath.Join(root, name+"_"+version)}
	h.Dir = filepath.Join(h.Root, "usr", "src", name)
	if h.complete() {
		return h, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("fetch %s: %w; set VNETBENCH_CACHE to a writable directory", name, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(root, "."+name+".lock"))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", name, err)
	}
	defer unlock()
	if h.complete() {
		return h, nil
	}
	start := time.Now()
	pkgs, err := headersPackages(ctx, ex, name, version)
	if err != nil {
		return nil, err
	}
	logf(log, "fetching %s (apt-get download: %s)", name, strings.Join(pkgs, " "))
	tmp, err := os.MkdirTemp(root, ".unpack-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	td, err := safefs.Open(tmp)
	if err != nil {
		return nil, err
	}
	defer td.Close()
	if err := safefs.MkdirOwn(td, "root", headersOwner); err != nil {
		return nil, err
	}
	args := []string{"apt-get", "download", "-q"}
	for _, p := range pkgs {
		args = append(args, p+"="+version)
	}
	if out, err := ex.Run(ctx, proc.Cmd{Argv: args, Dir: tmp}); err != nil {
		return nil, fault.Capability("apt-get download %s: %v: %s; run apt-get update (as root): Debian's archive must still carry version %s", strings.Join(pkgs, " "), err, fault.Clip(strings.TrimSpace(string(out))), version)
	}
	unpacked := filepath.Join(tmp, "root")
	for _, p := range pkgs {
		debs, _ := filepath.Glob(filepath.Join(tmp, p+"_*.deb"))
		if len(debs) != 1 {
			return nil, fmt.Errorf("apt-get download %s: want one .deb, got %d", p, len(debs))
		}
		if out, err := ex.Run(ctx, proc.Cmd{Argv: []string{"dpkg-deb", "-x", debs[0], unpacked}}); err != nil {
			return nil, fmt.Errorf("dpkg-deb -x %s: %w: %s", filepath.Base(debs[0]), err, fault.Clip(strings.TrimSpace(string(out))))
		}
	}
	if err := relocateHeaders(unpacked, name); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(unpacked, ".complete"), []byte(version+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := replaceOwn(root, filepath.Base(h.Root), unpacked, headersOwner); err != nil {
		return nil, fmt.Errorf("fetch %s: %w", name, err)
	}
	logf(log, "%s %s unpacked into %s in %s", name, version, h.Root, time.Since(start).Round(time.Second))
	return h, nil
}

// headersOwner is what unpacked headers' safefs.OwnFile says.
const headersOwner = "vnetbench kbuild linux-headers"

// complete reports whether the headers are unpacked: a directory, not a
// link, with the .complete written last. One unpacked by an older
// vnetbench, without safefs.OwnFile, is complete too.
func (h *Headers) complete() bool {
	fi, err := os.Lstat(h.Root)
	if err != nil || !fi.IsDir() {
		return false
	}
	fi, err = os.Lstat(filepath.Join(h.Root, ".complete"))
	return err == nil && fi.Mode().IsRegular()
}

// replaceOwn renames the directory from to name under root, removing what
// is at name first only when its safefs.OwnFile says owner (an earlier
// attempt of vnetbench's); anything else there is left and refused.
func replaceOwn(root, name, from, owner string) error {
	d, err := safefs.Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := safefs.RemoveOwnDir(d, name, owner); err != nil {
		return err
	}
	return os.Rename(from, d.Join(name))
}

// headersPackages are linux-headers-RELEASE and what it depends on of the
// same source: its -common headers and the kbuild tools.
func headersPackages(ctx context.Context, ex proc.Executor, name, version string) ([]string, error) {
	out, err := ex.Run(ctx, proc.Cmd{Argv: []string{"apt-cache", "show", "--no-all-versions", name + "=" + version}})
	if err != nil {
		return nil, fault.Capability("apt-cache show %s=%s: %v; run apt-get update (as root)", name, version, err)
	}
	pkgs := []string{name}
	for _, l := range strings.Split(string(out), "\n") {
		deps, ok := strings.CutPrefix(l, "Depends:")
		if !ok {
			continue
		}
		for _, d := range strings.Split(deps, ",") {
			p, _, _ := strings.Cut(strings.TrimSpace(d), " ")
			if strings.HasPrefix(p, "linux-headers-") || strings.HasPrefix(p, "linux-kbuild-") {
				pkgs = append(pkgs, p)
			}
		}
		break
	}
	if len(pkgs) != 3 {
		return nil, fmt.Errorf("%s %s depends on %v; want its -common headers and linux-kbuild", name, version, pkgs[1:])
	}
	return pkgs, nil
}

// relocateHeaders points the unpacked headers' Makefile, which includes
// /usr/src/linux-headers-ABI-common/Makefile, at the common headers
// unpacked beside it, by a relative path (its scripts and tools links are
// relative already).
func relocateHeaders(root, name string) error {
	mk := filepath.Join(root, "usr", "src", name, "Makefile")
	b, err := os.ReadFile(mk)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	inc, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "include /usr/src/")
	if !ok || strings.ContainsAny(inc, " \n") || !strings.HasSuffix(inc, "/Makefile") {
		return fmt.Errorf("%s: unexpected Makefile %q (Debian's includes /usr/src/linux-headers-ABI-common/Makefile)", name, fault.Clip(strings.TrimSpace(string(b))))
	}
	if !exists(filepath.Join(root, "usr", "src", inc)) {
		return fmt.Errorf("%s: %s is not in the packages", name, inc)
	}
	// Relative to the KDIR, where make runs: the headers stay usable
	// once renamed into the cache, and in a copy.
	return os.WriteFile(mk, []byte("include ../"+inc+"\n"), 0o644)
}

// errNoVersion: a linux-source tree without a recorded package version.
var errNoVersion = errors.New("no recorded package version")

// SourceVersion is the Debian package version of a linux-source tree
// DebianSource unpacked (recorded beside it at the fetch).
func SourceVersion(tree string) (string, error) {
	b, err := os.ReadFile(tree + ".version")
	if err != nil {
		return "", fmt.Errorf("%s: %w (it was fetched by an older vnetbench; remove it to fetch it again)", tree, errNoVersion)
	}
	return strings.TrimSpace(string(b)), nil
}
