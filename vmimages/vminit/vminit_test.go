package vminit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestModuleListPaths(t *testing.T) {
	list := []byte("kernel/drivers/virtio/virtio.ko\nkernel/drivers/net/virtio_net.ko\n\n")
	got := ModuleListPaths(list, "/lib/modules/6.1.0-test")
	want := []string{"/lib/modules/6.1.0-test/kernel/drivers/virtio/virtio.ko", "/lib/modules/6.1.0-test/kernel/drivers/net/virtio_net.ko"}
	if !slices.Equal(got, want) {
		t.Errorf("ModuleListPaths = %q, want %q", got, want)
	}
}

func TestLoadModuleListNoList(t *testing.T) {
	n, err := LoadModuleList(filepath.Join(t.TempDir(), "modules"), "/lib/modules")
	if n != 0 || err != nil {
		t.Errorf("no list file: got %d, %v; want 0, nil", n, err)
	}
}

// A listed module missing from the image fails before any is loaded (no
// privilege needed), names the file and hints at a kernel mismatch.
func TestLoadModuleListMissingModule(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "modules")
	if err := os.WriteFile(list, []byte("kernel/net/core/pktgen.ko\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := LoadModuleList(list, filepath.Join(dir, "lib"))
	if n != 0 || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %d, %v; want 0 and a not-exist error", n, err)
	}
	if !strings.Contains(err.Error(), "pktgen.ko") || !strings.Contains(err.Error(), "another kernel release") {
		t.Errorf("error %q names neither the module nor the likely cause", err)
	}
}
