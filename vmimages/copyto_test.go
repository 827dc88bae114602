package vmimages

import (
	"os"
	"path/filepath"
	"testing"
)

// `image build -o DIR` into a directory with a symbolic link planted at
// every name it writes (its files and their temporary names) writes
// nothing outside DIR (issue 34 item 1): before, image.json and the
// copies' ".tmp" files were written through the links.
func TestCopyToNoFollow(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	os.MkdirAll(src, 0o755)
	img := &Image{Kernel: filepath.Join(src, "bzImage"), Initramfs: filepath.Join(src, "initramfs.cpio"), KernelRelease: "6.1.0-99-test"}
	os.WriteFile(img.Kernel, []byte("kernel"), 0o644)
	os.WriteFile(img.Initramfs, []byte("initramfs"), 0o644)

	out, outside := filepath.Join(tmp, "out"), filepath.Join(tmp, "outside")
	os.MkdirAll(out, 0o755)
	os.MkdirAll(outside, 0o755)
	names := []string{"vmlinuz", "vmlinuz.tmp", "initramfs.cpio", "initramfs.cpio.tmp", "image.json"}
	for _, n := range names {
		os.WriteFile(filepath.Join(outside, n), []byte("outside\n"), 0o644)
		if err := os.Symlink(filepath.Join(outside, n), filepath.Join(out, n)); err != nil {
			t.Fatal(err)
		}
	}
	err := img.copyTo(out)
	for _, n := range names {
		if b, _ := os.ReadFile(filepath.Join(outside, n)); string(b) != "outside\n" {
			t.Errorf("written through the link at %s (copyTo: %v): the file outside holds %.40q", n, err, b)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "vmlinuz")); string(b) != "kernel" {
		t.Errorf("vmlinuz holds %q, want the kernel", b)
	}
	if fi, err := os.Lstat(filepath.Join(out, "image.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("image.json: %v, want a regular file", err)
	}
}
