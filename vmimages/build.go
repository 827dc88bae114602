package vmimages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/vmimages/cpio"
	"github.com/vnetbench/vnetbench/vmimages/vminit"
)

// BootModules are loaded at every boot: the virtio PCI transport, the NIC
// and the virtio-serial port the agent talks on (their dependencies are
// resolved from the kernel's module metadata).
var BootModules = []string{"virtio_pci", "virtio_net", "virtio_console"}

// BuildOptions says what goes into an image.
type BuildOptions struct {
	// Kernel is a bzImage path, "host", "debian" or "debian:VERSION";
	// empty tries the host kernel, then Debian's (see FindKernel).
	Kernel string
	// Modules is the kernel's /lib/modules/<release> directory when Kernel
	// is a path (derived from the image's release when empty).
	Modules string
	// ExtraModules are loaded at boot after BootModules (e.g. "pktgen",
	// "vhost_net", "tun" for a lab guest).
	ExtraModules []string
	// Agent is the static vnetbench binary to install as /init; empty
	// means the running executable.
	Agent string
	// KeepModuleSignatures keeps the modules' appended signatures. By
	// default they are stripped: the guest kernel then skips the RSA check
	// on each module (faster boot under TCG) and marks itself tainted (E).
	// Keep them for a kernel built with CONFIG_MODULE_SIG_FORCE=y.
	KeepModuleSignatures bool
	// Iperf3 copies the host's iperf3 and its shared libraries into the
	// image (needed for the guest's iperf3 server); the same as "iperf3"
	// in Programs.
	Iperf3 bool
	// Programs are host programs (found on $PATH) copied into the image as
	// /usr/bin/NAME with their shared libraries, for a workload's guest
	// side (the iperf3 server, socat, ...).
	Programs []string
	// CacheDir holds downloaded kernels and built initramfs files; empty
	// means CacheDir().
	CacheDir string
	// OutDir, when set, receives copies: vmlinuz, initramfs.cpio, image.json.
	OutDir string
}

// Image is a built guest image.
type Image struct {
	Kernel        string   `json:"kernel"`         // bzImage to pass to QEMU -kernel
	Initramfs     string   `json:"initramfs"`      // uncompressed newc cpio for -initrd
	Hash          string   `json:"hash"`           // sha256 of the initramfs bytes (also its cache name)
	KernelRelease string   `json:"kernel_release"` // e.g. 6.1.0-50-cloud-amd64
	KernelSource  string   `json:"kernel_source"`  // explicit, host or debian:<package>
	Modules       []string `json:"modules"`        // loaded at boot, in order
	Iperf3        bool     `json:"iperf3"`         // iperf3 is in the image
	Programs      []string `json:"programs"`       // host programs in /usr/bin, sorted
	Cached        bool     `json:"cached"`         // the initramfs already existed
}

// Build resolves the kernel, collects the agent, modules and host programs
// (iperf3, ...), and writes a reproducible initramfs named by its content hash into
// CacheDir/initramfs, reusing it when the inputs did not change.
func Build(ctx context.Context, o BuildOptions) (*Image, error) {
	if o.CacheDir == "" {
		if err := CheckCacheDir(); err != nil {
			return nil, err
		}
		o.CacheDir = CacheDir()
	}
	k, err := FindKernel(ctx, o.Kernel, o.Modules, o.CacheDir)
	if err != nil {
		return nil, err
	}
	agent := o.Agent
	if agent == "" {
		if agent, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the agent binary: %w; pass --agent-binary", err)
		}
	}
	programs := slices.Clone(o.Programs)
	if o.Iperf3 {
		programs = append(programs, "iperf3")
	}
	slices.Sort(programs)
	programs = slices.Compact(programs)
	arch, err := assemble(k, agent, append(append([]string(nil), BootModules...), o.ExtraModules...), programs, !o.KeepModuleSignatures)
	if err != nil {
		return nil, err
	}
	img := &Image{Kernel: k.Image, KernelRelease: k.Release, KernelSource: k.Source, Modules: arch.modules,
		Iperf3: slices.Contains(programs, "iperf3"), Programs: programs}
	look, dir := imageDirs(o.CacheDir, initramfsCache)
	if img.Initramfs, img.Hash, img.Cached, err = writeCached(look, dir, arch.archive); err != nil {
		return nil, err
	}
	if o.OutDir != "" {
		if err := img.copyTo(o.OutDir); err != nil {
			return nil, err
		}
	}
	return img, nil
}

type assembled struct {
	archive *cpio.Archive
	modules []string
}

// CheckAgent refuses an agent binary that cannot be a VM's /init: one
// that is not there, or not an ELF program whose libraries are on this
// host. A run checks its --agent-binary with it before anything else, so
// that its dry run refuses what the image build would, after the run
// directory and the kernels' builds.
func CheckAgent(path string) error {
	if err := agentThere(path); err != nil {
		return err
	}
	_, err := executableLibs(path)
	return err
}

// agentThere refuses an agent binary that is not there.
func agentThere(path string) error {
	if _, err := os.Stat(path); err != nil {
		return inputErrorf(nil, "agent binary %s: %v; build vnetbench (make build, or go install ./cmd/vnetbench) or pass --agent-binary", path, errors.Unwrap(err))
	}
	return nil
}

func assemble(k *Kernel, agent string, modNames, programs []string, stripSigs bool) (*assembled, error) {
	var a cpio.Archive
	// The rest of CheckAgent is AddExecutable's own: its libraries are
	// read once.
	if err := agentThere(agent); err != nil {
		return nil, err
	}
	if _, err := AddExecutable(&a, "/init", agent); err != nil {
		return nil, err
	}
	list := strings.TrimPrefix(vminit.ModuleList, "/")
	for _, d := range []string{"dev", "proc", "sys", "tmp", "run", filepath.Dir(list)} {
		a.AddDir(d, 0o755)
	}
	a.AddCharDev("dev/console", 0o600, 5, 1)
	a.AddCharDev("dev/null", 0o666, 1, 3)

	var loaded []string
	if k.Modules == "" {
		return nil, inputErrorf(nil, "kernel %s has no modules directory; pass --modules DIR (its /lib/modules/<release>)", k.Image)
	}
	ix, err := OpenModules(k.Modules)
	if err != nil {
		return nil, err
	}
	mods, err := ix.Resolve(modNames)
	if err != nil {
		return nil, err
	}
	var order strings.Builder
	for _, m := range mods {
		data, err := ix.ReadModule(m.Rel)
		if err != nil {
			return nil, err
		}
		if stripSigs {
			data = StripSignature(data)
		}
		rel := UncompressedName(m.Rel)
		a.AddFile(filepath.Join("lib/modules", k.Release, rel), 0o644, data)
		order.WriteString(rel + "\n")
		loaded = append(loaded, m.Name)
	}
	a.AddFile(list, 0o644, []byte(order.String()))

	for _, name := range programs {
		if err := addProgram(&a, name); err != nil {
			return nil, err
		}
	}
	return &assembled{archive: &a, modules: loaded}, nil
}

// addProgram copies the host program name into the archive as
// /usr/bin/NAME, with its shared libraries at their host paths (an archive
// path added twice keeps one copy).
func addProgram(a *cpio.Archive, name string) error {
	bin, err := proc.LookPath(name)
	if err != nil {
		return inputErrorf(nil, "%s is not installed on the host, so it cannot go into the image; install it (Debian: apt-get install %s)", name, name)
	}
	_, err = AddExecutable(a, "/usr/bin/"+name, bin)
	return err
}

// AddExecutable puts the program bin into a as dst (mode 0755) and, when it
// is dynamically linked, its ELF interpreter and shared libraries at the
// paths the loader opens, as plain files (symlinks followed); an archive
// path added twice keeps one copy. It returns those library paths (nil for
// a static program). This is how a vnetbench built by a plain go build or
// go install (cgo on, so linked against the host's libc) runs as a VM's
// /init: the initramfs carries the libc it was linked against.
func AddExecutable(a *cpio.Archive, dst, bin string) ([]string, error) {
	libs, err := executableLibs(bin)
	if err != nil {
		return nil, err
	}
	for _, p := range append([]string{bin}, libs...) {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		to := p
		if p == bin {
			to = dst
		}
		a.AddFile(to, 0o755, data)
	}
	return libs, nil
}

// executableLibs is SharedLibs(bin), refusing as bad input a file that
// is not an ELF program.
func executableLibs(bin string) ([]string, error) {
	libs, err := SharedLibs(bin)
	if err != nil {
		if errors.Is(err, fault.ErrInput) { // a library the loader would not find
			return nil, err
		}
		return nil, inputErrorf(err, "%s is not an ELF executable this machine can run; pass a vnetbench binary", bin)
	}
	return libs, nil
}

// writeCached serialises the archive and names it by the sha256 of its
// bytes. A file of that name in one of the look directories is reused
// only when its content hashes to that name (a cache another process
// could write, a torn write); otherwise the archive is written atomically
// into dir, replacing a file there that did not match.
func writeCached(look []string, dir string, a *cpio.Archive) (path, hash string, cached bool, err error) {
	h := sha256.New()
	if _, err := a.WriteTo(h); err != nil {
		return "", "", false, err
	}
	hash = hex.EncodeToString(h.Sum(nil))
	name := "initramfs-" + hash[:24] + ".cpio"
	for _, d := range look {
		p := filepath.Join(d, name)
		if got, err := fileSHA256(p); err == nil && got == hash {
			now := time.Now()
			_ = os.Chtimes(p, now, now) // most recently used: pruned last
			return p, hash, true, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", false, err
	}
	path = filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, ".initramfs-*")
	if err != nil {
		return "", "", false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := a.WriteTo(tmp); err != nil {
		tmp.Close()
		return "", "", false, fmt.Errorf("write initramfs: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", "", false, err
	}
	if err := tmp.Close(); err != nil {
		return "", "", false, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", "", false, err
	}
	pruneCache(dir, path)
	return path, hash, false, nil
}

// fileSHA256 is the hex sha256 of the regular file at path (a link there
// is not followed).
func fileSHA256(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// keepImages is how many initramfs files the cache keeps (most recently
// used first); each rebuilt agent binary makes a new one.
const keepImages = 16

// pruneCache deletes the least recently used initramfs files beyond
// keepImages, never keep. A VM already running from a deleted file is not
// affected (the kernel read it at boot). It prunes only what writeCached
// writes: a regular file named initramfs-HASH.cpio (24 hex digits); a
// link, or another file matching initramfs-*.cpio, is not its own and
// stays.
func pruneCache(dir, keep string) {
	files, _ := filepath.Glob(filepath.Join(dir, "initramfs-*.cpio"))
	type entry struct {
		path  string
		mtime time.Time
	}
	var es []entry
	for _, f := range files {
		if f == keep || !cachedImageRe().MatchString(filepath.Base(f)) {
			continue
		}
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() {
			es = append(es, entry{f, fi.ModTime()})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].mtime.After(es[j].mtime) })
	for i := keepImages - 1; i < len(es); i++ {
		_ = os.Remove(es[i].path)
	}
}

// cachedImageRe is the name writeCached gives an initramfs.
var cachedImageRe = lazyre.New(`^initramfs-[0-9a-f]{24}\.cpio$`)

// copyTo copies the kernel and initramfs into dir as vmlinuz and
// initramfs.cpio and writes image.json naming the copies. Every write
// goes through safefs: a symbolic link planted in dir is replaced, not
// followed.
func (img *Image) copyTo(dir string) error {
	d, err := safefs.MkdirAll(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := copyInto(d, "vmlinuz", img.Kernel); err != nil {
		return err
	}
	if err := copyInto(d, "initramfs.cpio", img.Initramfs); err != nil {
		return err
	}
	img.Kernel, img.Initramfs = d.Join("vmlinuz"), d.Join("initramfs.cpio")
	b, err := json.MarshalIndent(img, "", "  ")
	if err != nil {
		return err
	}
	return d.WriteFile("image.json", append(b, '\n'), 0o644)
}

// copyInto copies the file src to name in d (whole or not at all).
func copyInto(d *safefs.Dir, name, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return d.WriteWith(name, 0o644, func(w io.Writer) error {
		if _, err := io.Copy(w, in); err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
		return nil
	})
}
