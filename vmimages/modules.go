package vmimages

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Module is one loadable kernel module resolved in a modules directory.
type Module struct {
	Name string   // canonical name, "-" replaced by "_"
	Rel  string   // path relative to the modules directory, e.g. "kernel/drivers/net/tun.ko"
	Deps []string // names of the modules it needs (direct)
}

// ModuleIndex knows the modules of one kernel: paths from modules.dep when
// present, otherwise from walking the directory and reading each module's
// .modinfo "depends=" (Debian's packages ship no modules.dep: depmod runs at
// install time); built-in names from modules.builtin.
type ModuleIndex struct {
	Dir     string
	paths   map[string]string   // name -> rel path
	deps    map[string][]string // name -> direct deps (names), filled lazily without modules.dep
	builtin map[string]bool
	fromDep bool
	// unpacked keeps compressed modules decompressed by depsOf (rel ->
	// bytes) for the ReadModule that follows: pure-Go xz decodes at about
	// 7 MB/s, so a second pass would double the build time of an image.
	unpacked map[string][]byte
}

// canon normalises a module name: "virtio-net" and "virtio_net" are the same.
func canon(name string) string { return strings.ReplaceAll(name, "-", "_") }

func modName(rel string) string {
	b := filepath.Base(rel)
	for _, ext := range []string{".ko", ".ko.gz", ".ko.xz", ".ko.zst"} {
		if strings.HasSuffix(b, ext) {
			return canon(strings.TrimSuffix(b, ext))
		}
	}
	return ""
}

// OpenModules indexes the modules directory dir (/lib/modules/<release>).
func OpenModules(dir string) (*ModuleIndex, error) {
	if !dirExists(dir) {
		return nil, inputErrorf(nil, "modules directory %s does not exist; pass --modules with the kernel's /lib/modules/<release> directory", dir)
	}
	ix := &ModuleIndex{Dir: dir, paths: map[string]string{}, deps: map[string][]string{}, builtin: map[string]bool{}, unpacked: map[string][]byte{}}
	if f, err := os.Open(filepath.Join(dir, "modules.builtin")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if n := modName(strings.TrimSpace(sc.Text())); n != "" {
				ix.builtin[n] = true
			}
		}
		f.Close()
	}
	if f, err := os.Open(filepath.Join(dir, "modules.dep")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			mod, deps, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			n := modName(mod)
			ix.paths[n] = mod
			var dn []string
			for _, d := range strings.Fields(deps) {
				dn = append(dn, modName(d))
				if _, ok := ix.paths[modName(d)]; !ok {
					ix.paths[modName(d)] = d
				}
			}
			ix.deps[n] = dn
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s/modules.dep: %w", dir, err)
		}
		ix.fromDep = true
		return ix, nil
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if n := modName(p); n != "" {
			rel, _ := filepath.Rel(dir, p)
			if old, ok := ix.paths[n]; !ok || rel < old {
				ix.paths[n] = rel
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index modules in %s: %w", dir, err)
	}
	return ix, nil
}

// Builtin reports whether name is compiled into the kernel.
func (ix *ModuleIndex) Builtin(name string) bool { return ix.builtin[canon(name)] }

// Len is the number of loadable modules indexed (0 for a directory with
// neither a modules.dep entry nor a .ko file).
func (ix *ModuleIndex) Len() int { return len(ix.paths) }

// BuiltinLen is the number of modules.builtin entries (a kernel built
// with everything in, e.g. by runner/kbuild, has only these).
func (ix *ModuleIndex) BuiltinLen() int { return len(ix.builtin) }

// Resolve returns the modules needed to load names, dependencies first, each
// once. Built-in names are skipped. The order is a depth-first post-order
// over sorted dependency lists, so it is deterministic and never hard-coded.
// A name that is neither a module nor built in is bad input (fault.ErrInput).
func (ix *ModuleIndex) Resolve(names []string) ([]Module, error) {
	mods, _, err := ix.resolve(names, false)
	return mods, err
}

// ResolveAvailable is Resolve for a caller that loads what the kernel has
// (a lab VM, whose kernel may build some of its modules in or lack optional
// ones): a requested name that is neither a module nor built in goes into
// missing (once, canonical name) instead of failing. An absent dependency
// of a module that is present is still bad input (fault.ErrInput): that module could
// not load.
func (ix *ModuleIndex) ResolveAvailable(names []string) (mods []Module, missing []string, err error) {
	return ix.resolve(names, true)
}

func (ix *ModuleIndex) resolve(names []string, tolerate bool) ([]Module, []string, error) {
	var out []Module
	var missing []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string, chain []string) error
	visit = func(n string, chain []string) error {
		switch state[n] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("module dependency cycle: %s -> %s", strings.Join(chain, " -> "), n)
		}
		rel, ok := ix.paths[n]
		if !ok {
			if ix.builtin[n] {
				state[n] = 2
				return nil
			}
			if tolerate && len(chain) == 0 {
				state[n] = 2
				missing = append(missing, n)
				return nil
			}
			how := "not in modules.dep and not built in"
			if !ix.fromDep {
				how = "no " + n + ".ko under it and not in modules.builtin"
			}
			if len(chain) > 0 {
				how += ", needed by " + strings.Join(chain, " -> ")
			}
			return inputErrorf(nil, "module %s not found in %s (%s); enable it in the kernel config (=m or =y) or pass the right --modules directory", n, ix.Dir, how)
		}
		state[n] = 1
		deps, err := ix.depsOf(n, rel)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, append(chain, n)); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, Module{Name: n, Rel: rel, Deps: deps})
		return nil
	}
	for _, n := range names {
		if err := visit(canon(n), nil); err != nil {
			return nil, nil, err
		}
	}
	return out, missing, nil
}

func (ix *ModuleIndex) depsOf(n, rel string) ([]string, error) {
	if d, ok := ix.deps[n]; ok || ix.fromDep {
		s := append([]string(nil), d...)
		sort.Strings(s)
		return s, nil
	}
	data, err := ix.ReadModule(rel)
	if err != nil {
		return nil, err
	}
	if UncompressedName(rel) != rel {
		ix.unpacked[rel] = data
	}
	info, err := modinfo(data)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", rel, err)
	}
	var deps []string
	for _, d := range strings.Split(info["depends"], ",") {
		if d = strings.TrimSpace(d); d != "" {
			deps = append(deps, canon(d))
		}
	}
	sort.Strings(deps)
	ix.deps[n] = deps
	return deps, nil
}

// ReadModule returns the uncompressed bytes of the module at rel (shared
// with the index: callers must not modify them): plain .ko, or .ko.gz,
// .ko.xz (Debian's 6.12 packages) or .ko.zst (Fedora, Arch), decompressed
// here so that any kernel loads them with finit_module, whether or not it
// has CONFIG_MODULE_DECOMPRESS.
func (ix *ModuleIndex) ReadModule(rel string) ([]byte, error) {
	if data, ok := ix.unpacked[rel]; ok {
		return data, nil
	}
	p := filepath.Join(ix.Dir, rel)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := Decompress(f, rel)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", p, err)
	}
	return data, nil
}

// Decompress reads a module file's bytes from r and undoes the compression
// its name says (.ko, .ko.gz, .ko.xz, .ko.zst). A corrupt stream is an
// error; other names are an InputError.
func Decompress(r io.Reader, name string) ([]byte, error) {
	switch {
	case strings.HasSuffix(name, ".ko"):
		return io.ReadAll(r)
	case strings.HasSuffix(name, ".ko.gz"):
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return b, nil
	case strings.HasSuffix(name, ".ko.xz"):
		// Kernel builds write xz modules with a CRC32 check and one
		// LZMA2 filter (xz -lvv on Debian's 6.12 modules: "CRC32",
		// "--lzma2=dict=1MiB"), which ulikunitz/xz reads; it has no BCJ
		// filter, so a hand-made BCJ stream gets an error.
		xr, err := xz.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		b, err := io.ReadAll(xr)
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		return b, nil
	case strings.HasSuffix(name, ".ko.zst"):
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		b, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return b, nil
	}
	return nil, inputErrorf(nil, "%s is not a kernel module (want .ko, .ko.gz, .ko.xz or .ko.zst)", name)
}

// UncompressedName is a module's file name once Decompress has undone its
// compression: "tun.ko.xz" -> "tun.ko".
func UncompressedName(rel string) string {
	for _, ext := range []string{".gz", ".xz", ".zst"} {
		if strings.HasSuffix(rel, ".ko"+ext) {
			return strings.TrimSuffix(rel, ext)
		}
	}
	return rel
}

// modinfo parses the .modinfo section (NUL-separated key=value strings).
func modinfo(ko []byte) (map[string]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, fmt.Errorf("not an ELF module: %w", err)
	}
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("no .modinfo section")
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			if _, dup := m[k]; !dup {
				m[k] = v
			}
		}
	}
	return m, nil
}

// sigMagic ends a module that carries an appended signature.
const sigMagic = "~Module signature appended~\n"

// StripSignature returns ko without its appended signature (struct
// module_signature + PKCS#7 blob + magic), or ko unchanged when it has none
// or the trailer does not parse. A kernel without CONFIG_MODULE_SIG_FORCE
// loads an unsigned module (and sets taint flag E); skipping the RSA check
// saves noticeable time per module under TCG.
func StripSignature(ko []byte) []byte {
	if !bytes.HasSuffix(ko, []byte(sigMagic)) {
		return ko
	}
	end := len(ko) - len(sigMagic)
	const sigInfo = 12 // algo, hash, id_type, signer_len, key_id_len, pad[3], sig_len (be32)
	if end < sigInfo {
		return ko
	}
	info := ko[end-sigInfo : end]
	sigLen := int(info[8])<<24 | int(info[9])<<16 | int(info[10])<<8 | int(info[11])
	n := end - sigInfo - sigLen - int(info[3]) - int(info[4])
	if sigLen <= 0 || n <= 0 || !bytes.HasPrefix(ko, []byte("\x7fELF")) {
		return ko
	}
	return ko[:n]
}
