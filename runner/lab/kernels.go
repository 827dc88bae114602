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

	"github.com/vnetbench/vnetbench/internal/fault"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/kbuild"
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
// tree, in build order, with their labels.
type kernelPlans struct {
	b      KernelBuilder
	labels []string
	plans  []*kbuild.Plan
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
	if kp.b == nil {
		kp.b = defaultBuilder(o.Log)
	}
	slices.SortStableFunc(order, func(a, b string) int { return rank(in.Labels, a) - rank(in.Labels, b) })
	for _, l := range order {
		spec, err := buildSpec(ctx, l, byLabel[l], in.FetchSource, o.Log)
		if err != nil {
			return nil, err
		}
		p, err := kp.b.Resolve(ctx, spec)
		if err != nil {
			return nil, err
		}
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
	if len(kp.plans) == 0 {
		return cells, nil, nil, nil
	}
	built, err := kp.b.BuildPlans(ctx, kp.plans)
	if err != nil {
		return nil, nil, nil, err
	}
	ids := map[string]*results.KernelBuild{}
	images := map[string]*kbuild.Kernel{}
	for i, l := range kp.labels {
		id := built[i].Identity
		ids[l] = &id
		images[l] = built[i]
		desc := id.Describe()
		if built[i].Cached {
			desc += ", from the build cache"
		}
		labLogf(o, "kernel %s: %s", l, desc)
	}
	out := slices.Clone(cells)
	for i := range out {
		if k, ok := images[out[i].Kernel.Label]; ok && out[i].Kernel.Builds() {
			out[i].Kernel.Image, out[i].Kernel.Modules = k.Image, k.Modules
		}
	}
	return out, ids, configWarnings(kp.labels, ids), nil
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
		for _, p := range paths {
			if filepath.Base(p) == file {
				return []string{p}, nil
			}
		}
		return nil, fault.Input("series %s has no patch %q", series, file)
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
