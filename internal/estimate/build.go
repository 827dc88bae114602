package estimate

// The build part of a run, before any lab boots: fetching Debian's
// packages, deciding how a series is built, building modules or whole
// kernels. Each step kind has a time per item, measured here (the
// table's steps) or a default.

import (
	"fmt"
	"time"
)

// Step kinds (Table.Step, Observation.Steps).
const (
	// StepFetchSource is fetching and unpacking Debian's linux-source.
	StepFetchSource = "fetch-source"
	// StepFetchDebian is fetching Debian's kernel and headers packages
	// for a module build.
	StepFetchDebian = "fetch-debian"
	// StepDecide is reading kbuild's dependency files to decide whether
	// a series' modules qualify.
	StepDecide = "decide"
	// StepModule is one module rebuilt for one kernel.
	StepModule = "module"
	// StepFullBuild is a kernel built whole in a new work tree.
	StepFullBuild = "full-build"
	// StepIncremental is a kernel rebuilt in a work tree that built
	// another kernel of the same tree (the patched one after stock).
	StepIncremental = "incremental-build"
)

// StepDefaults are the seconds per item before this host measured a step:
// measured on the 2-core CI machine (TCG only) with every cache empty,
// rounded up: linux-source-6.1 fetched in 38 s and unpacked in about
// 30 s, Debian's 6.1 kernel and headers (85 MB) in 20-30 s, tun.ko
// rebuilt in 10-15 s, a whole kernel of the harness's config in 17 min
// with its work tree (1,275 files, 663 CPU-seconds), the patched one after
// it in 14 s.
var StepDefaults = map[string]time.Duration{
	StepFetchSource: 70 * time.Second,
	StepFetchDebian: 30 * time.Second,
	StepDecide:      10 * time.Second,
	StepModule:      15 * time.Second,
	StepFullBuild:   18 * time.Minute,
	StepIncremental: 20 * time.Second,
}

// StepEntry is what the host measured of one step kind.
type StepEntry struct {
	Seconds float64   `json:"s"`
	N       int       `json:"n"`
	Updated time.Time `json:"updated"`
}

// Step is the time of one item of kind: measured here, else the default.
func (t *Table) Step(kind string) Figure {
	if t != nil {
		if e := t.Steps[kind]; e != nil && e.N > 0 {
			return Figure{e.Seconds, measured(e.N, "build step", e.Updated)}
		}
	}
	return Figure{StepDefaults[kind].Seconds(), "default"}
}

// addSteps folds an observation's step times into the table.
func (t *Table) addSteps(steps map[string][]float64, now time.Time) {
	for kind, xs := range steps {
		if len(xs) == 0 {
			continue
		}
		if t.Steps == nil {
			t.Steps = map[string]*StepEntry{}
		}
		e := t.Steps[kind]
		if e == nil {
			e = &StepEntry{}
			t.Steps[kind] = e
		}
		e.Seconds, e.N = fold(e.Seconds, e.N, xs)
		e.Updated = now.UTC()
	}
}

// BuildItem is one line of a run's build part as the caller plans it: N
// items of a step kind (0 when the cache holds them: the line says so).
type BuildItem struct {
	What string // "fetch linux-source-6.1", "build modules tun, 2 kernels"
	Kind string
	N    int
	// Cached says why nothing is to do ("in the cache").
	Cached string
}

// AddBuild puts the build part before the kernels' lines: each item at
// the table's figure for its kind, and adds it to the total.
func (e *Estimate) AddBuild(items []BuildItem, t *Table) {
	for _, it := range items {
		l := Line{What: it.What, N: it.N}
		if it.N == 0 {
			l.Sources = []string{it.Cached}
		} else {
			f := t.Step(it.Kind)
			l.Time = time.Duration(float64(it.N) * f.Value * float64(time.Second))
			l.Sources = []string{fmt.Sprintf("%s each: %s", fmtDur(seconds(f.Value)), f.Source)}
		}
		e.Build = append(e.Build, l)
		e.BuildTotal += l.Time
		e.Total += l.Time
	}
}
