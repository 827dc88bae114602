package vminit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// BootProfile keeps the initcalls that took at least the threshold and
// the messages that came that long after the one before, and the
// kernel's handing over to /init however soon it came (first), drops
// initcall_debug's "calling" lines and ends with the count and total of
// all initcalls.
func TestBootProfile(t *testing.T) {
	recs := []string{
		"6,1,0,-;Linux version 6.1.0-57-cloud-amd64",
		"7,2,1500000,-;calling  acpi_init+0x0/0x4b0 @ 1",
		"7,3,7700000,-;initcall acpi_init+0x0/0x4b0 returned 0 after 6200000 usecs",
		"7,4,7800000,-;calling  foo_init+0x0/0x10 @ 1",
		"7,5,7801000,-;initcall foo_init+0x0/0x10 returned 0 after 1000 usecs",
		"6,6,76300123,-;Freeing unused kernel image (initmem) memory: 2500K",
		"6,7,76301123,-;Run /init as init process",
		"no header",
	}
	got := BootProfile(recs, 10*time.Millisecond)
	want := []string{
		"boot profile: 76.301 (+0.001) Run /init as init process",
		"boot profile: 7.700 (+6.200) initcall acpi_init+0x0/0x4b0 returned 0 after 6200000 usecs",
		"boot profile: 76.300 (+68.499) Freeing unused kernel image (initmem) memory: 2500K",
		"boot profile: 2 initcalls in 6.201s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("BootProfile =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestProfiled(t *testing.T) {
	for _, tc := range []struct {
		cmdline string
		want    bool
	}{
		{"console=ttyS0 initcall_debug log_buf_len=8M\n", true},
		{"initcall_debug", true},
		{"console=ttyS0 initcall_debugx quiet", false},
		{"console=ttyS0 vnb.initcall_debug=1", false},
		{"", false},
	} {
		if got := Profiled(tc.cmdline); got != tc.want {
			t.Errorf("Profiled(%q) = %v, want %v", tc.cmdline, got, tc.want)
		}
	}
}
