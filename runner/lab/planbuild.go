package lab

// What building a run's kernels will do, told from the cache alone (no
// fetch, no make): the build mode of each source's kernels and the
// estimate's build lines. plan and run's estimate print them.

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// BuildMode is how a run builds the kernels of one source or tree.
type BuildMode struct {
	Kernels []string `json:"kernels"`
	Source  string   `json:"source"`
	// Mode is "modules" (the modules Modules, rebuilt for Debian's
	// kernel) or "full" (whole kernels, Reason saying why when a module
	// build was possible).
	Mode    string   `json:"mode"`
	Modules []string `json:"modules,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	// Decided: from kbuild's dependency files (a decision in the cache);
	// else predicted from the files the series touch, and decided at run
	// time once the source is fetched.
	Decided bool                 `json:"decided"`
	Items   []estimate.BuildItem `json:"-"`
}

// String is the mode for plan's text.
func (m BuildMode) String() string {
	s := fmt.Sprintf("kernels %s (%s): ", strings.Join(m.Kernels, ", "), m.Source)
	switch {
	case m.Mode == scenarios.BuildModules && m.Decided:
		s += "modules " + strings.Join(m.Modules, ", ") + " rebuilt for Debian's kernel (decided from kbuild's dependency files)"
	case m.Mode == scenarios.BuildModules:
		s += "modules rebuilt for Debian's kernel (predicted: " + m.Reason + "; decided once the source is fetched)"
	case m.Reason != "" && m.Decided:
		s += "full build: " + m.Reason
	case m.Reason != "":
		s += "full build (predicted: " + m.Reason + "; decided once the source is fetched)"
	default:
		s += "full build"
	}
	return s
}

// PlanBuilds says how a run would build the kernels of ks that name a
// source or tree, in the order of labels, from the harness cache in cache
// (vmimages.CacheDir()).
func PlanBuilds(ctx context.Context, cache string, ks []scenarios.Kernel, labels []string) []BuildMode {
	b := &kbuild.Builder{Dir: filepath.Join(cache, "kbuild"), Images: cache}
	byLabel := map[string]scenarios.Kernel{}
	var order []string
	for _, k := range ks {
		if k.Builds() {
			byLabel[k.Label] = k
			order = append(order, k.Label)
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return rank(labels, a) - rank(labels, b) })
	groups := sourceGroups(order, byLabel)
	var out []BuildMode
	done := map[string]bool{}
	for _, src := range sortedSources(groups) {
		m := planGroup(ctx, b, cache, src, groups[src], byLabel)
		out = append(out, m)
		for _, l := range groups[src] {
			done[l] = true
		}
	}
	trees := map[string][]string{}
	var treeOrder []string
	for _, l := range order {
		if done[l] {
			continue
		}
		t := byLabel[l].Tree
		if t == "" {
			t = byLabel[l].Source
		}
		if _, ok := trees[t]; !ok {
			treeOrder = append(treeOrder, t)
		}
		trees[t] = append(trees[t], l)
	}
	for _, t := range treeOrder {
		reason := ""
		if k := byLabel[trees[t][0]]; k.Source != "" && k.Build == scenarios.BuildFull {
			reason = "build: full"
		}
		out = append(out, planFull(ctx, b, cache, t, trees[t], byLabel, reason, true))
	}
	return out
}

// planGroup plans the kernels of one Debian source that may be module
// builds.
func planGroup(ctx context.Context, b *kbuild.Builder, cache, src string, labels []string, byLabel map[string]scenarios.Kernel) BuildMode {
	series := strings.TrimPrefix(src, "debian:")
	tree := filepath.Join(cache, "src", "linux-source-"+series)
	fetched := exists(filepath.Join(tree, "Makefile"))
	m := BuildMode{Kernels: labels, Source: src, Mode: scenarios.BuildModules}
	var ds []*kbuild.Decision
	var touched []string
	patches := map[string][]kbuild.Patch{}
	for _, l := range labels {
		ps := planPatches(byLabel[l])
		patches[l] = ps
		for _, p := range ps {
			touched = append(touched, kbuild.Files(p.Data)...)
		}
		if len(ps) == 0 || !fetched {
			continue
		}
		if d, ok := kbuild.Cache(b.Dir).Decision(series, tree, ps); ok {
			ds = append(ds, d)
		}
	}
	nPatched := 0
	for _, l := range labels {
		if len(patches[l]) > 0 {
			nPatched++
		}
	}
	m.Decided = nPatched > 0 && len(ds) == nPatched
	var mods []kbuild.ModTarget
	for _, d := range ds {
		if d.Full != "" {
			m.Mode, m.Reason = scenarios.BuildFull, d.Full
		}
		for _, t := range d.Modules {
			if !slices.ContainsFunc(mods, func(x kbuild.ModTarget) bool { return x.Name == t.Name }) {
				mods = append(mods, t)
				m.Modules = append(m.Modules, t.Name)
			}
		}
	}
	if !m.Decided {
		m.Mode, m.Reason = predictMode(touched)
	}
	if m.Mode == scenarios.BuildFull {
		fm := planFull(ctx, b, cache, src, labels, byLabel, m.Reason, m.Decided)
		return fm
	}
	fetch := estimate.BuildItem{What: "fetch linux-source-" + series, Kind: estimate.StepFetchSource, N: 1}
	if fetched {
		fetch = estimate.BuildItem{What: fetch.What, Kind: fetch.Kind, Cached: "in the cache"}
	}
	m.Items = append(m.Items, fetch)
	pkgs := estimate.BuildItem{What: "fetch Debian's kernel and headers", Kind: estimate.StepFetchDebian, N: 1}
	if m.Decided && debianCached(b, cache, ds[0]) {
		pkgs = estimate.BuildItem{What: pkgs.What, Kind: pkgs.Kind, Cached: "in the cache"}
	}
	m.Items = append(m.Items, pkgs)
	if !m.Decided {
		m.Items = append(m.Items, estimate.BuildItem{What: "decide which objects the series feed", Kind: estimate.StepDecide, N: nPatched - len(ds)})
	}
	m.Items = append(m.Items, moduleItem(b, series, m, ds, mods, labels, patches, touched))
	return m
}

// moduleItem is the module builds' line: the modules times the kernels
// whose build the cache does not hold.
func moduleItem(b *kbuild.Builder, series string, m BuildMode, ds []*kbuild.Decision, mods []kbuild.ModTarget, labels []string, patches map[string][]kbuild.Patch, touched []string) estimate.BuildItem {
	n, todo := len(mods), len(labels)
	var srcs []string
	if !m.Decided {
		for _, f := range touched {
			if kbuild.Feeds(f) && !slices.Contains(srcs, f) {
				srcs = append(srcs, f)
			}
		}
		n = len(srcs)
	} else {
		todo = 0
		for _, l := range labels {
			if !kbuild.Cache(b.Dir).Modules(series, ds[0], mods, patches[l]) {
				todo++
			}
		}
	}
	what := fmt.Sprintf("modules %s, %d kernels", strings.Join(m.Modules, ", "), len(labels))
	switch {
	case !m.Decided && n <= 2:
		what = fmt.Sprintf("modules of %s, %d kernels", strings.Join(srcs, ", "), len(labels))
	case !m.Decided:
		what = fmt.Sprintf("modules of %d sources, %d kernels", n, len(labels))
	}
	it := estimate.BuildItem{What: what, Kind: estimate.StepModule, N: n * todo}
	if it.N == 0 {
		it.Cached = "in the build cache"
	}
	return it
}

// predictMode guesses a series' mode before its source is fetched: module
// builds are possible when it touches only C sources (each must then feed
// a module of Debian's kernel); a header may reach built-in code.
func predictMode(touched []string) (string, string) {
	var srcs []string
	for _, f := range touched {
		if !kbuild.Feeds(f) {
			continue
		}
		if e := path.Ext(f); e != ".c" && e != ".S" {
			return scenarios.BuildFull, "the series touches " + f + ", which may reach built-in code"
		}
		if !slices.Contains(srcs, f) {
			srcs = append(srcs, f)
		}
	}
	if len(srcs) == 0 {
		return scenarios.BuildFull, "the series touches no kernel source"
	}
	return scenarios.BuildModules, "the series touches only C sources (" + strings.Join(srcs, ", ") + ")"
}

// debianCached reports whether the Debian kernel and headers of a
// decision are in the cache.
func debianCached(b *kbuild.Builder, cache string, d *kbuild.Decision) bool {
	_, err := vmimages.CachedDebianKernel(context.Background(), d.Release, cache)
	return err == nil && exists(filepath.Join(b.Dir, "headers", "linux-headers-"+d.Release+"_"+d.Version, ".complete"))
}

// planFull plans whole-kernel builds of one tree or source: the first
// kernel from scratch, the others incrementally in its work tree.
func planFull(ctx context.Context, b *kbuild.Builder, cache, src string, labels []string, byLabel map[string]scenarios.Kernel, reason string, decided bool) BuildMode {
	m := BuildMode{Kernels: labels, Source: src, Mode: scenarios.BuildFull, Reason: reason, Decided: decided}
	tree := byLabel[labels[0]].Tree
	if s, ok := strings.CutPrefix(src, "debian:"); ok {
		tree = filepath.Join(cache, "src", "linux-source-"+s)
		it := estimate.BuildItem{What: "fetch linux-source-" + s, Kind: estimate.StepFetchSource, N: 1}
		if exists(filepath.Join(tree, "Makefile")) {
			it = estimate.BuildItem{What: it.What, Kind: it.Kind, Cached: "in the cache"}
		}
		m.Items = append(m.Items, it)
	}
	first := true
	for _, l := range labels {
		it := estimate.BuildItem{What: "whole kernel " + l, Kind: estimate.StepIncremental, N: 1}
		if first {
			it.Kind = estimate.StepFullBuild
		}
		if fullCached(ctx, b, tree, byLabel[l]) {
			it.N, it.Cached = 0, "in the build cache"
		} else {
			first = false
		}
		m.Items = append(m.Items, it)
	}
	return m
}

// fullCached reports whether the build cache holds kernel k of tree; a
// tree not fetched, or a series not written into the cache yet, is not.
func fullCached(ctx context.Context, b *kbuild.Builder, tree string, k scenarios.Kernel) bool {
	if !exists(filepath.Join(tree, "Makefile")) {
		return false
	}
	s := kbuild.Spec{Label: k.Label, Tree: tree, Ref: k.Ref, Config: k.Config}
	for _, p := range k.Patches {
		name, ok := scenarios.SeriesName(p)
		if !ok {
			s.Patches = append(s.Patches, p)
			continue
		}
		paths, err := seriesPaths(filepath.Join(filepath.Dir(b.Dir), "series"), name)
		if err != nil || !exists(filepath.Dir(paths[0])) {
			return false
		}
		s.Patches = append(s.Patches, paths...)
	}
	p, err := b.Resolve(ctx, s)
	if err != nil {
		return false
	}
	_, ok := kbuild.Cache(b.Dir).Kernel(p)
	return ok
}

// planPatches reads a kernel's patches without writing anything: shipped
// series from the binary, files from disk; nil when they cannot be read
// (run says why).
func planPatches(k scenarios.Kernel) []kbuild.Patch {
	var out []kbuild.Patch
	for _, p := range k.Patches {
		name, ok := scenarios.SeriesName(p)
		if !ok {
			ps, err := kbuild.ReadPatches([]string{p})
			if err != nil {
				return nil
			}
			out = append(out, ps...)
			continue
		}
		sps, err := scenarios.SeriesPatches(name)
		if err != nil {
			return nil
		}
		for _, sp := range sps {
			ps, err := kbuild.ParsePatches(sp.Name, sp.Data)
			if err != nil {
				return nil
			}
			out = append(out, ps...)
		}
	}
	return out
}
