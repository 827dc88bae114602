package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// VnetbenchBinary returns $VNETBENCH_BIN (make e2e and make test set it to
// the binary they built) or builds the main package at cmdDir (relative to
// the test's package, e.g. "../../cmd/vnetbench") into a temporary
// directory. The build is static (CGO_ENABLED=0): a lab VM runs it as /init.
func VnetbenchBinary(tb testing.TB, cmdDir string) string {
	tb.Helper()
	if b := os.Getenv("VNETBENCH_BIN"); b != "" {
		return b
	}
	out := filepath.Join(tb.TempDir(), "vnetbench")
	cmd := exec.Command("go", "build", "-o", out, cmdDir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build vnetbench: %v\n%s", err, b)
	}
	return out
}

// CachedDebianKernels points the harness cache ($VNETBENCH_CACHE) at a new
// directory holding Debian's kernels of releases ("6.1.0-47-amd64") as
// vmimages unpacks a fetched package (an image never booted, an empty
// modules directory): a lab kernel `debian: "6.1"` then resolves, as a
// run checks it before making anything, as on a machine that fetched it,
// whatever this machine's cache and apt know. It returns the cache.
func CachedDebianKernels(tb testing.TB, releases ...string) string {
	tb.Helper()
	cache := tb.TempDir()
	for _, rel := range releases {
		dir := filepath.Join(cache, "kernels", "debian", "linux-image-"+rel+"-unsigned")
		for _, d := range []string{filepath.Join(dir, "lib", "modules", rel), filepath.Join(dir, "boot")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "boot", "vmlinuz-"+rel), []byte("not booted"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Setenv("VNETBENCH_CACHE", cache)
	return cache
}

// NoAPTPackages puts first on $PATH an apt-cache that knows no package,
// so a Debian series that is not cached (CachedDebianKernels) is one apt
// does not know, whatever this machine's package lists hold.
func NoAPTPackages(tb testing.TB) {
	tb.Helper()
	bin := tb.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "apt-cache"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}
