package scenarios

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// PerPatch returns the kernels of a per-patch run of ks (run --per-patch,
// per_patch: true): the last kernel with patches is the series, and its
// prefixes become the columns: the base (the kernel without any of the
// patches; it takes the label of a kernel of ks that is that base, else
// "base"), then p1 (the first patch), p1-2, ..., p1-N (the whole series).
// Built from one tree, each prefix rebuilds only what its patch touched.
// Each prefix lists its patches one per entry (PatchEntries), so the
// columns name exactly what they apply.
func PerPatch(ks []Kernel) ([]Kernel, error) {
	at := -1
	for j := len(ks) - 1; j >= 0; j-- {
		if len(ks[j].Patches) > 0 {
			at = j
			break
		}
	}
	if at < 0 {
		return nil, &Error{Msg: "per-patch: no kernel has patches; give the series as the patches of a kernel built from source, e.g. --kernel patched=source=debian:6.1,patches=series:tun-backpressure-split"}
	}
	series := ks[at]
	if !series.Builds() {
		return nil, &Error{Msg: fmt.Sprintf("per-patch: kernel %s has patches but no tree or source to apply them to", series.Label)}
	}
	entries, err := PatchEntries(series.Patches)
	if err != nil {
		return nil, err
	}
	if len(entries)+1 > maxKernels {
		return nil, &Error{Msg: fmt.Sprintf("per-patch: kernel %s's series has %d patches: %d columns, at most %d; give a shorter series", series.Label, len(entries), len(entries)+1, maxKernels)}
	}
	base := series
	base.Patches = nil
	base.Label = "base"
	for _, k := range ks {
		if len(k.Patches) == 0 && sameBase(k, series) {
			base.Label = k.Label
		}
	}
	out := []Kernel{base}
	for n := 1; n <= len(entries); n++ {
		k := series
		k.Label = PrefixLabel(n)
		k.Patches = slices.Clone(entries[:n])
		out = append(out, k)
	}
	return out, nil
}

// ExpandPerPatch replaces s's kernels with PerPatch's columns (once:
// PerPatch stays set, and the base and prefixes are what s then has).
func (s *Scenario) ExpandPerPatch() error {
	if !s.PerPatch || s.perPatched {
		return nil
	}
	ks, err := PerPatch(s.Kernels)
	if err != nil {
		return err
	}
	if err := s.SetKernels(ks); err != nil {
		return err
	}
	s.perPatched = true
	return nil
}

// PrefixLabel is the column label of the first n patches of a per-patch
// run: p1, p1-2, p1-3, ...
func PrefixLabel(n int) string {
	if n == 1 {
		return "p1"
	}
	return "p1-" + strconv.Itoa(n)
}

// sameBase reports whether k is series's kernel without the patches.
func sameBase(k, series Kernel) bool {
	k.Label, k.Patches = "", nil
	series.Label, series.Patches = "", nil
	return k.Image == series.Image && k.Modules == series.Modules && k.Debian == series.Debian &&
		k.Tree == series.Tree && k.Source == series.Source && k.Ref == series.Ref && k.Config == series.Config
}

// PatchEntries expands patches: entries into one entry per patch, in the
// order they apply: a shipped series into series:NAME/FILE entries, a glob
// into its matches (sorted, as they apply); a path stays (an mbox of
// several patches counts as one).
func PatchEntries(patches []string) ([]string, error) {
	var out []string
	for _, p := range patches {
		if name, ok := SeriesName(p); ok {
			if _, file, one := strings.Cut(name, "/"); one && file != "" {
				out = append(out, p)
				continue
			}
			ps, err := SeriesPatches(name)
			if err != nil {
				return nil, err
			}
			for _, sp := range ps {
				out = append(out, SeriesPrefix+name+"/"+sp.Name)
			}
			continue
		}
		if !strings.ContainsAny(p, "*?[") {
			out = append(out, p)
			continue
		}
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, &Error{Msg: fmt.Sprintf("patches: %q: %v", p, err)}
		}
		if len(m) == 0 {
			return nil, &Error{Msg: fmt.Sprintf("patches: %q matches no file", p)}
		}
		slices.Sort(m)
		out = append(out, m...)
	}
	return out, nil
}
