package vmimages

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// PVHKernel returns an uncompressed vmlinux of the bzImage image that QEMU
// boots directly at its PVH entry point: no firmware loading the kernel
// through fw_cfg and no decompression by the guest. Under TCG that saves
// 20-30 s of every lab VM boot on a loaded 2-core machine (XZ-compressed
// Debian kernel: 47-70 s to the kernel's panic on a missing init from a
// bzImage, 25-38 s from its vmlinux), more in a nested guest.
//
// The vmlinux is extracted once into cacheDir/vmlinux/HASH/vmlinux (HASH:
// the image's sha256), with its own sha256 beside it (vmlinux.sha256),
// and reused only while its content still hashes to that: a vmlinux that
// does not (changed in the cache, torn) is extracted again. An error says
// why this image cannot be booted that way (no PVH entry note, a
// compression this package cannot undo); callers then boot the bzImage.
func PVHKernel(ctx context.Context, image, cacheDir string) (string, error) {
	if cacheDir == "" {
		cacheDir = CacheDir()
	}
	data, err := os.ReadFile(image)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	key := hex.EncodeToString(sum[:8])
	look, write := imageDirs(cacheDir, vmlinuxCache)
	for _, d := range look {
		if p := filepath.Join(d, key, "vmlinux"); verifiedVmlinux(p) {
			return p, nil
		}
	}
	dir := filepath.Join(write, key)
	out := filepath.Join(dir, "vmlinux")
	vmlinux, err := extractVmlinux(ctx, data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", image, err)
	}
	if err := checkPVH(vmlinux); err != nil {
		return "", fmt.Errorf("%s: %w", image, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	vsum := sha256.Sum256(vmlinux)
	// The vmlinux first, its hash last: a vmlinux without one is not
	// reused. A hash already there (of a vmlinux that no longer matched
	// it) is replaced by the rename, not removed first: reuse checks the
	// content against it, and it is not this process's to remove.
	if err := writeAtomic(dir, "vmlinux", vmlinux); err != nil {
		return "", err
	}
	if err := writeAtomic(dir, "vmlinux.sha256", []byte(hex.EncodeToString(vsum[:])+"\n")); err != nil {
		return "", err
	}
	return out, nil
}

// verifiedVmlinux reports whether the vmlinux at p hashes to the sha256
// recorded beside it.
func verifiedVmlinux(p string) bool {
	want, err := os.ReadFile(p + ".sha256")
	if err != nil {
		return false
	}
	got, err := fileSHA256(p)
	return err == nil && got == strings.TrimSpace(string(want))
}

// writeAtomic writes dir/name through a new temporary file renamed over it.
func writeAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+"-")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// extractVmlinux returns the kernel inside an x86 bzImage: the payload
// the setup header points at (boot protocol 2.08+), decompressed. The
// payload ends with the uncompressed size (4 bytes, little endian: the
// build appends it, or gzip's trailer ends with it), which the result
// must match.
func extractVmlinux(ctx context.Context, b []byte) ([]byte, error) {
	if len(b) < 0x250 || string(b[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not an x86 bzImage (no HdrS setup header)")
	}
	if v := binary.LittleEndian.Uint16(b[0x206:]); v < 0x208 {
		return nil, fmt.Errorf("boot protocol %#x has no payload fields (want 2.08 or later)", v)
	}
	setupSects := int(b[0x1f1])
	if setupSects == 0 {
		setupSects = 4
	}
	pm := (setupSects + 1) * 512
	off := pm + int(binary.LittleEndian.Uint32(b[0x248:]))
	n := int(binary.LittleEndian.Uint32(b[0x24c:]))
	if n < 8 || off < pm || off+n > len(b) {
		return nil, fmt.Errorf("payload %d+%d outside the image (%d bytes)", off, n, len(b))
	}
	payload := b[off : off+n-4]
	size := int(binary.LittleEndian.Uint32(b[off+n-4:]))
	if bytes.HasPrefix(payload, []byte{0x1f, 0x8b}) {
		// gzip's own trailer ends with the size (ISIZE): the kernel's
		// build appends none to a gzip payload, so the stream is whole.
		payload = b[off : off+n]
	}
	var out []byte
	var err error
	switch {
	case bytes.HasPrefix(payload, []byte{0x1f, 0x8b}):
		out, err = readAllFrom(gzip.NewReader(bytes.NewReader(payload)))
	case bytes.HasPrefix(payload, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		// The kernel's XZ streams use the x86 BCJ filter, which Go's xz
		// packages lack: xz-utils (priority required in Debian) does it.
		out, err = command(ctx, payload, "xz", "-dc")
	case bytes.HasPrefix(payload, []byte{0x02, 0x21, 0x4c, 0x18}):
		out, err = lz4Legacy(payload)
	case bytes.HasPrefix(payload, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		var d *zstd.Decoder
		if d, err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(1<<30)); err == nil {
			out, err = d.DecodeAll(payload, make([]byte, 0, size))
			d.Close()
		}
	case bytes.HasPrefix(payload, []byte("BZh")):
		out, err = io.ReadAll(bzip2.NewReader(bytes.NewReader(payload)))
	case bytes.HasPrefix(payload, []byte{0x5d, 0, 0}):
		out, err = command(ctx, payload, "xz", "-dc", "--format=lzma")
	default:
		return nil, fmt.Errorf("unknown kernel compression (payload starts % x)", payload[:min(6, len(payload))])
	}
	if err != nil {
		return nil, fmt.Errorf("decompress the kernel: %w", err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("decompressed kernel has %d bytes, the image says %d", len(out), size)
	}
	return out, nil
}

func readAllFrom(r io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// command runs argv with in on stdin and returns its stdout.
func command(ctx context.Context, in []byte, argv ...string) ([]byte, error) {
	return (proc.Real{}).Run(ctx, proc.Cmd{Argv: argv, Stdin: bytes.NewReader(in)})
}

// checkPVH accepts an ELF kernel with a Xen PHYS32_ENTRY note: the PVH
// entry point QEMU's -kernel jumps to.
func checkPVH(vmlinux []byte) error {
	f, err := elf.NewFile(bytes.NewReader(vmlinux))
	if err != nil {
		return fmt.Errorf("the decompressed kernel is not an ELF file: %w", err)
	}
	const xenElfnotePhys32Entry = 18
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		notes, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		for len(notes) >= 12 {
			namesz := int(binary.LittleEndian.Uint32(notes))
			descsz := int(binary.LittleEndian.Uint32(notes[4:]))
			typ := binary.LittleEndian.Uint32(notes[8:])
			name := notes[12:min(len(notes), 12+namesz)]
			if typ == xenElfnotePhys32Entry && string(bytes.TrimRight(name, "\x00")) == "Xen" {
				return nil
			}
			next := 12 + align4(namesz) + align4(descsz)
			if next > len(notes) {
				break
			}
			notes = notes[next:]
		}
	}
	return errors.New("the kernel has no PVH entry (CONFIG_PVH)")
}

func align4(n int) int { return (n + 3) &^ 3 }

// lz4Legacy decodes LZ4's legacy frame format (what the kernel's lz4 -l
// compression writes): a magic number, then blocks of a 4-byte little
// endian compressed size and an LZ4 block of at most 8 MiB. A size that
// does not fit in the input ends it.
func lz4Legacy(in []byte) ([]byte, error) {
	const magic = 0x184c2102
	var out []byte
	for len(in) >= 4 {
		n := int(binary.LittleEndian.Uint32(in))
		if n == magic {
			in = in[4:]
			continue
		}
		if n == 0 || n > len(in)-4 {
			break
		}
		var err error
		if out, err = lz4Block(out, in[4:4+n]); err != nil {
			return nil, err
		}
		in = in[4+n:]
	}
	return out, nil
}

// lz4Block appends the decoding of one LZ4 block to dst: sequences of a
// token (literal length, match length), literals, a 2-byte offset back
// into the output and the match.
func lz4Block(dst, src []byte) ([]byte, error) {
	i := 0
	length := func(n int) (int, error) {
		if n != 15 {
			return n, nil
		}
		for {
			if i >= len(src) {
				return 0, errors.New("lz4: truncated length")
			}
			b := src[i]
			i++
			n += int(b)
			if b != 255 {
				return n, nil
			}
		}
	}
	for i < len(src) {
		tok := src[i]
		i++
		lit, err := length(int(tok >> 4))
		if err != nil {
			return nil, err
		}
		if i+lit > len(src) {
			return nil, errors.New("lz4: literals beyond the block")
		}
		dst = append(dst, src[i:i+lit]...)
		i += lit
		if i == len(src) {
			return dst, nil // the last sequence has literals only
		}
		if i+2 > len(src) {
			return nil, errors.New("lz4: truncated offset")
		}
		off := int(binary.LittleEndian.Uint16(src[i:]))
		i += 2
		ml, err := length(int(tok & 15))
		if err != nil {
			return nil, err
		}
		ml += 4
		if off == 0 || off > len(dst) {
			return nil, fmt.Errorf("lz4: match offset %d outside the %d bytes decoded", off, len(dst))
		}
		start := len(dst) - off
		for k := 0; k < ml; k++ { // byte by byte: a match may overlap what it writes
			dst = append(dst, dst[start+k])
		}
	}
	return dst, nil
}
