package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ulikunitz/xz"
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
