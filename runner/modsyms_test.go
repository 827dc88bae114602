package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ulikunitz/xz"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
)

// The loaded modules (a real /proc/modules of a Debian 6.1 lab VM) are
// found in a modules directory laid out as Debian's, names with '-' or
// '_' alike; a .ko.xz is decompressed for perf's build-id cache.
func TestLoadedModuleFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"kernel/net/core/pktgen.ko":         []byte("\x7fELF pktgen"),
		"kernel/drivers/net/tun.ko":         []byte("\x7fELF tun"),
		"kernel/drivers/vhost/vhost_net.ko": []byte("\x7fELF vhost_net"),
		"kernel/net/9p/9pnet_virtio.ko":     []byte("\x7fELF 9pnet_virtio"),
		"kernel/drivers/net/macvlan.ko":     []byte("\x7fELF not loaded"),
		"kernel/arch/x86/kvm/kvm-intel.ko":  []byte("\x7fELF not loaded either"),
		"modules.dep":                       []byte("kernel/drivers/net/tun.ko:\n"),
	}
	var xzData bytes.Buffer
	w, err := xz.NewWriter(&xzData)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("\x7fELF vhost"))
	w.Close()
	files["kernel/drivers/vhost/vhost.ko.xz"] = xzData.Bytes()
	for name, b := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := loadedModuleFiles(dir, "testdata/proc-modules-6.1-lab.txt")
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, p := range got {
		r, _ := filepath.Rel(dir, p)
		rel = append(rel, r)
	}
	want := []string{"kernel/drivers/net/tun.ko", "kernel/drivers/vhost/vhost.ko.xz", "kernel/drivers/vhost/vhost_net.ko", "kernel/net/9p/9pnet_virtio.ko", "kernel/net/core/pktgen.ko"}
	if !slices.Equal(rel, want) {
		t.Fatalf("loaded module files %v, want %v", rel, want)
	}
	elf, err := elfModules(got)
	if err != nil {
		t.Fatal(err)
	}
	if elf[0] != got[0] || filepath.Base(elf[1]) != "vhost.ko" {
		t.Fatalf("elf files %v", elf)
	}
	b, err := os.ReadFile(elf[1])
	if err != nil || string(b) != "\x7fELF vhost" {
		t.Fatalf("decompressed vhost.ko = %q, %v", b, err)
	}
	os.RemoveAll(filepath.Dir(elf[1]))
}

// In a lab VM the run writes the kernel's module list beside its results
// (proc-modules.txt); with --resume a symbolic link planted there is not
// written through (issue 34 item 1). Before, os.WriteFile followed it.
func TestModuleListNoFollow(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	w, err := results.Create(dir, results.Env{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	victim := filepath.Join(tmp, "victim")
	os.WriteFile(victim, []byte("outside\n"), 0o644)
	if err := os.Symlink(victim, filepath.Join(dir, "proc-modules.txt")); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ModulesEnvVar, t.TempDir())
	addModuleSymbols(t.Context(), &proc.Fake{}, w.Root(), "testdata/proc-modules-6.1-lab.txt", t.Logf)
	if b, _ := os.ReadFile(victim); string(b) != "outside\n" {
		t.Errorf("the module list was written through the link at proc-modules.txt: the file outside now holds %.80q", b)
	}
}
