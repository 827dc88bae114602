package labvm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/cpio"
	"github.com/vnetbench/vnetbench/vmimages/vminit"
)

// Initramfs describes the initramfs of a lab VM or nested guest: the
// vnetbench binary as /init, the modules it loads and /lab.json.
type Initramfs struct {
	Binary  string   // the vnetbench binary (static, or with its libraries added)
	Modules string   // the kernel's /lib/modules/<release> directory ("" = none)
	Load    []string // module names to load (dependencies are added)
	// KVM adds kvm and both vendor modules (kvm_intel, kvm_amd) for lab
	// init to load the one the CPU shows (vmx, svm), so that the lab's
	// nested guests can use KVM: set it for a lab VM under KVM. Under TCG
	// the lab's CPU shows no SVM (qemu.Config.NoSVM): leave it off.
	KVM bool
	// Replace are module files (.ko) loaded in place of the kernel's
	// modules of the same name (.modinfo's name=), and loaded whether or
	// not Load names them; init checks each one running (Check).
	Replace []string
	Config  InitConfig // Modules, Missing, KVM and Check are filled by Build
}

// replacements reads the replacement modules' identities by name and
// returns the names to load: load, then the replacements and the modules
// they depend on (a rebuilt module may need one its packaged build did
// not).
func replacements(files, load []string) (map[string]*vmimages.ModuleID, []string, error) {
	repl := map[string]*vmimages.ModuleID{}
	var extra []string
	for _, f := range files {
		id, err := vmimages.ReadModuleID(f)
		if err != nil {
			return nil, nil, inputErrorf("replacement module %s: %v", f, err)
		}
		name := strings.ReplaceAll(id.Name, "-", "_")
		repl[name] = id
		for _, d := range strings.Split(id.Depends, ",") {
			if d != "" {
				extra = append(extra, d)
			}
		}
		extra = append(extra, name)
	}
	out := slices.Clone(load)
	for _, n := range extra {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return repl, out, nil
}

// Build writes the initramfs to path (an uncompressed newc cpio: the
// kernel unpacks it without decompressing) and returns the filled config.
func (ir Initramfs) Build(path string) (*InitConfig, error) {
	var a cpio.Archive
	// A dynamically linked binary brings its interpreter and libraries.
	if _, err := vmimages.AddExecutable(&a, "init", ir.Binary); err != nil {
		return nil, fmt.Errorf("vnetbench binary as /init: %w", err)
	}
	a.AddDir("dev", 0o755)
	a.AddCharDev("dev/console", 0o600, 5, 1)
	a.AddDir("proc", 0o755)
	a.AddDir("sys", 0o755)
	a.AddDir("run", 0o755)
	a.AddDir("tmp", 0o1777)
	cfg := ir.Config
	cfg.Modules, cfg.KVM, cfg.Check = nil, nil, nil
	repl, load, err := replacements(ir.Replace, ir.Load)
	if err != nil {
		return nil, err
	}
	if ir.Modules != "" && (len(load) > 0 || ir.KVM) {
		ix, order, missing, err := resolveModules(ir.Modules, load)
		if err != nil {
			return nil, err
		}
		cfg.Missing = missing
		// add puts a module into the archive (decompressed) and returns
		// its path there: a replacement's file instead of the kernel's.
		add := func(m vmimages.Module) (string, error) {
			var data []byte
			var err error
			if r, ok := repl[m.Name]; ok {
				data, err = os.ReadFile(r.File)
			} else {
				data, err = ix.ReadModule(m.Rel) // compressed modules come out uncompressed
			}
			if err != nil {
				return "", fmt.Errorf("read module %s: %w", m.Name, err)
			}
			p := "lib/modules/" + vmimages.UncompressedName(filepath.Base(m.Rel))
			a.AddFile(p, 0o644, data)
			return "/" + p, nil
		}
		have := map[string]bool{}
		for _, m := range order {
			p, err := add(m)
			if err != nil {
				return nil, err
			}
			cfg.Modules = append(cfg.Modules, p)
			have[m.Name] = true
			if r, ok := repl[m.Name]; ok {
				cfg.Check = append(cfg.Check, vminit.ModuleCheck{Name: m.Name, SrcVersion: r.SrcVersion, BuildID: r.BuildID})
			}
		}
		for n := range repl {
			if !have[n] {
				return nil, inputErrorf("module %s (%s) replaces none of %s's modules: the kernel has no module of that name", n, repl[n].File, ir.Modules)
			}
		}
		if ir.KVM {
			perVendor, missing, err := kvmFiles(ix, have)
			if err != nil {
				return nil, err
			}
			cfg.Missing = append(cfg.Missing, missing...)
			cfg.KVM = map[string][]string{}
			for v, mods := range perVendor {
				paths := []string{}
				for _, m := range mods {
					p, err := add(m)
					if err != nil {
						return nil, err
					}
					paths = append(paths, p)
				}
				cfg.KVM[v] = paths
			}
		}
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	a.AddFile("lab.json", 0o644, js)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := a.WriteTo(w); err != nil {
		f.Close()
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	return &cfg, f.Close()
}
