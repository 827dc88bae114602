package vmimages

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lz4Text is the input of testdata/lz4/text.lz4-legacy.
func lz4Text() []byte {
	var b bytes.Buffer
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d: the quick brown fox jumps over the lazy dog %d\n", i, i*i%97)
	}
	return b.Bytes()
}

// The legacy LZ4 frames the lz4 command writes decode to their input.
func TestLZ4Legacy(t *testing.T) {
	in, err := os.ReadFile("testdata/lz4/text.lz4-legacy")
	if err != nil {
		t.Fatal(err)
	}
	want := lz4Text()
	if len(want) != 172432 {
		t.Fatalf("lz4Text is %d bytes, the capture was made from 172432", len(want))
	}
	// A trailing size, as a bzImage payload has, is not a block.
	got, err := lz4Legacy(append(in, 0x90, 0xa1, 0x02, 0x00))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("decoded %d bytes (%v), want the %d of the input", len(got), err, len(want))
	}
	for _, bad := range [][]byte{in[:len(in)/2], append(in[:8:8], 0xff)} {
		if got, err := lz4Legacy(bad); err == nil && bytes.Equal(got, want) {
			t.Errorf("a damaged stream decoded whole")
		}
	}
	if _, err := lz4Block(nil, []byte{0x0f, 1, 0}); err == nil {
		t.Error("a match before any output: no error")
	}
}

// PVHKernel turns Debian's kernels (the cloud flavour is LZ4, the generic
// one XZ with the x86 filter) into an ELF with a PVH entry, cached by the
// image's hash.
func TestPVHKernel(t *testing.T) {
	k := testKernel(t)
	images := []string{k.Image}
	// The lab e2e's kernel (XZ) when the cache has it.
	if more, _ := filepath.Glob(filepath.Join(CacheDir(), "kernels", "debian", "linux-image-6.1.0-*-amd64-unsigned", "boot", "vmlinuz-6.1.0-*-amd64")); len(more) > 0 {
		images = append(images, more[0])
	}
	seen := map[string]bool{}
	for _, img := range images {
		if seen[img] {
			continue
		}
		seen[img] = true
		cache := t.TempDir()
		out, err := PVHKernel(t.Context(), img, cache)
		if err != nil {
			t.Fatalf("%s: %v", img, err)
		}
		f, err := elf.Open(out)
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		f.Close()
		if !strings.HasPrefix(out, cache) {
			t.Errorf("vmlinux %s outside the cache %s", out, cache)
		}
		st, _ := os.Stat(out)
		again, err := PVHKernel(t.Context(), img, cache)
		st2, _ := os.Stat(again)
		if err != nil || again != out || !st.ModTime().Equal(st2.ModTime()) {
			t.Errorf("second call: %s, %v; want the cached %s", again, err, out)
		}
		t.Logf("%s -> %s (%d bytes)", filepath.Base(img), out, st.Size())
	}
	if _, err := PVHKernel(t.Context(), "testdata/lz4/text.lz4-legacy", t.TempDir()); err == nil || !strings.Contains(err.Error(), "bzImage") {
		t.Errorf("not a bzImage: err = %v", err)
	}
}

// fakeBzImage is a bzImage's setup header pointing at payload.
func fakeBzImage(payload []byte) []byte {
	const pm = (4 + 1) * 512 // setup_sects 4
	b := make([]byte, pm, pm+len(payload))
	b[0x1f1] = 4
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x20f)
	binary.LittleEndian.PutUint32(b[0x248:], 0)
	binary.LittleEndian.PutUint32(b[0x24c:], uint32(len(payload)))
	return append(b, payload...)
}

// The payload of a gzip bzImage (what runner/kbuild's config builds) is a
// whole gzip stream, whose trailer ends with the size; other compressors'
// payloads (LZ4 here) carry the size the build appended.
func TestExtractVmlinuxPayloads(t *testing.T) {
	want := lz4Text()
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(want)
	w.Close()
	lz4, err := os.ReadFile("testdata/lz4/text.lz4-legacy")
	if err != nil {
		t.Fatal(err)
	}
	lz4 = binary.LittleEndian.AppendUint32(lz4, uint32(len(want)))
	for name, payload := range map[string][]byte{"gzip": gz.Bytes(), "lz4": lz4} {
		got, err := extractVmlinux(t.Context(), fakeBzImage(payload))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want the %d bytes compressed", name, len(got), err, len(want))
		}
	}
}

// TestPVHKernelKeepsHashOnFailure: a failed extraction leaves the hash
// file already in the cache (it removed it before writing, though this
// process had not made it).
func TestPVHKernelKeepsHashOnFailure(t *testing.T) {
	k := testKernel(t)
	data, err := os.ReadFile(k.Image)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	cache := t.TempDir()
	dir := filepath.Join(cache, vmlinuxCache, hex.EncodeToString(sum[:8]))
	// A directory with something in it where the vmlinux goes: the
	// rename onto it fails.
	if err := os.MkdirAll(filepath.Join(dir, "vmlinux", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	hash := filepath.Join(dir, "vmlinux.sha256")
	if err := os.WriteFile(hash, []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PVHKernel(t.Context(), k.Image, cache); err == nil {
		t.Fatal("PVHKernel wrote over a directory")
	}
	if b, err := os.ReadFile(hash); err != nil || string(b) != "theirs\n" {
		t.Errorf("%s removed or changed: %q, %v", hash, b, err)
	}
}
