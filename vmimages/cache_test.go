package vmimages

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/vnetbench/vnetbench/vmimages/cpio"
)

// A cached initramfs is reused only while its content hashes to its
// name: one changed in the cache (by a kernel under test that could write
// there, or a torn write) is built again, not booted. With a separate
// image directory (a lab's, whose cache is read-only) a bad cache entry
// is left alone and the good image is written there.
func TestCachedInitramfsVerified(t *testing.T) {
	a := &cpio.Archive{}
	a.AddFile("init", 0o755, []byte("#!/bin/sh\necho the real init\n"))
	var want bytes.Buffer
	a.WriteTo(&want)

	cache := t.TempDir()
	look, dir := imageDirs(cache, initramfsCache)
	path, _, cached, err := writeCached(look, dir, a)
	if err != nil || cached {
		t.Fatalf("first build: %v, cached %v", err, cached)
	}
	if err := os.WriteFile(path, []byte("a planted initramfs"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, _, cached, err := writeCached(look, dir, a)
	if got, _ := os.ReadFile(again); err != nil || cached || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("after the cache entry changed: %s cached %v (%v), content %q; want the image built again", again, cached, err, got)
	}
	if again, _, cached, _ := writeCached(look, dir, a); !cached || again != path {
		t.Errorf("a good entry: %s cached %v, want %s reused", again, cached, path)
	}

	// A lab: the cache is read-only, images go to VNETBENCH_IMAGE_CACHE.
	os.WriteFile(path, []byte("a planted initramfs"), 0o644)
	os.Chmod(filepath.Dir(path), 0o555)
	defer os.Chmod(filepath.Dir(path), 0o755)
	t.Setenv(ImageCacheEnv, t.TempDir())
	look, dir = imageDirs(cache, initramfsCache)
	p, _, cached, err := writeCached(look, dir, a)
	if got, _ := os.ReadFile(p); err != nil || cached || filepath.Dir(p) != dir || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("lab: %s cached %v (%v); want a new image in %s", p, cached, err, dir)
	}
	if got, _ := os.ReadFile(path); string(got) != "a planted initramfs" {
		t.Errorf("the read-only cache entry was rewritten")
	}
}

// A cached vmlinux is reused only while it hashes to the sum recorded
// beside it; a changed one, or one without a sum (an older cache), is
// extracted again from the bzImage.
func TestCachedVmlinuxVerified(t *testing.T) {
	k := testKernel(t)
	cache := t.TempDir()
	out, err := PVHKernel(t.Context(), k.Image, cache)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(out)
	for name, tamper := range map[string]func(){
		"changed":    func() { os.WriteFile(out, []byte("a planted kernel"), 0o644) },
		"no sum":     func() { os.Remove(out + ".sha256") },
		"sum forged": func() { os.WriteFile(out, []byte("x"), 0o644); os.WriteFile(out+".sha256", []byte("00"), 0o644) },
	} {
		tamper()
		again, err := PVHKernel(t.Context(), k.Image, cache)
		got, _ := os.ReadFile(again)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %s (%v) holds %d bytes, want the %d extracted", name, again, err, len(got), len(want))
		}
	}
}
