package lab

// Kernels of one Debian linux-source tested by rebuilding only the
// modules their series touch: Debian's packaged kernel of the source's
// version boots with the rebuilt modules loaded in place of its own; the
// stock kernels get the same modules rebuilt without the series.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/scenarios"
)

// ModuleBuilder plans and runs module builds (kbuild.Builder does); a
// KernelBuilder without it builds every kernel whole.
type ModuleBuilder interface {
	PlanModules(ctx context.Context, g kbuild.ModGroup) (*kbuild.ModPlan, error)
	BuildModules(ctx context.Context, s kbuild.ModSpec) (*kbuild.ModBuild, error)
}

// modGroup is the kernels of one source: the plan, and each label's
// patches.
type modGroup struct {
	source  string // "debian:6.1"
	labels  []string
	group   kbuild.ModGroup
	plan    *kbuild.ModPlan
	patches map[string][]kbuild.Patch
}

// sourceGroups groups the kernels (by label, in order) that may be tested
// by module builds: source: debian:VERSION without a config fragment and
// without build: full, by source; a group needs a kernel with patches.
func sourceGroups(order []string, byLabel map[string]scenarios.Kernel) map[string][]string {
	groups := map[string][]string{}
	for _, l := range order {
		k := byLabel[l]
		if k.Source == "" || k.Config != "" || k.Build == scenarios.BuildFull {
			continue
		}
		groups[k.Source] = append(groups[k.Source], l)
	}
	for src, ls := range groups {
		if !slices.ContainsFunc(ls, func(l string) bool { return len(byLabel[l].Patches) > 0 || byLabel[l].Build == scenarios.BuildModules }) {
			delete(groups, src)
		}
	}
	return groups
}

// planModules plans the module build of each source group; the labels of
// groups that qualify come back in modules, the others are left to the
// full build with the reason in reasons. A group with a kernel that asks
// for build: modules and does not qualify is bad input.
func planModules(ctx context.Context, mb ModuleBuilder, order []string, byLabel map[string]scenarios.Kernel, specs map[string]kbuild.Spec, o runner.Options) (groups []*modGroup, reasons map[string]string, err error) {
	reasons = map[string]string{}
	srcGroups := sourceGroups(order, byLabel)
	for _, src := range sortedSources(srcGroups) {
		labels := srcGroups[src]
		g := &modGroup{source: src, labels: labels, patches: map[string][]kbuild.Patch{}}
		g.group = kbuild.ModGroup{Series: strings.TrimPrefix(src, "debian:"), Tree: specs[labels[0]].Tree}
		for _, l := range labels {
			ps, err := kbuild.ReadPatches(specs[l].Patches)
			if err != nil {
				return nil, nil, fault.Input("kernel %s: %w", l, err)
			}
			g.patches[l] = ps
			g.group.Kernels = append(g.group.Kernels, kbuild.ModKernel{Label: l, Patches: ps})
		}
		if g.plan, err = mb.PlanModules(ctx, g.group); err != nil {
			return nil, nil, err
		}
		if g.plan.Full == "" {
			labLogf(o, "kernels %s (%s): modules %s rebuilt for Debian's %s, the rest of the kernel as Debian ships it", strings.Join(labels, ", "), src, strings.Join(targetNames(g.plan.Modules), ", "), g.plan.Release)
			groups = append(groups, g)
			continue
		}
		for _, l := range labels {
			if byLabel[l].Build == scenarios.BuildModules {
				return nil, nil, fault.Input("kernel %s: build: modules, but %s; use build: full (or auto)", l, g.plan.Full)
			}
			reasons[l] = g.plan.Full
		}
		labLogf(o, "kernels %s (%s): full build: %s", strings.Join(labels, ", "), src, g.plan.Full)
	}
	return groups, reasons, nil
}

func sortedSources(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func targetNames(ms []kbuild.ModTarget) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// buildModules rebuilds each group's modules for each of its kernels (the
// kernels of a group at once: a module build keeps about one CPU busy)
// and returns, per label, the identity and the module files to load in
// place of the packaged ones; images gets the Debian kernel to boot.
// timed gets each kernel's module build time per module, the group's
// wall time shared out (builds side by side take less than in turn).
func buildModules(ctx context.Context, mb ModuleBuilder, groups []*modGroup, o runner.Options, ids map[string]*results.KernelBuild, replace map[string][]string, images map[string][2]string, timed func(label, kind string, secs float64)) error {
	for _, g := range groups {
		p := g.plan
		builds := make([]*kbuild.ModBuild, len(g.labels))
		errs := make([]error, len(g.labels))
		start := time.Now()
		var wg sync.WaitGroup
		for i, l := range g.labels {
			wg.Add(1)
			go func() {
				defer wg.Done()
				builds[i], errs[i] = mb.BuildModules(ctx, kbuild.ModSpec{Label: l, Tree: g.group.Tree, Series: g.group.Series, Version: p.Version,
					Headers: p.Headers, Modules: p.Modules, Patches: g.patches[l]})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		built := 0
		for _, b := range builds {
			if !b.Cached {
				built += len(b.Modules)
			}
		}
		for i, l := range g.labels {
			b := builds[i]
			id := modIdentity(g, l, b)
			if !b.Cached && built > 0 {
				timed(l, estimate.StepModule, time.Since(start).Seconds()/float64(built))
			}
			ids[l] = id
			for _, m := range b.Modules {
				replace[l] = append(replace[l], m.File)
			}
			images[l] = [2]string{p.Image, p.ModulesDir}
			desc := id.Describe()
			if b.Cached {
				desc += ", from the build cache"
			}
			labLogf(o, "kernel %s: %s", l, desc)
		}
	}
	return nil
}

// modIdentity is what env.json records of a kernel tested by module
// builds.
func modIdentity(g *modGroup, label string, b *kbuild.ModBuild) *results.KernelBuild {
	p := g.plan
	cfg := sha256.Sum256([]byte(p.Headers.Config()))
	id := &results.KernelBuild{Release: p.Release, ProcVersion: "Linux version " + kbuild.ImageBanner(p.Image),
		ConfigSHA256: hex.EncodeToString(cfg[:]), Tree: g.group.Tree, Key: b.Key, Seconds: b.Seconds,
		Mode: results.ModeModules, Debian: fmt.Sprintf("linux-image-%s-unsigned %s", p.Release, p.Version), Headers: b.Headers}
	for _, pt := range g.patches[label] {
		id.Patches = append(id.Patches, results.PatchID{File: pt.Name(), Subject: pt.Subject, SHA256: pt.SHA256})
	}
	for _, m := range b.Modules {
		id.Modules = append(id.Modules, results.RebuiltModule{Name: m.Name, File: m.File, SrcVersion: m.SrcVersion, BuildID: m.BuildID, SHA256: m.SHA256})
	}
	return id
}

// modScripts are the build.sh of each kernel's module build, for the
// run's reproduce.sh.
func modScripts(ids map[string]*results.KernelBuild) map[string]string {
	out := map[string]string{}
	for l, id := range ids {
		if id.Mode != results.ModeModules || len(id.Modules) == 0 {
			continue
		}
		if s := filepath.Join(filepath.Dir(id.Modules[0].File), "build.sh"); exists(s) {
			out[l] = s
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// writeBuildScript writes the run's reproduce.sh when kernels were
// tested by module builds: each kernel's build.sh (the commands that
// rebuild its modules from Debian's packages and check their hashes) in
// a directory of its own. The commands each lab ran are in its own
// lab/LABEL/run/reproduce.sh.
func writeBuildScript(dir string, order []string, ids map[string]*results.KernelBuild) error {
	scripts := modScripts(ids)
	if len(scripts) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# The modules this run's lab kernels loaded in place of Debian's, rebuilt from the Debian\n# packages; each lab's own commands are in lab/LABEL/run/reproduce.sh.\nset -eu\n")
	for _, l := range order {
		s, ok := scripts[l]
		if !ok {
			continue
		}
		data, err := os.ReadFile(s)
		if err != nil {
			return err
		}
		eof := "VNETBENCH_BUILD_" + strings.NewReplacer("-", "_", ".", "_").Replace(l)
		fmt.Fprintf(&b, "\n# kernel %s: %s\nmkdir -p kernel-%s\n(cd kernel-%s && sh -eu <<'%s'\n%s%s\n)\n", l, ids[l].Describe(), l, l, eof, data, eof)
	}
	return results.WriteFileAtomic(dir, results.ReproduceFile, []byte(b.String()), 0o755)
}
