package kbuild

// Modules rebuilt out of tree for Debian's packaged kernel, cached by
// content: the linux-source and headers versions, the compiler, the
// patches and the modules.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/vmimages"
)

// ModBuild is the modules rebuilt for one kernel: Debian's Release with
// Modules loaded in place of its packaged ones.
type ModBuild struct {
	Label   string              `json:"-"`
	Release string              `json:"release"`
	Headers string              `json:"headers"` // linux-headers-RELEASE VERSION
	Source  string              `json:"source"`  // linux-source-SERIES VERSION
	Modules []vmimages.ModuleID `json:"modules"`
	Patches []PatchRef          `json:"patches,omitempty"`
	Key     string              `json:"key"`
	Seconds float64             `json:"build_s"`
	// Dir is the cache entry; Script its build.sh, the commands that
	// rebuild the modules from the Debian packages.
	Dir    string `json:"-"`
	Script string `json:"-"`
	Cached bool   `json:"-"`
}

// PatchRef names an applied patch.
type PatchRef struct {
	File    string `json:"file"`
	Subject string `json:"subject,omitempty"`
	SHA256  string `json:"sha256"`
}

// ModSpec is a module build: the modules of the pristine linux-source
// tree (at package version Version) to rebuild against h, with patches.
type ModSpec struct {
	Label   string
	Tree    string
	Series  string // "6.1"
	Version string
	Headers *Headers
	Modules []ModTarget
	Patches []Patch
}

// modCompiler is the compiler Debian's headers build modules with (their
// .kernelvariables: gcc-12 for 6.1), by its --version line: part of the
// cache key. A compiler not installed is a capability error naming it.
func modCompiler(h *Headers) (string, error) {
	for _, l := range strings.Split(readString(filepath.Join(h.Dir, ".kernelvariables")), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "CC" && f[1] == "=" {
			cc := strings.TrimPrefix(f[len(f)-1], "$(CROSS_COMPILE)")
			out, err := (proc.Real{}).Run(context.Background(), proc.Cmd{Argv: []string{cc, "--version"}})
			if err != nil {
				return "", fault.Capability("%s, which Debian's kernel %s was built with, does not run (%v): install it (apt-get install %s; make deps does on Debian 12)", cc, h.Release, err, cc)
			}
			first, _, _ := strings.Cut(string(out), "\n")
			return strings.TrimSpace(first), nil
		}
	}
	return "gcc (unknown)", nil
}

// key is the cache key of a module build.
func (s *ModSpec) key(compiler string) string {
	h := sha256.New()
	fmt.Fprintf(h, "vnetbench modules 1\n%s %s\n%s %s\n%s\n", s.Series, s.Version, s.Headers.Release, s.Headers.Version, compiler)
	for _, m := range s.Modules {
		fmt.Fprintf(h, "module %s %s %s\n", m.Name, m.Dir, m.File)
	}
	for _, p := range s.Patches {
		fmt.Fprintf(h, "patch %s\n", p.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// BuildModules rebuilds s's modules, or returns them from the cache
// (DIR/mod/KEY/: the .ko files, modules.json, build.sh, build.log). A
// build is written to a temporary directory and renamed when complete.
func (b *Builder) BuildModules(ctx context.Context, s ModSpec) (*ModBuild, error) {
	b.defaults()
	compiler, err := modCompiler(s.Headers)
	if err != nil {
		return nil, err
	}
	key := s.key(compiler)
	root := filepath.Join(b.Dir, "mod")
	final := filepath.Join(root, key)
	if mb, err := loadModBuild(final); err == nil {
		mb.Label, mb.Cached = s.Label, true
		return mb, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(root, "."+key+".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if mb, err := loadModBuild(final); err == nil {
		mb.Label, mb.Cached = s.Label, true
		return mb, nil
	}
	start := time.Now()
	b.logf("kernel %s: building modules %s out of tree for Debian's %s", s.Label, strings.Join(targetNames(s.Modules), ", "), s.Headers.Release)
	tmp, err := os.MkdirTemp(root, ".tmp-"+key+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	mb, err := b.modBuild(ctx, s, tmp)
	if err != nil {
		return nil, err
	}
	mb.Key, mb.Seconds = key, time.Since(start).Seconds()
	if err := writeModBuild(tmp, mb); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("kernel %s: install the modules into the cache: %w", s.Label, err)
	}
	b.logf("kernel %s: modules %s built in %s", s.Label, strings.Join(targetNames(s.Modules), ", "), time.Since(start).Round(time.Second))
	out, err := loadModBuild(final)
	if err != nil {
		return nil, err
	}
	out.Label = s.Label
	return out, nil
}

// modBuild builds s's modules in a work directory and copies them,
// stripped of debug information, into out.
func (b *Builder) modBuild(ctx context.Context, s ModSpec, out string) (*ModBuild, error) {
	work, err := os.MkdirTemp(Cache(b.Dir).tmpRoot(), "modbuild-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	var touched []string
	for _, p := range s.Patches {
		touched = union(touched, Files(p.Data))
	}
	var dirs []string
	for _, m := range s.Modules {
		dirs = append(dirs, m.Dir)
	}
	sd, err := sideMaker{b.Exec, b.Jobs}.makeSide(ctx, work, s.Tree, s.Headers, dirs, touched, s.Patches)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", s.Label, err)
	}
	log, err := os.Create(filepath.Join(out, "build.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	byDir := map[string][]string{}
	for _, m := range s.Modules {
		byDir[m.Dir] = append(byDir[m.Dir], m.File)
	}
	script := newModScript(s, sd)
	for _, dir := range sortedKeys(byDir) {
		script.make(dir, byDir[dir])
		if err := sd.kmake(ctx, dir, byDir[dir], log); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("kernel %s: module build interrupted: %w", s.Label, ctx.Err())
			}
			log.Sync()
			return nil, &BuildError{Label: s.Label, Log: log.Name(), Errors: errorLines(readString(log.Name())), Err: err}
		}
	}
	mb := &ModBuild{Release: s.Headers.Release, Headers: "linux-headers-" + s.Headers.Release + " " + s.Headers.Version,
		Source: "linux-source-" + s.Series + " " + s.Version}
	for _, p := range s.Patches {
		mb.Patches = append(mb.Patches, PatchRef{File: p.Name(), Subject: p.Subject, SHA256: p.SHA256})
	}
	for _, m := range s.Modules {
		dst := filepath.Join(out, m.File)
		if _, err := b.Exec.Run(ctx, proc.Cmd{Argv: []string{"strip", "--strip-debug", "-o", dst, filepath.Join(sd.src, m.Dir, m.File)}}); err != nil {
			return nil, fmt.Errorf("kernel %s: strip %s: %w", s.Label, m.File, err)
		}
		id, err := vmimages.ReadModuleID(dst)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(id.Vermagic, s.Headers.Release+" ") {
			return nil, fmt.Errorf("kernel %s: %s has vermagic %q, not Debian's %s", s.Label, m.File, id.Vermagic, s.Headers.Release)
		}
		id.File = m.File
		mb.Modules = append(mb.Modules, *id)
		script.check(m, id)
	}
	if err := os.WriteFile(filepath.Join(out, "build.sh"), []byte(script.String()), 0o755); err != nil {
		return nil, err
	}
	return mb, nil
}

func writeModBuild(dir string, mb *ModBuild) error {
	data, err := json.MarshalIndent(mb, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "modules.json"), append(data, '\n'), 0o644)
}

// loadModBuild reads a finished cache entry; its modules' files become
// absolute paths.
func loadModBuild(dir string) (*ModBuild, error) {
	data, err := os.ReadFile(filepath.Join(dir, "modules.json"))
	if err != nil {
		return nil, err
	}
	var mb ModBuild
	if err := json.Unmarshal(data, &mb); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	for i := range mb.Modules {
		mb.Modules[i].File = filepath.Join(dir, path.Base(mb.Modules[i].File))
		if !exists(mb.Modules[i].File) {
			return nil, fmt.Errorf("%s: incomplete cache entry (no %s)", dir, mb.Modules[i].File)
		}
	}
	mb.Dir, mb.Script = dir, filepath.Join(dir, "build.sh")
	return &mb, nil
}

func targetNames(ms []ModTarget) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
