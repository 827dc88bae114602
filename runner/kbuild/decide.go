package kbuild

// Whether a series can be tested by rebuilding only modules of Debian's
// packaged kernel: which kernel objects the files it touches feed, read
// from kbuild's own dependency files with Debian's config.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// ModTarget is one module to rebuild: its name (KBUILD_MODNAME, "tun"),
// its file's name as the tree's Makefile lists it ("tun.ko") and the
// tree-relative directory of that Makefile.
type ModTarget struct {
	Name string `json:"name"`
	File string `json:"file"`
	Dir  string `json:"dir"`
}

// Decision says how a series (patches on one linux-source) gets tested:
// by rebuilding Modules out of tree for Debian's kernel, or, with Full
// set, by a full build of the tree, Full saying why.
type Decision struct {
	Touched []string    `json:"touched"`
	Modules []ModTarget `json:"modules,omitempty"`
	// Compared are built-in objects that include a touched header and
	// compile to the same text and data with and without the series.
	Compared []string `json:"compared,omitempty"`
	// Ignored are touched files that feed no x86 kernel object.
	Ignored []string `json:"ignored,omitempty"`
	// Unshipped are modules a touched file feeds that Debian's kernel
	// does not ship (their directory is not built): nothing to load.
	Unshipped []string `json:"unshipped,omitempty"`
	Full      string   `json:"full,omitempty"`
	Seconds   float64  `json:"decide_s"`
	// Release and Version are the Debian kernel and package version it
	// was decided for (set by PlanModules).
	Release string `json:"release,omitempty"`
	Version string `json:"version,omitempty"`
	// Cached: read from the cache, not decided now.
	Cached bool `json:"-"`
}

// Names lists the modules' names.
func (d *Decision) Names() []string {
	var out []string
	for _, m := range d.Modules {
		out = append(out, m.Name)
	}
	return out
}

// maxCandidates bounds how many sources that may include a touched header
// are checked one by one (each preprocessed by kbuild, the built-in ones
// compiled twice); above it the full build is the faster way.
const maxCandidates = 150

// packaged is a Debian kernel's modules: modules.order's entries by the
// directory they were built in and their KBUILD_MODNAME.
type packaged map[string]string // "drivers/net\x00tun" -> "tun.ko"

func readPackaged(modDir string) (packaged, error) {
	b, err := os.ReadFile(filepath.Join(modDir, "modules.order"))
	if err != nil {
		return nil, fmt.Errorf("the packaged kernel's modules.order: %w", err)
	}
	p := packaged{}
	for _, l := range strings.Fields(string(b)) {
		rel, ok := strings.CutPrefix(l, "kernel/")
		if !ok {
			continue
		}
		file := path.Base(rel)
		name := strings.ReplaceAll(strings.TrimSuffix(strings.TrimSuffix(file, ".xz"), ".ko"), "-", "_")
		p[path.Dir(rel)+"\x00"+name] = strings.TrimSuffix(file, ".xz")
	}
	return p, nil
}

// decider holds what deciding needs: the pristine tree, the headers, the
// packaged modules, the patches and a work directory.
type decider struct {
	b       *Builder
	tree    string
	h       *Headers
	pkg     packaged
	patches []Patch
	work    string
	log     io.Writer
	d       *Decision
}

// Decide classifies the files patches touch: C sources by the object
// kbuild compiles them into with Debian's config (kbuild's .cmd file of
// their preprocessing: -DMODULE and KBUILD_MODNAME), headers by every
// source whose dependency file names them (a textual scan of #include
// lines first, a superset). All must feed modules Debian ships, except
// built-in objects including a touched header that compile to the same
// text and data both ways. tree is the pristine linux-source, modDir the
// packaged kernel's /lib/modules/RELEASE.
func (b *Builder) Decide(ctx context.Context, tree string, h *Headers, modDir string, patches []Patch, log io.Writer) (*Decision, error) {
	b.defaults()
	start := time.Now()
	pkg, err := readPackaged(modDir)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(Cache(b.Dir).tmpRoot(), "decide-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	dc := &decider{b: b, tree: tree, h: h, pkg: pkg, patches: patches, work: work, log: log, d: &Decision{}}
	if err := dc.run(ctx); err != nil {
		return nil, err
	}
	dc.d.Seconds = time.Since(start).Seconds()
	return dc.d, nil
}

// includeCache remembers trees' #include scans: tree -> its index.
type includeCache map[string]includeIndex

// scan is scanIncludes of tree, once per cache.
func (c *includeCache) scan(tree string) (includeIndex, error) {
	if ix, ok := (*c)[tree]; ok {
		return ix, nil
	}
	ix, err := scanIncludes(tree)
	if err != nil {
		return nil, err
	}
	if *c == nil {
		*c = includeCache{}
	}
	(*c)[tree] = ix
	return ix, nil
}

func (dc *decider) full(format string, a ...any) error {
	dc.d.Full = fmt.Sprintf(format, a...)
	return nil
}

func (dc *decider) run(ctx context.Context) error {
	d := dc.d
	for _, p := range dc.patches {
		for _, f := range Files(p.Data) {
			if !slices.Contains(d.Touched, f) {
				d.Touched = append(d.Touched, f)
			}
		}
	}
	var srcs, headers []string
	for _, f := range d.Touched {
		base := path.Base(f)
		switch {
		case !Feeds(f):
			d.Ignored = append(d.Ignored, f)
		case strings.HasPrefix(base, "Kconfig") || base == "Makefile" || base == "Kbuild" || strings.HasSuffix(base, ".mk"):
			return dc.full("%s is a Kconfig or Makefile: the series may change the config or what is built", f)
		case strings.HasSuffix(f, ".c") || strings.HasSuffix(f, ".S"):
			srcs = append(srcs, f)
		case strings.HasSuffix(f, ".h"):
			headers = append(headers, f)
		default:
			return dc.full("%s is neither C source nor a header: only a full build is sure to use it", f)
		}
	}
	if len(srcs)+len(headers) == 0 {
		return dc.full("the series touches no kernel source (%s)", strings.Join(d.Touched, ", "))
	}
	cands := srcs
	if len(headers) > 0 {
		start := time.Now()
		ix, err := dc.b.includes.scan(dc.tree)
		if err != nil {
			return err
		}
		inc := ix.includers(headers)
		logf(dc.log, "%s may be included by %d sources (#include lines of the tree, read in %s)", strings.Join(headers, ", "), len(inc), time.Since(start).Round(time.Second))
		if len(inc) > maxCandidates {
			return dc.full("%s may be included by %d sources (%s): more than %d to check one by one", strings.Join(headers, ", "), len(inc), ix.chain(headers), maxCandidates)
		}
		cands = union(cands, inc)
	}
	return dc.classify(ctx, cands, srcs, headers)
}

// classify preprocesses every candidate in the patched tree and sorts
// the objects: modules to rebuild, built-in ones to compare.
func (dc *decider) classify(ctx context.Context, cands, srcs, headers []string) error {
	patched, err := sideMaker{dc.b.Exec, dc.b.Jobs}.makeSide(ctx, filepath.Join(dc.work, "patched"), dc.tree, dc.h, dirsOf(cands), dc.d.Touched, dc.patches)
	if err != nil {
		return dc.sideError(err)
	}
	infos, objs, err := dc.preprocess(ctx, patched, cands)
	if err != nil {
		return err
	}
	var builtins []string
	mods := map[string]ModTarget{}
	for _, c := range cands {
		oi, obj, touched := infos[c], strings.TrimSuffix(c, path.Ext(c))+".o", slices.Contains(srcs, c)
		if !touched && !includesAny(oi.Deps, headers) {
			continue // a textual candidate that does not include them
		}
		switch {
		case objs[obj] == "" && touched:
			dc.d.Ignored = append(dc.d.Ignored, c) // its directory's Makefile builds no such object
			continue
		case objs[obj] == "":
			continue
		case objs[obj] == "y" && touched:
			return dc.full("%s is built into Debian's %s (kbuild's %s/Makefile has %s in real-obj-y)", c, dc.h.Release, path.Dir(c), path.Base(obj))
		case objs[obj] == "y":
			builtins = append(builtins, obj)
			continue
		}
		dir := path.Dir(c)
		file, ok := dc.pkg[dir+"\x00"+oi.Name]
		if !ok {
			if slices.Contains(srcs, c) {
				return dc.full("%s feeds module %s, which Debian's %s does not ship from %s/", c, oi.Name, dc.h.Release, dir)
			}
			dc.d.Unshipped = append(dc.d.Unshipped, oi.Name)
			continue
		}
		mods[oi.Name] = ModTarget{Name: oi.Name, File: file, Dir: dir}
	}
	for _, n := range sortedKeys(mods) {
		dc.d.Modules = append(dc.d.Modules, mods[n])
	}
	if len(builtins) > 0 {
		return dc.compare(ctx, patched, builtins)
	}
	return nil
}

// preprocess runs kbuild's preprocessing (x.i; x.s for assembly) of the
// candidates in the patched side, one make per directory, as many at once
// as the builder has jobs, and reads each one's dependency file and what
// each directory builds (objsProbe).
func (dc *decider) preprocess(ctx context.Context, s *side, cands []string) (map[string]*objInfo, map[string]string, error) {
	byDir := map[string][]string{}
	for _, c := range cands {
		byDir[path.Dir(c)] = append(byDir[path.Dir(c)], ppTarget(c))
	}
	log, err := os.Create(filepath.Join(dc.work, "preprocess.log"))
	if err != nil {
		return nil, nil, err
	}
	defer log.Close()
	start := time.Now()
	dirs := sortedKeys(byDir)
	errs := make([]error, len(dirs))
	sem := make(chan struct{}, dc.b.Jobs)
	var wg sync.WaitGroup
	for i, dir := range dirs {
		if err := s.probeObjs(dir); err != nil {
			return nil, nil, err
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.kmake(ctx, dir, append(byDir[dir], objsProbe), log); err != nil {
				errs[i] = fmt.Errorf("kbuild could not preprocess %s in %s: %w (log %s)", strings.Join(byDir[dir], " "), dir, err, log.Name())
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	infos, objs := map[string]*objInfo{}, map[string]string{}
	for _, dir := range dirs {
		if err := s.readObjs(dir, objs); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range cands {
		oi, err := s.readCmd(path.Dir(c), ppTarget(c))
		if err != nil {
			return nil, nil, err
		}
		infos[c] = oi
	}
	logf(dc.log, "kbuild preprocessed %d sources in %d directories in %s", len(cands), len(dirs), time.Since(start).Round(time.Second))
	return infos, objs, nil
}

// ppTarget is kbuild's preprocessing target of a source in its directory.
func ppTarget(src string) string {
	base := path.Base(src)
	if strings.HasSuffix(base, ".S") {
		return strings.TrimSuffix(base, ".S") + ".s"
	}
	return strings.TrimSuffix(base, ".c") + ".i"
}

// compare compiles the built-in objects in a stock side and in the
// patched one and requires the same text and data.
func (dc *decider) compare(ctx context.Context, patched *side, objs []string) error {
	stock, err := sideMaker{dc.b.Exec, dc.b.Jobs}.makeSide(ctx, filepath.Join(dc.work, "stock"), dc.tree, dc.h, dirsOf(objs), dc.d.Touched, nil)
	if err != nil {
		return dc.sideError(err)
	}
	log, err := os.Create(filepath.Join(dc.work, "compare.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	byDir := map[string][]string{}
	for _, o := range objs {
		byDir[path.Dir(o)] = append(byDir[path.Dir(o)], path.Base(o))
	}
	for _, dir := range sortedKeys(byDir) {
		for _, s := range []*side{stock, patched} {
			if err := s.kmake(ctx, dir, byDir[dir], log); err != nil {
				return fmt.Errorf("compile %s in %s to compare: %w (log %s)", strings.Join(byDir[dir], " "), dir, err, log.Name())
			}
		}
	}
	for _, o := range objs {
		diff, err := sameCode(filepath.Join(stock.src, o), filepath.Join(patched.src, o))
		if err != nil {
			return err
		}
		if diff != "" {
			return dc.full("built-in %s includes a touched header and compiles to different code with the series (%s)", o, diff)
		}
		dc.d.Compared = append(dc.d.Compared, o)
	}
	logf(dc.log, "built-in objects that include the touched headers compile to the same text and data with and without the series: %s", strings.Join(dc.d.Compared, ", "))
	return nil
}

// sideError turns a source that does not match its headers into the full
// build's reason; other errors stay errors.
func (dc *decider) sideError(err error) error {
	var m *errMismatch
	if errors.As(err, &m) {
		return dc.full("%v", m)
	}
	return err
}

func dirsOf(files []string) []string {
	var out []string
	for _, f := range files {
		if d := path.Dir(f); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func includesAny(deps, headers []string) bool {
	for _, h := range headers {
		if slices.Contains(deps, h) {
			return true
		}
	}
	return false
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
