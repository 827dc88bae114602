package kbuild

// The kernels of one Debian linux-source, tested by module builds when
// their series qualify: the version match (linux-source, linux-headers
// and the linux-image the labs boot all of one package version), the
// decision per series (cached) and the union of the modules.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/vmimages"
)

// ModGroup is the kernels of one linux-source (stock ones without
// patches) to plan together: they get the same modules rebuilt, each with
// its own patches, or all the full build.
type ModGroup struct {
	Series  string // "6.1"
	Tree    string // the pristine linux-source (DebianSource)
	Kernels []ModKernel
}

// ModKernel is one kernel of a group.
type ModKernel struct {
	Label   string
	Patches []Patch
}

// ModPlan is a group's plan: Full says why the group gets the full build;
// else Modules are rebuilt for Debian's Release, booted from Image.
type ModPlan struct {
	Series, Version, Release string
	Headers                  *Headers
	Image, ModulesDir        string // the packaged kernel the labs boot
	Decisions                map[string]*Decision
	Modules                  []ModTarget
	Full                     string
	// Fetched says whether this call downloaded packages (the Debian
	// kernel or headers), FetchSeconds how long it took to get them.
	Fetched      bool
	FetchSeconds float64
	// DecideSeconds is the time spent deciding series (not from the
	// cache).
	DecideSeconds float64
}

// PlanModules decides how g's kernels are tested. Missing versions or a
// series that does not qualify are a plan with Full set, not an error;
// errors are failures to fetch or to run kbuild.
func (b *Builder) PlanModules(ctx context.Context, g ModGroup) (*ModPlan, error) {
	b.defaults()
	mp := &ModPlan{Series: g.Series, Decisions: map[string]*Decision{}}
	v, err := SourceVersion(g.Tree)
	adopt := errors.Is(err, errNoVersion)
	if adopt { // an older vnetbench's tree: apt's candidate, checked below
		c, cerr := candidateVersion(ctx, b.Exec, g.Series)
		if cerr != nil || c == "" || upstreamOf(c) != treeRelease(g.Tree) {
			mp.Full = fmt.Sprintf("%v; apt's candidate %q is not its release %s", err, c, treeRelease(g.Tree))
			return mp, nil
		}
		v = c
	}
	mp.Version = v
	start := time.Now()
	if mp.Release, err = HeadersFor(ctx, b.Exec, g.Series, v); err != nil {
		return nil, err
	}
	if mp.Release == "" {
		mp.Full = fmt.Sprintf("apt knows no Debian linux-headers-%s*-%s of linux-source-%s's version %s (run apt-get update; the module build needs headers and a kernel of the source's version)", g.Series, Flavour, g.Series, v)
		return mp, nil
	}
	_, cerr := vmimages.CachedDebianKernel(ctx, mp.Release, b.images())
	mp.Fetched = cerr != nil || !exists(filepath.Join(b.Dir, "headers", "linux-headers-"+mp.Release+"_"+v, ".complete"))
	if cerr != nil {
		b.logf("fetching Debian's linux-image-%s-unsigned %s (apt-get download, ~70 MB), the kernel the labs boot", mp.Release, v)
	}
	k, err := vmimages.FetchDebianKernel(ctx, mp.Release, b.images())
	if err != nil {
		return nil, fmt.Errorf("the Debian kernel %s for the module build: %w", mp.Release, err)
	}
	mp.Image, mp.ModulesDir = k.Image, k.Modules
	if banner := ImageBanner(k.Image); !strings.Contains(banner, "Debian "+v+" ") {
		mp.Full = fmt.Sprintf("Debian's %s is not of linux-source-%s's version %s (its banner: %q)", mp.Release, g.Series, v, banner)
		return mp, nil
	}
	if mp.Headers, err = DebianHeaders(ctx, b.Exec, filepath.Join(b.Dir, "headers"), mp.Release, v, b.Log); err != nil {
		return nil, err
	}
	if uts := mp.Headers.UTSVersion(); !strings.Contains(uts, "Debian "+v+" ") {
		mp.Full = fmt.Sprintf("linux-headers-%s is not of version %s (UTS_VERSION %q)", mp.Release, v, uts)
		return mp, nil
	}
	if adopt {
		if mp.Full, err = adoptVersion(g.Tree, v, mp.Headers); err != nil || mp.Full != "" {
			return mp, err
		}
		b.logf("%s: recorded its package version %s (its files match linux-headers-%s's common headers)", g.Tree, v, mp.Release)
	}
	mp.FetchSeconds = time.Since(start).Seconds()
	for _, kk := range g.Kernels {
		if len(kk.Patches) == 0 {
			continue
		}
		d, err := b.decision(ctx, g, mp, kk)
		if err != nil {
			return nil, err
		}
		mp.Decisions[kk.Label] = d
		if !d.Cached {
			mp.DecideSeconds += d.Seconds
		}
		if d.Full != "" {
			mp.Full = "kernel " + kk.Label + ": " + d.Full
			return mp, nil
		}
		for _, m := range d.Modules {
			if !containsTarget(mp.Modules, m) {
				mp.Modules = append(mp.Modules, m)
			}
		}
	}
	if len(mp.Modules) == 0 {
		mp.Full = "the series feed no module Debian ships"
	}
	return mp, nil
}

func containsTarget(ms []ModTarget, m ModTarget) bool {
	for _, x := range ms {
		if x.Name == m.Name {
			return true
		}
	}
	return false
}

// images is the vmimages cache directory (the harness cache that holds
// b.Dir, unless Images says otherwise).
func (b *Builder) images() string {
	if b.Images != "" {
		return b.Images
	}
	return filepath.Dir(b.Dir)
}

// decisionKey is the cache key of a series' decision on one linux-source
// version.
func decisionKey(series, version string, patches []Patch) string {
	h := sha256.New()
	fmt.Fprintf(h, "vnetbench decide 2\n%s %s\n", series, version)
	for _, p := range patches {
		fmt.Fprintf(h, "patch %s\n", p.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// decision is Decide's outcome for kernel k, from the cache
// (DIR/decide/KEY.json) when decided before.
func (b *Builder) decision(ctx context.Context, g ModGroup, mp *ModPlan, k ModKernel) (*Decision, error) {
	path := filepath.Join(b.Dir, "decide", decisionKey(g.Series, mp.Version, k.Patches)+".json")
	if d, err := readDecision(path); err == nil && d.Release == mp.Release {
		d.Cached = true
		return d, nil
	}
	b.logf("kernel %s: which objects the series feeds (kbuild's dependency files, Debian's %s config)", k.Label, mp.Release)
	d, err := b.Decide(ctx, g.Tree, mp.Headers, mp.ModulesDir, k.Patches, b.Log)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k.Label, err)
	}
	d.Release, d.Version = mp.Release, mp.Version
	if err := writeJSON(path, d); err != nil {
		return nil, err
	}
	return d, nil
}

// Decision returns a series' decision on linux-source-SERIES unpacked
// at tree, when one was made before; for plan, which fetches and builds
// nothing.
func (c Cache) Decision(series, tree string, patches []Patch) (*Decision, bool) {
	v, err := SourceVersion(tree)
	if err != nil {
		return nil, false
	}
	d, err := readDecision(filepath.Join(string(c), "decide", decisionKey(series, v, patches)+".json"))
	return d, err == nil
}

// Modules reports whether the cache holds the modules of decision d
// (made by PlanModules) rebuilt with patches on linux-source-SERIES: for
// plan, which builds nothing.
func (c Cache) Modules(series string, d *Decision, modules []ModTarget, patches []Patch) bool {
	root := filepath.Join(string(c), "headers", "linux-headers-"+d.Release+"_"+d.Version)
	h := &Headers{Release: d.Release, Version: d.Version, Root: root, Dir: filepath.Join(root, "usr", "src", "linux-headers-"+d.Release)}
	if !h.complete() {
		return false
	}
	s := ModSpec{Series: series, Version: d.Version, Headers: h, Modules: modules, Patches: patches}
	cc, err := modCompiler(h)
	if err != nil {
		return false
	}
	_, err = loadModBuild(filepath.Join(string(c), "mod", s.key(cc)))
	return err == nil
}

func readDecision(path string) (*Decision, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Decision
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// writeJSON writes v to path through a temporary file and a rename.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ImageBanner is the version string of an x86 bzImage's setup header
// ("6.1.0-57-amd64 (debian-kernel@lists.debian.org) #1 SMP ... Debian
// 6.1.192-3 (2026-11-26)"); "" when unreadable.
func ImageBanner(image string) string {
	f, err := os.Open(image)
	if err != nil {
		return ""
	}
	defer f.Close()
	hdr := make([]byte, 0x10000)
	n, _ := io.ReadFull(f, hdr)
	if n < 0x210 || string(hdr[0x202:0x206]) != "HdrS" {
		return ""
	}
	off := int(binary.LittleEndian.Uint16(hdr[0x20e:0x210])) + 0x200
	if off >= n {
		return ""
	}
	s := hdr[off:n]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// Prefetch fetches, for linux-source-SERIES not fetched yet, Debian's
// kernel and headers of the version apt would fetch (its candidate):
// while the source downloads and unpacks (CPU-bound: xz), these downloads
// overlap it. Errors are dropped: PlanModules fetches again, or says why
// not.
func (b *Builder) Prefetch(ctx context.Context, series string) {
	b.defaults()
	v, err := candidateVersion(ctx, b.Exec, series)
	if err != nil || v == "" {
		return
	}
	rel, err := HeadersFor(ctx, b.Exec, series, v)
	if err != nil || rel == "" {
		return
	}
	if _, err := vmimages.CachedDebianKernel(ctx, rel, b.images()); err != nil {
		b.logf("fetching Debian's linux-image-%s-unsigned %s (apt-get download, ~70 MB), the kernel the labs boot", rel, v)
		if _, err := vmimages.FetchDebianKernel(ctx, rel, b.images()); err != nil {
			return
		}
	}
	DebianHeaders(ctx, b.Exec, filepath.Join(b.Dir, "headers"), rel, v, b.Log)
}
