package session

import (
	"path/filepath"
	"strings"

	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/scenarios"
)

// PlanColumn is one column of a per-patch run in plan's output: the
// kernel label, the patch it adds (none for the base) and its build.
type PlanColumn struct {
	Kernel  string `json:"kernel"`
	Patch   string `json:"patch,omitempty"`
	Subject string `json:"subject,omitempty"`
	Build   string `json:"build"`
}

// PerPatchColumns lists a per-patch scenario's columns and builds (nil
// for another scenario): a column whose kernel is a module build (modes,
// the plan's build lines) says so; the others build whole kernels, the
// prefixes incrementally in the base's work tree.
func PerPatchColumns(s *scenarios.Scenario, modes []lab.BuildMode) []PlanColumn {
	if !s.PerPatch || len(s.Kernels) == 0 {
		return nil
	}
	modules := map[string]bool{}
	for _, m := range modes {
		for _, k := range m.Kernels {
			modules[k] = m.Mode == scenarios.BuildModules
		}
	}
	const moduleBuild = "modules rebuilt for Debian's kernel (the build line above)"
	base := s.Kernels[0]
	src := base.Source
	if src == "" {
		src = base.Tree
		if base.Ref != "" {
			src += " at " + base.Ref
		}
	}
	out := []PlanColumn{{Kernel: base.Label, Build: src + ": a whole build (or the build cache's)"}}
	if modules[base.Label] {
		out[0].Build = moduleBuild
	}
	for _, k := range s.Kernels[1:] {
		last := k.Patches[len(k.Patches)-1]
		c := PlanColumn{Kernel: k.Label, Patch: PatchName(last), Subject: patchSubject(last),
			Build: "incremental in the base's work tree: what the patch touched"}
		if modules[k.Label] {
			c.Build = moduleBuild
		}
		out = append(out, c)
	}
	return out
}

// PatchName is a patches: entry's file name.
func PatchName(entry string) string {
	if name, ok := scenarios.SeriesName(entry); ok {
		_, file, _ := strings.Cut(name, "/")
		return file
	}
	return filepath.Base(entry)
}

// patchSubject is the mail subject of one patches: entry ("" when it
// cannot be read here).
func patchSubject(entry string) string {
	if name, ok := scenarios.SeriesName(entry); ok {
		ps, err := scenarios.SeriesPatches(name)
		if err != nil || len(ps) != 1 {
			return ""
		}
		return kbuild.Subject(ps[0].Data)
	}
	ps, err := kbuild.ReadPatches([]string{entry})
	if err != nil || len(ps) == 0 {
		return ""
	}
	return ps[len(ps)-1].Subject
}
