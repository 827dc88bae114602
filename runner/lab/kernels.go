package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/vnetbench/vnetbench/runner"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/fault"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// KernelBuilder builds the kernels that name a source tree (nil in runner.Options
// = a kbuild.Builder in the harness cache): Resolve checks a spec without
// building (the tree, ref, patches and config can be read), BuildPlans
// builds.
type KernelBuilder interface {
	Resolve(ctx context.Context, s kbuild.Spec) (*kbuild.Plan, error)
	BuildPlans(ctx context.Context, plans []*kbuild.Plan) ([]*kbuild.Kernel, error)
}

// defaultBuilder builds into vmimages.CacheDir()/kbuild.
func defaultBuilder(log io.Writer) KernelBuilder {
	return &kbuild.Builder{Dir: filepath.Join(vmimages.CacheDir(), "kbuild"), Log: log}
}

// kernelPlans are the resolved builds of the kernels that name a source
// tree: the full builds in build order with their labels, and the groups
// of kernels tested by module builds.
type kernelPlans struct {
	b      KernelBuilder
	labels []string
	plans  []*kbuild.Plan
	mods   []*modGroup
	// full says why kernels that might have been module builds are built
	// whole, by label.
	full map[string]string
	// replace lists, after build, the module files each label's lab
	// loads in place of the packaged ones.
	replace map[string][]string
	// order is every label built, in build order.
	order []string
	// timings are the build steps performed, by label (estimate's step
	// kinds, seconds per item); a step shared by a group counts for its
	// first kernel.
	timings map[string]map[string]float64
}

// time records a step of label.
func (kp *kernelPlans) time(label, kind string, secs float64) {
	if secs <= 0 {
		return
	}
	if kp.timings == nil {
		kp.timings = map[string]map[string]float64{}
	}
	if kp.timings[label] == nil {
		kp.timings[label] = map[string]float64{}
	}
	kp.timings[label][kind] = secs
}

// resolveKernels checks the kernels of cells that name a source tree
// (tree, ref, patches, config fragment) without building: bad input fails
// here, before the run waits for the host lock. They are built in the
// order of in.Labels (the scenario's: stock before patched).
func resolveKernels(ctx context.Context, cells []scenarios.Cell, in Inner, o runner.Options) (*kernelPlans, error) {
	byLabel := map[string]scenarios.Kernel{}
	var order []string
	for _, c := range cells {
		if !c.Kernel.Builds() {
			continue
		}
		if _, ok := byLabel[c.Kernel.Label]; !ok {
			byLabel[c.Kernel.Label] = c.Kernel
			order = append(order, c.Kernel.Label)
		}
	}
	kp := &kernelPlans{b: in.Builder, labels: order}
	if len(order) == 0 {
		return kp, nil
	}
	if o.Log != nil {
		// The source's fetch and the prefetch of Debian's packages
		// log at once.
		o.Log = &lockedWriter{w: o.Log}
	}
	if kp.b == nil {
		kp.b = defaultBuilder(o.Log)
	}
	slices.SortStableFunc(order, func(a, b string) int { return rank(in.Labels, a) - rank(in.Labels, b) })
	kp.order = order
	prefetched := kp.prefetch(ctx, order, byLabel)
	specs := map[string]kbuild.Spec{}
	for _, l := range order {
		start, fetched := time.Now(), sourceFetched(byLabel[l])
		spec, err := buildSpec(ctx, l, byLabel[l], in.FetchSource, o.Log)
		if err != nil {
			return nil, err
		}
		if !fetched && in.FetchSource == nil {
			kp.time(l, estimate.StepFetchSource, time.Since(start).Seconds())
		}
		specs[l] = spec
	}
	<-prefetched
	modular := map[string]bool{}
	if mb, ok := kp.b.(ModuleBuilder); ok {
		groups, reasons, err := planModules(ctx, mb, order, byLabel, specs, o)
		if err != nil {
			return nil, err
		}
		kp.mods, kp.full = groups, reasons
		for _, g := range groups {
			if g.plan.Fetched {
				kp.time(g.labels[0], estimate.StepFetchDebian, g.plan.FetchSeconds)
			}
			for _, l := range g.labels {
				modular[l] = true
				if d := g.plan.Decisions[l]; d != nil && !d.Cached {
					kp.time(l, estimate.StepDecide, d.Seconds)
				}
			}
		}
	}
	kp.labels = nil
	for _, l := range order {
		if modular[l] {
			continue
		}
		p, err := kp.b.Resolve(ctx, specs[l])
		if err != nil {
			return nil, err
		}
		kp.labels = append(kp.labels, l)
		kp.plans = append(kp.plans, p)
	}
	return kp, nil
}

// build builds the resolved kernels, every one of them before any lab
// boots (a patch that does not apply, or a build that fails, stops the run
// before it measures anything). The cells of those kernels then boot the
// built image; the identities come back per label, with warnings when
// kernels of one tree were built with different configs.
func (kp *kernelPlans) build(ctx context.Context, cells []scenarios.Cell, o runner.Options) ([]scenarios.Cell, map[string]*results.KernelBuild, []string, error) {
	if len(kp.plans)+len(kp.mods) == 0 {
		return cells, nil, nil, nil
	}
	ids := map[string]*results.KernelBuild{}
	images := map[string][2]string{} // label -> image, modules directory
	kp.replace = map[string][]string{}
	if len(kp.mods) > 0 {
		if err := buildModules(ctx, kp.b.(ModuleBuilder), kp.mods, o, ids, kp.replace, images, kp.time); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(kp.plans) > 0 {
		built, err := kp.b.BuildPlans(ctx, kp.plans)
		if err != nil {
			return nil, nil, nil, err
		}
		for i, l := range kp.labels {
			id := built[i].Identity
			id.FullReason = kp.full[l]
			if !built[i].Cached {
				kind := estimate.StepIncremental
				if built[i].Fresh {
					kind = estimate.StepFullBuild
				}
				kp.time(l, kind, id.Seconds)
			}
			ids[l] = &id
			images[l] = [2]string{built[i].Image, built[i].Modules}
			desc := id.Describe()
			if built[i].Cached {
				desc += ", from the build cache"
			}
			labLogf(o, "kernel %s: %s", l, desc)
		}
	}
	out := slices.Clone(cells)
	for i := range out {
		if k, ok := images[out[i].Kernel.Label]; ok && out[i].Kernel.Builds() {
			out[i].Kernel.Image, out[i].Kernel.Modules = k[0], k[1]
		}
	}
	for l, t := range kp.timings {
		if ids[l] != nil {
			ids[l].Timings = t
		}
	}
	return out, ids, configWarnings(kp.order, ids), nil
}

// lockedWriter serializes the writes of goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prefetch starts fetching Debian's kernel and headers for the module
// builds of sources not fetched yet, beside the sources' own fetch; the
// channel closes when it is done.
func (kp *kernelPlans) prefetch(ctx context.Context, order []string, byLabel map[string]scenarios.Kernel) <-chan struct{} {
	done := make(chan struct{})
	pf, ok := kp.b.(interface {
		Prefetch(ctx context.Context, series string)
	})
	if !ok {
		close(done)
		return done
	}
	var series []string
	for src, labels := range sourceGroups(order, byLabel) {
		if !sourceFetched(byLabel[labels[0]]) {
			series = append(series, strings.TrimPrefix(src, "debian:"))
		}
	}
	go func() {
		defer close(done)
		for _, s := range series {
			pf.Prefetch(ctx, s)
		}
	}()
	return done
}

// sourceFetched reports whether kernel k's source: is in the cache (or it
// names none).
func sourceFetched(k scenarios.Kernel) bool {
	v, ok := strings.CutPrefix(k.Source, "debian:")
	return !ok || exists(filepath.Join(vmimages.CacheDir(), "src", "linux-source-"+v, "Makefile"))
}

// buildSpec is the build of kernel k: its tree (source: fetched into the
// harness cache first) and its patches, a shipped series (series:NAME)
// written into the harness cache as files.
func buildSpec(ctx context.Context, label string, k scenarios.Kernel, fetch func(context.Context, string) (string, error), log io.Writer) (kbuild.Spec, error) {
	s := kbuild.Spec{Label: label, Tree: k.Tree, Ref: k.Ref, Config: k.Config}
	if k.Source != "" {
		version, ok := strings.CutPrefix(k.Source, "debian:")
		if !ok {
			return s, fault.Input("kernel %s: source %q: use debian:VERSION such as debian:6.1", label, k.Source)
		}
		if fetch == nil {
			fetch = func(ctx context.Context, v string) (string, error) {
				return kbuild.DebianSource(ctx, filepath.Join(vmimages.CacheDir(), "src"), v, log)
			}
		}
		tree, err := fetch(ctx, version)
		if err != nil {
			return s, fmt.Errorf("kernel %s: %w", label, err)
		}
		s.Tree = tree
	}
	for _, p := range k.Patches {
		name, ok := scenarios.SeriesName(p)
		if !ok {
			s.Patches = append(s.Patches, p)
			continue
		}
		files, err := writeSeries(filepath.Join(vmimages.CacheDir(), "series"), name)
		if err != nil {
			return s, fmt.Errorf("kernel %s: %w", label, err)
		}
		s.Patches = append(s.Patches, files...)
	}
	return s, nil
}

// writeSeries writes a shipped series' patches into root/NAME-HASH/ (HASH
// of their contents: a directory there is complete, written to a
// temporary directory and renamed) and returns their paths in order; for
// NAME/FILE (one patch of the series: a per-patch run's prefixes) the
// path of that one.
func writeSeries(root, name string) ([]string, error) {
	if series, file, ok := strings.Cut(name, "/"); ok {
		paths, err := writeSeries(root, series)
		if err != nil {
			return nil, err
		}
		return onePatch(paths, series, file)
	}
	paths, err := seriesPaths(root, name)
	if err != nil {
		return nil, err
	}
	ps, _ := scenarios.SeriesPatches(name)
	dir := filepath.Dir(paths[0])
	if _, err := os.Stat(dir); err == nil {
		return paths, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("series %s: %w; set VNETBENCH_CACHE to a writable directory", name, err)
	}
	tmp, err := os.MkdirTemp(root, ".tmp-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	for _, p := range ps {
		if err := os.WriteFile(filepath.Join(tmp, p.Name), p.Data, 0o644); err != nil {
			return nil, fmt.Errorf("series %s: %w", name, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return paths, nil // written meanwhile by another run
		}
		return nil, fmt.Errorf("series %s: %w", name, err)
	}
	return paths, nil
}

// seriesPaths are where writeSeries puts a shipped series' patches (for
// NAME/FILE, that one patch's path in its series' directory).
func seriesPaths(root, name string) ([]string, error) {
	if series, file, ok := strings.Cut(name, "/"); ok {
		paths, err := seriesPaths(root, series)
		if err != nil {
			return nil, err
		}
		return onePatch(paths, series, file)
	}
	ps, err := scenarios.SeriesPatches(name)
	if err != nil {
		return nil, fault.Input("%w", err)
	}
	h := sha256.New()
	for _, p := range ps {
		fmt.Fprintf(h, "%s\n%d\n", p.Name, len(p.Data))
		h.Write(p.Data)
	}
	dir := filepath.Join(root, name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	paths := make([]string, len(ps))
	for i, p := range ps {
		paths[i] = filepath.Join(dir, p.Name)
	}
	return paths, nil
}

func rank(labels []string, l string) int {
	if i := slices.Index(labels, l); i >= 0 {
		return i
	}
	return len(labels)
}

// configWarnings warns when kernels built from the same tree got different
// final configs (a patch that changes Kconfig): then they differ in more
// than the patches.
func configWarnings(order []string, ids map[string]*results.KernelBuild) []string {
	var out []string
	for i, a := range order {
		for _, b := range order[i+1:] {
			ia, ib := ids[a], ids[b]
			if ia.Tree == ib.Tree && ia.Fragment == ib.Fragment && ia.ConfigSHA256 != ib.ConfigSHA256 {
				out = append(out, fmt.Sprintf("kernels %s and %s were built from one tree and config fragment but their final .config differs (a patch changes Kconfig?): they differ in more than the patches", a, b))
			}
		}
	}
	return out
}

// onePatch is file's path among its series' paths.
func onePatch(paths []string, series, file string) ([]string, error) {
	for _, p := range paths {
		if filepath.Base(p) == file {
			return []string{p}, nil
		}
	}
	return nil, fault.Input("series %s has no patch %q", series, file)
}

// checkKernels refuses, before the run makes anything, a lab kernel
// that its lab VM would refuse to boot, checked as labvm resolves it
// (labvm.CheckKernel): files that are no bzImage and modules directory,
// a Debian version the lab cannot boot or a Debian series no package of
// which is cached or known to apt. That refusal came after the run
// directory and its first sample existed; run --dry-run and plan (VMArgs)
// now say it too.
func checkKernels(ctx context.Context, cells []scenarios.Cell) error {
	seen := map[string]bool{}
	for i := range cells {
		if err := runner.CheckGuestKernel(&cells[i]); err != nil {
			return err
		}
		k := cells[i].Kernel
		if k.Running() || seen[k.Label] {
			continue
		}
		seen[k.Label] = true
		if k.Builds() {
			if err := checkBuildInputs(k); err != nil {
				return err
			}
			continue
		}
		if err := labvm.CheckKernel(ctx, labvm.Kernel{Image: k.Image, Modules: k.Modules, Debian: k.Debian}, ""); err != nil {
			return fmt.Errorf("kernel %s: %w", k.Label, err)
		}
	}
	return nil
}

// checkBuildInputs refuses a kernel to build whose own files are not
// there: a tree that is no directory, patches a pattern of which matches
// no file (or no patch), a config fragment that cannot be read. The
// builder found them when it resolved the kernel, for a source: kernel
// after fetching and unpacking Debian's linux-source, minutes in; plan
// showed "full build, about 18 min" for a tree that does not exist.
func checkBuildInputs(k scenarios.Kernel) error {
	if k.Tree != "" {
		why := "a file"
		st, err := os.Stat(k.Tree)
		if err != nil {
			why = strings.TrimPrefix(err.Error(), "stat "+k.Tree+": ")
		}
		if err != nil || !st.IsDir() {
			return fault.Input("kernel %s: tree %s is not a directory (%s); give a Linux source tree: tree=PATH, or source=debian:6.1", k.Label, k.Tree, why)
		}
	}
	for _, p := range k.Patches {
		if _, ok := scenarios.SeriesName(p); ok {
			continue // shipped with vnetbench: checked where parsed
		}
		if _, err := kbuild.ReadPatches([]string{p}); err != nil {
			return fault.Input("kernel %s: %w", k.Label, err)
		}
	}
	if k.Config != "" {
		if _, err := kbuild.ReadFragment(k.Config); err != nil {
			return fault.Input("kernel %s: %w", k.Label, err)
		}
	}
	return nil
}
