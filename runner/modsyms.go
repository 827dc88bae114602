package runner

import (
	"bufio"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/vmimages"
)

// ModulesEnvVar names, in a lab VM's run, the running kernel's modules
// directory (its lib/modules/RELEASE on the host, seen at the same path
// through the lab's host root share).
const ModulesEnvVar = "VNETBENCH_LAB_MODULES"

// moduleSymbols lets perf report name the functions of the running
// kernel's loaded modules, once per run (the first perf report calls it).
//
// Why pktgen frames read "[pktgen] 0x30c5" in a lab VM: perf finds a
// module's symbols in its file under /lib/modules/`uname -r`, which the
// lab's root (the host's, read-only) does not have; the fallback, the
// module's lines of /proc/kallsyms, is used only when perf happens to load
// the kernel's own symbols before the module's (a module it tried first is
// marked loaded, with no symbols). perf also looks a module up by its
// build-id in its build-id cache (~/.debug, on the lab's tmpfs), and
// knows each module's build-id from /sys/module/NAME/notes. So the loaded
// modules' files from the lab kernel's modules directory go into that
// cache (perf buildid-cache --add), decompressed first where they are
// .ko.xz (.gz, .zst): the cache wants ELF.
func (r *runState) moduleSymbols(ctx context.Context) {
	r.modSymsOnce.Do(func() {
		if os.Getenv(ModulesEnvVar) == "" {
			return // on a host, perf finds /lib/modules itself
		}
		addModuleSymbols(ctx, r.exec, r.w.Root(), "/proc/modules", r.logf)
	})
}

// addModuleSymbols is moduleSymbols for the run directory run, with the
// kernel's module list read from procModules.
func addModuleSymbols(ctx context.Context, ex proc.Executor, run *safefs.Dir, procModules string, logf func(string, ...any)) {
	dir := os.Getenv(ModulesEnvVar)
	if dir == "" {
		return // on a host, perf finds /lib/modules itself
	}
	// The modules as the kernel listed them, beside the run's results
	// (through the run directory's root: a link planted there by hand is
	// not followed): which ones perf could name, at which addresses.
	if b, err := os.ReadFile(procModules); err == nil {
		if err := run.WriteFile("proc-modules.txt", b, 0o644); err != nil {
			logf("warning: %v", err)
		}
	}
	files, err := loadedModuleFiles(dir, procModules)
	if err == nil && len(files) > 0 {
		var elf []string
		elf, err = elfModules(files)
		if err == nil {
			_, err = ex.Run(ctx, proc.Cmd{Argv: []string{"perf", "buildid-cache", "--add", strings.Join(elf, ",")}})
		}
		if err == nil {
			logf("perf report: symbols of the %d loaded modules from %s", len(files), dir)
		}
	}
	if err != nil {
		logf("warning: module symbols for perf report: %v (functions in modules show as [MODULE] 0xADDRESS)", err)
	}
}

// loadedModuleFiles returns the files under dir (a lib/modules/RELEASE
// directory) of the modules procModules (/proc/modules) lists.
func loadedModuleFiles(dir, procModules string) ([]string, error) {
	f, err := os.Open(procModules)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	loaded := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, _, ok := strings.Cut(sc.Text(), " "); ok {
			loaded[name] = true
		}
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		base := d.Name()
		i := strings.Index(base, ".ko")
		if i <= 0 {
			return nil
		}
		if loaded[strings.ReplaceAll(base[:i], "-", "_")] {
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// elfModules returns files with each compressed one (.ko.xz, ...)
// replaced by an uncompressed copy in a temporary directory (left for the
// run: perf's cache copies from it while adding).
func elfModules(files []string) ([]string, error) {
	var tmp string
	out := make([]string, 0, len(files))
	for _, p := range files {
		if strings.HasSuffix(p, ".ko") {
			out = append(out, p)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		b, err := vmimages.Decompress(f, p)
		f.Close()
		if err != nil {
			return nil, err
		}
		if tmp == "" {
			if tmp, err = os.MkdirTemp("", "vnb-modsyms-"); err != nil {
				return nil, err
			}
		}
		name := filepath.Join(tmp, filepath.Base(p[:strings.Index(p, ".ko")+3]))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}
