package kbuild

// The two sides of a module build (stock and patched): the source
// directories hard-linked from the pristine tree with the touched files
// copied and patched, a KDIR with the touched headers, make in kbuild's
// external-module mode, and kbuild's dependency files read back.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/proc"
)

// side is one side of a module build under its directory: src/ holds the
// tree-relative source directories it builds in, kdir the headers' KDIR
// (a private copy when the series touches a header there).
type side struct {
	m      sideMaker
	dir    string
	src    string
	kdir   string
	common string // the common headers of kdir (srctree)
	hroot  string // where kdir's packages are unpacked
}

// globalHeader reports whether a tree-relative header lies where the
// common headers package has its copy (include/, arch/x86/include/).
func globalHeader(rel string) bool {
	return strings.HasSuffix(rel, ".h") && (strings.HasPrefix(rel, "include/") || strings.HasPrefix(rel, "arch/x86/include/"))
}

// commonDir is the common headers directory (srctree) of a KDIR.
func commonDir(kdir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(kdir, "Makefile"))
	if err != nil {
		return "", err
	}
	inc, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "include ")
	if !ok {
		return "", fmt.Errorf("%s/Makefile: no include line", kdir)
	}
	if !filepath.IsAbs(inc) {
		inc = filepath.Join(kdir, inc)
	}
	return filepath.Dir(inc), nil
}

// errMismatch marks a linux-source whose header differs from the
// package's copy: the two do not come from one version.
type errMismatch struct{ file, pkg string }

func (e *errMismatch) Error() string {
	return fmt.Sprintf("linux-source's %s differs from %s's copy: the source and the headers are not of one version", e.file, e.pkg)
}

// sideMaker makes the sides of module builds: it runs cp, git apply and
// make through exec, make with jobs jobs.
type sideMaker struct {
	exec proc.Executor
	jobs int
}

// makeSide prepares a side in dir: dirs (tree-relative, recursive) hard-
// linked from tree, the touched files copied (hard links are never written
// through) and the patches applied to them, and a KDIR whose common
// headers hold the touched global headers (for the stock side they must
// equal the package's copies).
func (m sideMaker) makeSide(ctx context.Context, dir, tree string, h *Headers, dirs, touched []string, patches []Patch) (*side, error) {
	for _, f := range touched {
		// A touched file is removed and written under dir by its name:
		// one that leads out of dir would be removed outside it.
		if !filepath.IsLocal(f) {
			return nil, fault.Input("a patch names %s, a file outside the kernel tree (git apply refuses it too): fix the patch's file names", f)
		}
	}
	s := &side{m: m, dir: dir, src: filepath.Join(dir, "src"), kdir: h.Dir, hroot: h.Root}
	for _, d := range topDirs(dirs) {
		dst := filepath.Join(s.src, d)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if _, err := m.exec.Run(ctx, proc.Cmd{Argv: []string{"cp", "-al", "--", filepath.Join(tree, d), dst}}); err != nil {
			return nil, fmt.Errorf("link %s: %w", d, err)
		}
	}
	var include []string
	for _, f := range touched {
		if !Feeds(f) {
			continue
		}
		include = append(include, "--include="+f)
		dst := filepath.Join(s.src, f)
		os.Remove(dst)
		data, err := os.ReadFile(filepath.Join(tree, f))
		if os.IsNotExist(err) {
			continue // a file the series creates
		}
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, err
		}
	}
	for i, p := range patches {
		pf := filepath.Join(dir, fmt.Sprintf("%04d.patch", i))
		if err := os.WriteFile(pf, p.Data, 0o644); err != nil {
			return nil, err
		}
		argv := append([]string{"git", "apply", "--whitespace=nowarn"}, include...)
		if _, err := m.exec.Run(ctx, proc.Cmd{Argv: append(argv, pf), Dir: s.src, Env: []string{"GIT_CEILING_DIRECTORIES=" + dir}}); err != nil {
			return nil, fmt.Errorf("patch %s does not apply to linux-source: %w", p.Name(), err)
		}
	}
	return s, s.headers(ctx, h, touched, len(patches) == 0)
}

// headers gives s a private KDIR when the series touches global
// headers: a hard-linked copy of the headers' packages with the side's
// version of each touched header.
func (s *side) headers(ctx context.Context, h *Headers, touched []string, stock bool) error {
	var hs []string
	for _, f := range touched {
		if globalHeader(f) {
			hs = append(hs, f)
		}
	}
	var err error
	if len(hs) == 0 {
		s.common, err = commonDir(h.Dir)
		return err
	}
	root := filepath.Join(s.dir, "headers")
	if _, err := s.m.exec.Run(ctx, proc.Cmd{Argv: []string{"cp", "-al", "--", h.Root, root}}); err != nil {
		return fmt.Errorf("link the headers: %w", err)
	}
	s.kdir, s.hroot = filepath.Join(root, strings.TrimPrefix(h.Dir, h.Root)), root
	pkgCommon, err := commonDir(h.Dir)
	if err != nil {
		return err
	}
	s.common = filepath.Join(root, strings.TrimPrefix(pkgCommon, h.Root))
	for _, f := range hs {
		dst := filepath.Join(s.common, f)
		pkg, perr := os.ReadFile(dst)
		data, derr := os.ReadFile(filepath.Join(s.src, f))
		if stock && (perr == nil) != (derr == nil) || stock && perr == nil && string(pkg) != string(data) {
			return &errMismatch{file: f, pkg: "linux-headers-" + h.Release}
		}
		os.Remove(dst)
		if derr != nil {
			continue // the series deletes it
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// topDirs drops directories that lie within another of dirs, sorted.
func topDirs(dirs []string) []string {
	ds := slices.Clone(dirs)
	slices.Sort(ds)
	ds = slices.Compact(ds)
	var out []string
	for _, d := range ds {
		if len(out) > 0 && (d == out[len(out)-1] || strings.HasPrefix(d, out[len(out)-1]+"/")) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// kmake runs make in kbuild's external-module mode for the tree-relative
// directory dir of side s: targets such as tun.ko, net.i or sch_generic.o.
// srcversion is added to every module (Debian's config computes it only
// for modules with a MODULE_VERSION): the running module then tells the
// rebuilt one from the packaged one. Paths in the objects read as in the
// tree's own build (drivers/net/tun.c) and the installed headers'
// (/usr/src/linux-headers-...), so the result does not depend on where
// the cache is: reproduce.sh's build gives the same bytes.
func (s *side) kmake(ctx context.Context, dir string, targets []string, log io.Writer) error {
	argv := append(kmakeArgs(s.kdir, filepath.Join(s.src, dir), s.src, s.hroot, s.m.jobs), targets...)
	_, err := s.m.exec.Run(ctx, proc.Cmd{Argv: argv, Stdout: log, Stderr: log, Env: []string{"LC_ALL=C"}})
	return err
}

// kmakeArgs is make's argv for kmake (without targets).
func kmakeArgs(kdir, mdir, src, hroot string, jobs int) []string {
	return []string{"make", "-C", kdir, "M=" + mdir, "-j" + strconv.Itoa(jobs), "CONFIG_MODULE_SRCVERSION_ALL=y",
		"KCFLAGS=-ffile-prefix-map=" + src + "/= -ffile-prefix-map=" + hroot + "/=/"}
}

// objsProbe is the target that makes kbuild list, for one directory of a
// side, the objects its Makefile builds with the config: built in
// (real-obj-y) and into modules (real-obj-m), composite objects replaced
// by their parts, as kbuild computes them. (A single-target suffix, so
// that make hands it to the directory's Makefile.)
const objsProbe = "vnb-objs.lds"

// probeObjs puts a Kbuild file in the side's directory dir that includes
// the directory's own (Kbuild or Makefile) and adds the objsProbe rule.
// The side's copies are hard links: the original is replaced, never
// written through.
func (s *side) probeObjs(dir string) error {
	d := filepath.Join(s.src, dir)
	orig := filepath.Join(d, "Makefile")
	if kb := filepath.Join(d, "Kbuild"); exists(kb) {
		data, err := os.ReadFile(kb)
		if err != nil {
			return err
		}
		orig = filepath.Join(d, ".vnb-Kbuild")
		if err := os.WriteFile(orig, data, 0o644); err != nil {
			return err
		}
		os.Remove(kb)
	}
	probe := "include " + orig + "\n$(obj)/" + objsProbe + ": FORCE\n\t@printf '%s\\n' 'y $(real-obj-y)' 'm $(real-obj-m)' > $@\n"
	return os.WriteFile(filepath.Join(d, "Kbuild"), []byte(probe), 0o644)
}

// readObjs reads what objsProbe listed for dir: tree-relative object ->
// "y" (built in) or "m" (part of a module).
func (s *side) readObjs(dir string, into map[string]string) error {
	b, err := os.ReadFile(filepath.Join(s.src, dir, objsProbe))
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		kind, objs, ok := strings.Cut(l, " ")
		if !ok || (kind != "y" && kind != "m") {
			continue
		}
		for _, o := range strings.Fields(objs) {
			if rel, ok := strings.CutPrefix(o, s.src+"/"); ok {
				into[rel] = kind
			}
		}
	}
	return nil
}

// objInfo is what kbuild's dependency file of one target says: whether it
// was compiled as part of a module (-DMODULE) and which (KBUILD_MODNAME),
// and the tree-relative files it read.
type objInfo struct {
	Module bool
	Name   string
	Deps   []string
}

var modnameRe = lazyre.New(`-DKBUILD_MODNAME='"([^"]+)"'`)

// readCmd reads the .TARGET.cmd kbuild wrote for target in the side's
// directory dir; paths in it are mapped back to the tree (the side's
// sources and common headers); generated files and config stamps are
// left out.
func (s *side) readCmd(dir, target string) (*objInfo, error) {
	p := filepath.Join(s.src, dir, filepath.Dir(target), "."+filepath.Base(target)+".cmd")
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	oi := &objInfo{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	inDeps := false
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "cmd_"):
			oi.Module = strings.Contains(l, " -DMODULE ")
			if m := modnameRe().FindStringSubmatch(l); m != nil {
				oi.Name = m[1]
			}
		case strings.HasPrefix(l, "source_"):
			if _, src, ok := strings.Cut(l, ":= "); ok {
				oi.addDep(s, strings.TrimSpace(src))
			}
		case strings.HasPrefix(l, "deps_"):
			inDeps = true
		case inDeps && strings.HasPrefix(l, " "):
			d := strings.TrimSuffix(strings.TrimSpace(l), " \\")
			if !strings.HasPrefix(d, "$(") {
				oi.addDep(s, d)
			}
		default:
			inDeps = false
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if oi.Name == "" {
		return nil, fmt.Errorf("%s: no KBUILD_MODNAME in its command", p)
	}
	return oi, nil
}

func (oi *objInfo) addDep(s *side, p string) {
	for _, root := range []string{s.src, s.common} {
		if rel, ok := strings.CutPrefix(p, root+"/"); ok {
			oi.Deps = append(oi.Deps, rel)
			return
		}
	}
}
