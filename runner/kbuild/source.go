package kbuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/vmimages"
)

// sourceVersionRE is a Debian linux-source package's version: "6.1",
// "6.12" (linux-source-6.1 is the package's name).
var sourceVersionRE = lazyre.New(`^[0-9]{1,2}\.[0-9]{1,3}$`)

// CheckSourceVersion reports what is wrong with a linux-source version
// ("" = nothing).
func CheckSourceVersion(v string) string {
	if !sourceVersionRE().MatchString(v) {
		return fmt.Sprintf("bad Debian linux-source version %q; use a kernel series such as 6.1 (Debian 12's linux-source-6.1)", v)
	}
	return ""
}

// SourceDeps are the programs DebianSource runs.
var SourceDeps = []Dep{
	{Name: "apt-get", Package: "apt"},
	{Name: "dpkg-deb", Package: "dpkg"},
	{Name: "tar", Package: "tar"},
	{Name: "xz", Package: "xz-utils"},
	{Name: "bash", Package: "bash"},
}

// DebianSource returns Debian's linux-source-VERSION (e.g. "6.1") unpacked
// as root/linux-source-VERSION, a plain tree (not a git repository: ~1.5 GB
// for 6.1). The first call fetches the package with apt-get download
// (~140 MB, checked by apt against the archive's signed index) and unpacks
// it; later calls find the tree. Concurrent calls (two runs, two tests)
// take a lock on root/.linux-source-VERSION.lock, and the tree appears
// under its name only once it is complete (unpacked into a temporary
// directory of root, then renamed), so an interrupted fetch leaves
// nothing a later call would take for a tree. log receives progress lines
// (nil = none).
func DebianSource(ctx context.Context, root, version string, log io.Writer) (string, error) {
	if msg := CheckSourceVersion(version); msg != "" {
		return "", fault.Input("%s", msg)
	}
	name := "linux-source-" + version
	dir := filepath.Join(root, name)
	if complete(dir) {
		return dir, nil
	}
	for _, d := range SourceDeps {
		if _, err := proc.LookPath(d.Name); err != nil {
			return "", fault.Capability("fetch %s: %s not found: install %s (a Debian or Ubuntu host), or give tree: a kernel source directory instead of source: debian:%s", name, d.Name, d.Package, version)
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("fetch %s: %w; set VNETBENCH_CACHE to a writable directory", name, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(root, "."+name+".lock"))
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", name, err)
	}
	defer unlock()
	if complete(dir) { // fetched by the holder of the lock
		return dir, nil
	}
	tmp, err := os.MkdirTemp(root, ".unpack-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	logf(log, "fetching Debian's %s (apt-get download, ~140 MB) into %s", name, root)
	deb, err := vmimages.AptDownload(ctx, proc.Real{}, tmp, name)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return "", fault.Capability("%v; run apt-get update (as root) and check that your apt sources carry %s (Debian 12 bookworm does), or give tree: a kernel source directory", err, name)
	}
	logf(log, "unpacking %s (~1.5 GB)", filepath.Base(deb))
	tree := filepath.Join(tmp, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return "", err
	}
	// The .deb holds usr/src/linux-source-VERSION.tar.xz. Fixed argv:
	// paths and names are arguments, never script text.
	unpack := proc.Cmd{Argv: []string{"bash", "-c",
		`set -o pipefail; dpkg-deb --fsys-tarfile "$1" | tar -xO --wildcards "*/$3.tar.xz" | tar -xJ -C "$2"`,
		"unpack", deb, tree, name}}
	if _, err := (proc.Real{}).Run(ctx, unpack); err != nil { // its own process group, killed whole on cancel
		return "", fmt.Errorf("unpack %s: %w; check free space in %s (~1.5 GB) and retry", deb, err, root)
	}
	if !complete(filepath.Join(tree, name)) {
		return "", fmt.Errorf("unpack %s: no %s/Makefile in the package; check that %s is Debian's kernel source package", deb, name, name)
	}
	// The package version (6.1.192-3), beside the tree: module builds
	// match it to linux-headers and linux-image of the same version.
	ver, err := (proc.Real{}).Run(ctx, proc.Cmd{Argv: []string{"dpkg-deb", "-f", deb, "Version"}})
	if err != nil {
		return "", fmt.Errorf("read the version of %s: %w", deb, err)
	}
	if err := os.WriteFile(dir+".version", ver, 0o644); err != nil {
		return "", fmt.Errorf("fetch %s: %w", name, err)
	}
	if err := os.Rename(filepath.Join(tree, name), dir); err != nil {
		return "", fmt.Errorf("fetch %s: %w; remove %s and retry", name, err, dir)
	}
	logf(log, "%s unpacked into %s in %s", name, dir, time.Since(start).Round(time.Second))
	return dir, nil
}

// complete reports whether dir is a whole unpacked tree.
func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "Makefile"))
	return err == nil
}

// lockFile takes an exclusive flock on path, waiting until ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another vnetbench's fetch (%s): %w", path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}
