package lab

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LabModules are the modules a lab VM loads (missing ones that are built
// in are fine): the 9p stack to mount the host root, then what the
// experiment needs on the lab's side (tun/tap, vhost-net, pktgen) and what
// a nested guest's NIC needs.
var LabModules = []string{
	"virtio_pci", "virtio_console", "9pnet_virtio", "9p",
	"tun", "tap", "vhost_iotlb", "vhost", "vhost_net", "pktgen",
	"virtio_net",
}

// GuestModules are the modules a nested guest loads to bring up its NIC.
var GuestModules = []string{"virtio_pci", "virtio_net"}

// Module is one kernel module file to load.
type Module struct {
	Name string // normalized name (dashes as underscores)
	Path string // relative to the modules directory, e.g. kernel/net/core/pktgen.ko
}

func normName(s string) string {
	s = filepath.Base(s)
	for _, ext := range []string{".ko", ".ko.xz", ".ko.gz", ".ko.zst"} {
		if strings.HasSuffix(s, ext) {
			s = strings.TrimSuffix(s, ext)
			break
		}
	}
	return strings.ReplaceAll(s, "-", "_")
}

// ModuleSet indexes a kernel's modules directory.
type ModuleSet struct {
	Dir     string
	paths   map[string]string   // name -> relative path
	deps    map[string][]string // name -> dependency names (nil = unknown yet)
	builtin map[string]bool
}

// OpenModules indexes dir (a /lib/modules/<release> directory). It reads
// modules.dep when present (a packaged kernel unpacked with dpkg-deb has
// none: then each module's .modinfo "depends=" is read) and
// modules.builtin.
func OpenModules(dir string) (*ModuleSet, error) {
	ms := &ModuleSet{Dir: dir, paths: map[string]string{}, deps: map[string][]string{}, builtin: map[string]bool{}}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			ms.builtin[normName(l)] = true
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.dep")); err == nil && len(b) > 0 {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			mod, rest, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			n := normName(mod)
			ms.paths[n] = mod
			var d []string
			for _, dep := range strings.Fields(rest) {
				d = append(d, normName(dep))
			}
			ms.deps[n] = append([]string{}, d...)
		}
		return ms, nil
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() && strings.Contains(e.Name(), ".ko") {
			rel, _ := filepath.Rel(dir, p)
			ms.paths[normName(e.Name())] = rel
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index modules in %s: %w", dir, err)
	}
	if len(ms.paths) == 0 {
		return nil, &InputError{fmt.Sprintf("no kernel modules under %s; pass the kernel's /lib/modules/<release> directory as modules:", dir)}
	}
	return ms, nil
}

func (ms *ModuleSet) depsOf(name string) ([]string, error) {
	if d, ok := ms.deps[name]; ok {
		return d, nil
	}
	rel := ms.paths[name]
	f, err := elf.Open(filepath.Join(ms.Dir, rel))
	if err != nil {
		return nil, fmt.Errorf("module %s: %w (compressed modules are not supported: unpack them or run depmod)", rel, err)
	}
	defer f.Close()
	var d []string
	if sec := f.Section(".modinfo"); sec != nil {
		data, err := sec.Data()
		if err != nil {
			return nil, fmt.Errorf("module %s: read .modinfo: %w", rel, err)
		}
		for _, kv := range bytes.Split(data, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok && len(v) > 0 {
				for _, n := range strings.Split(string(v), ",") {
					d = append(d, normName(n))
				}
			}
		}
	}
	ms.deps[name] = d
	return d, nil
}

// Resolve returns the modules to load for names, dependencies first, each
// once. Names that are built into the kernel are skipped; names that are
// neither modules nor built in are returned in missing.
func (ms *ModuleSet) Resolve(names []string) (order []Module, missing []string, err error) {
	seen := map[string]bool{}
	var visit func(n string, stack []string) error
	visit = func(n string, stack []string) error {
		if seen[n] {
			return nil
		}
		for _, s := range stack {
			if s == n {
				return fmt.Errorf("module dependency cycle: %s", strings.Join(append(stack, n), " -> "))
			}
		}
		rel, ok := ms.paths[n]
		if !ok {
			seen[n] = true
			if !ms.builtin[n] {
				missing = append(missing, n)
			}
			return nil
		}
		deps, err := ms.depsOf(n)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, append(stack, n)); err != nil {
				return err
			}
		}
		seen[n] = true
		order = append(order, Module{Name: n, Path: rel})
		return nil
	}
	for _, n := range names {
		if err := visit(normName(n), nil); err != nil {
			return nil, nil, err
		}
	}
	return order, missing, nil
}
