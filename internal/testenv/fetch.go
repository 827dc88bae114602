package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
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

// DebianLinuxSource returns Debian's linux-source-VERSION (e.g. "6.1")
// unpacked as root/linux-source-VERSION (a plain tree, not a git
// repository: ~1.5 GB for 6.1), fetching the package with apt-get download
// (~140 MB) and unpacking it the first time. It skips (fails under CI)
// when apt-get, dpkg-deb, tar or xz is missing or apt cannot fetch the
// package. The tree appears under its name only once it is complete, so an
// interrupted unpack leaves nothing a later call would take for a tree.
func DebianLinuxSource(tb testing.TB, root, version string) string {
	tb.Helper()
	name := "linux-source-" + version
	dir := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err == nil {
		return dir
	}
	for _, tool := range []string{"apt-get", "dpkg-deb", "tar", "xz"} {
		NeedCommand(tb, tool, "")
	}
	dl := tb.TempDir()
	get := exec.Command("apt-get", "download", "-q", name)
	get.Dir = dl
	if out, err := get.CombinedOutput(); err != nil {
		Skipf(tb, "cannot fetch %s: %v: %s", name, err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(dl, name+"_*.deb"))
	if len(debs) != 1 {
		tb.Fatalf("apt-get download %s: want one .deb, got %v", name, debs)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, ".unpack-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	// The .deb holds usr/src/linux-source-VERSION.tar.xz. Fixed argv,
	// paths and names as arguments.
	unpack := exec.Command("bash", "-c",
		`set -o pipefail; dpkg-deb --fsys-tarfile "$1" | tar -xO --wildcards "*/$3.tar.xz" | tar -xJ -C "$2"`,
		"unpack", debs[0], tmp, name)
	if out, err := unpack.CombinedOutput(); err != nil {
		tb.Fatalf("unpack %s: %v: %s", debs[0], err, out)
	}
	if err := os.Rename(filepath.Join(tmp, name), dir); err != nil {
		// Another test process may have unpacked it meanwhile.
		if _, serr := os.Stat(filepath.Join(dir, "Makefile")); serr != nil {
			tb.Fatal(err)
		}
	}
	tb.Logf("%s unpacked into %s in %s", name, dir, time.Since(start).Round(time.Second))
	return dir
}
