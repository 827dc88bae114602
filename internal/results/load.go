package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// Set is what Load read: the samples of one or more run directories and
// benchfmt files, joined by kernel label.
type Set struct {
	// Samples holds every non-warmup sample, in input order.
	Samples []Sample
	// Env maps a kernel label to the environment it was measured in.
	Env map[string]*Env
	// Sources are the paths read, in order.
	Sources []string
	// Warnings are caveats met while reading (torn lines, duplicates,
	// failed samples).
	Warnings []string
	// Failed holds the samples that failed (Sample.Error) and were not
	// measured later (--resume) by a sample of the same key.
	Failed []Sample
	// envFrom maps a kernel label to the run directory its Env came from.
	envFrom map[string]string
}

// Load reads run directories (or their results.jsonl) and Go benchmark
// format files and joins them by kernel label. Samples without a kernel
// label take the name of their run directory (or file, without extension).
// A torn last line of results.jsonl is skipped with a warning. Errors about
// the input are fault.ErrInput.
func Load(paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, fault.Input("no run directories or benchfmt files given")
	}
	set := &Set{Env: map[string]*Env{}}
	given := map[string]string{}
	for _, p := range paths {
		// The same input twice counted each of its samples twice: twice
		// the runs per cell, with the power of runs never made.
		real := p
		if r, err := filepath.EvalSymlinks(p); err == nil {
			real = r
		}
		if a, err := filepath.Abs(real); err == nil {
			real = a
		}
		if prev, dup := given[real]; dup {
			as := ""
			if prev != p {
				as = fmt.Sprintf(" (as %s and %s)", prev, p)
			}
			return nil, fault.Input("%s is given twice%s; give each run directory or file once", real, as)
		}
		given[real] = p
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fault.Input("%s does not exist; pass a run directory written by 'vnetbench run' or a benchfmt file", p)
			}
			return nil, unreadable(p, err)
		}
		switch {
		case fi.IsDir():
			err = set.loadRunDir(p)
		case filepath.Base(p) == ResultsFile:
			err = set.loadRunDir(filepath.Dir(p))
		default:
			err = set.loadBenchfmt(p)
		}
		if err != nil {
			return nil, err
		}
		set.Sources = append(set.Sources, p)
	}
	set.dropCopies()
	set.checkDuplicates()
	set.noteFailed()
	return set, nil
}

// dropCopies keeps one of samples that are one measurement: the same
// run, cell, kernel, repetition and start, from two directories (a copy
// of a run, or a merge of a run with itself). Counted twice they made
// "median of 4 runs" of 2.
func (set *Set) dropCopies() {
	type id struct {
		run   string
		k     Key
		start time.Time
	}
	seen := map[id]string{}
	copies, first := 0, ""
	kept := set.Samples[:0]
	for _, s := range set.Samples {
		i := id{s.Run, s.key(), s.Start}
		if prev, dup := seen[i]; dup && s.Run != "" && !s.Start.IsZero() {
			if copies++; first == "" {
				first = fmt.Sprintf("%s has samples of %s", s.Dir, prev)
			}
			continue
		}
		seen[i] = s.Dir
		kept = append(kept, s)
	}
	set.Samples = kept
	if copies > 0 {
		set.Warnings = append(set.Warnings, fmt.Sprintf("%d samples are copies of another input's (the same run, cell, kernel, repetition and start; %s): each is counted once", copies, first))
	}
}

// noteFailed drops failures that a later sample of the same key replaced
// and warns about the others, one line each.
func (set *Set) noteFailed() {
	measured := map[Key]bool{}
	for _, s := range set.Samples {
		measured[s.key()] = true
	}
	kept := set.Failed[:0]
	for _, s := range set.Failed {
		if measured[s.key()] {
			continue
		}
		kept = append(kept, s)
		first, _, _ := strings.Cut(s.Error, "\n")
		set.Warnings = append(set.Warnings, fmt.Sprintf("cell %s on %s rep %d failed: %s", s.Cell, s.Kernel, s.Rep+1, first))
	}
	set.Failed = kept
}

func dirLabel(p string) string {
	b := filepath.Base(filepath.Clean(p))
	if ext := filepath.Ext(b); ext != "" && ext != b {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}

// unreadable is the error of an input that cannot be read (an I/O
// error, a link, not a file): bad input, exit 2, not a failed
// comparison. An error that already says what is wrong with the input
// (too large, not a regular file) stays as it is.
func unreadable(path string, err error) error {
	if errors.Is(err, fault.ErrInput) {
		return err
	}
	return fault.Input("cannot read %s: %v; pass a run directory written by 'vnetbench run' or a benchfmt file that can be read", path, err)
}

func (set *Set) loadRunDir(dir string) error {
	path := filepath.Join(dir, ResultsFile)
	d, err := safefs.Open(dir)
	if err != nil {
		return unreadable(dir, err)
	}
	data, err := d.ReadFile(ResultsFile, safefs.MaxResults)
	d.Close()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if runs := runDirsIn(dir); len(runs) > 0 {
				// 'report runs' for 'report runs/*': name what is there.
				return fault.Input("%s has no %s but holds run directories (%s); pass them, e.g. %s", dir, ResultsFile, strings.Join(runs, ", "), filepath.Join(dir, "*"))
			}
			return fault.Input("%s has no %s; pass a run directory written by 'vnetbench run'", dir, ResultsFile)
		}
		return unreadable(dir, err)
	}
	samples, _, warns, err := parseResults(path, data)
	if err != nil {
		return err
	}
	set.Warnings = append(set.Warnings, warns...)
	env, err := ReadEnv(dir)
	if err != nil {
		return err
	}
	set.Samples = slices.Grow(set.Samples, len(samples))
	for _, s := range samples {
		if s.Warmup {
			continue
		}
		if s.Kernel == "" {
			s.Kernel, s.KernelFromName = dirLabel(dir), true
		}
		s.Dir = dir
		if s.Error != "" {
			set.Failed = append(set.Failed, s)
			continue
		}
		if env.Emulated() {
			s.Emulated = true
		}
		if s.Labels["lab"] != "" {
			s.Nested = true // results from before Nested was recorded
		}
		if s.VoidRerun == "" && slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, VoidRerunNote) }) {
			s.VoidRerun = VoidRerunUnknown // results from before VoidRerun was recorded
		}
		if s.FaultRerun == "" && slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, FaultRerunNote) }) {
			s.FaultRerun = RerunCauseUnknown // results from before FaultRerun was recorded
		}
		if err := set.addEnv(s.Kernel, env, dir); err != nil {
			return err
		}
		set.Samples = append(set.Samples, s)
	}
	return nil
}

// addEnv records the environment of label, from run directory dir. Two
// runs that give one label to kernels whose identities differ
// (Env.IdentityDiff: two builds of one release, a bare-metal A/B across a
// reboot without --label) are bad input: pooling them would mix two
// kernels in one column.
func (set *Set) addEnv(label string, env *Env, dir string) error {
	e := env
	if k, ok := env.Kernels[label]; ok && k != nil {
		// What the user ran is the run's: the lab's inner run adds
		// overrides of its own (per_patch=false) and has no --kernel.
		inner := *k
		inner.Command, inner.Set = env.Command, env.Set
		e = &inner
	}
	if old, ok := set.Env[label]; ok {
		if from := set.envFrom[label]; from != dir {
			if d := old.IdentityDiff(e); d != "" {
				return fault.Input("%s and %s both label their kernel %q, but they ran different kernels (%s): pooling them would mix two kernels in one column; give each its own label (vnetbench run --label NAME, or the scenario's kernels: [{label: ...}]) and report them side by side", from, dir, label, d)
			}
		}
		return nil
	}
	set.Env[label] = e
	if set.envFrom == nil {
		set.envFrom = map[string]string{}
	}
	set.envFrom[label] = dir
	return nil
}

func (set *Set) checkDuplicates() {
	seen := map[Key]int{}
	for _, s := range set.Samples {
		seen[s.key()]++
	}
	var dups []string
	for k, n := range seen {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s on %s rep %d (%d times)", k.Cell, k.Kernel, k.Rep, n))
		}
	}
	sort.Strings(dups)
	for _, d := range dups {
		set.Warnings = append(set.Warnings, "duplicate sample "+d+": all copies are used; label each run's kernel differently to compare them (vnetbench run --label NAME)")
	}
}

// Kernels returns the kernel labels in order of first appearance.
func (set *Set) Kernels() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range set.Samples {
		if !seen[s.Kernel] {
			seen[s.Kernel] = true
			out = append(out, s.Kernel)
		}
	}
	return out
}

// Cells returns the cell names in order of first appearance.
func (set *Set) Cells() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range set.Samples {
		if !seen[s.Cell] {
			seen[s.Cell] = true
			out = append(out, s.Cell)
		}
	}
	return out
}

// MetricKeys returns every metric key present, in presentation order.
func (set *Set) MetricKeys() []metric.Key {
	seen := map[metric.Key]bool{}
	var keys []metric.Key
	for _, s := range set.Samples {
		for k := range s.Metrics {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		if len(s.Threads) > 0 && !seen[metric.TxPPSThread] {
			seen[metric.TxPPSThread] = true
			keys = append(keys, metric.TxPPSThread)
		}
		if !seen[metric.LostPPSThread] {
			if _, ok := s.Value(metric.LostPPSThread); ok {
				seen[metric.LostPPSThread] = true
				keys = append(keys, metric.LostPPSThread)
			}
		}
	}
	return knownOrder(keys)
}

// Nested reports whether any sample of kernel label (any label if "")
// measured a datapath inside a VM (a lab kernel).
func (set *Set) Nested(label string) bool {
	for _, s := range set.Samples {
		if (label == "" || s.Kernel == label) && s.Nested {
			return true
		}
	}
	return false
}

// Emulated reports whether any sample of kernel label (any label if "")
// ran emulated.
func (set *Set) Emulated(label string) bool {
	for _, s := range set.Samples {
		if (label == "" || s.Kernel == label) && s.Emulated {
			return true
		}
	}
	return false
}

// Values returns the values of metric key for cell on kernel, one per
// sample that has it, in sample order.
func (set *Set) Values(cell, kernel string, key metric.Key) []float64 {
	var out []float64
	for i := range set.Samples {
		s := &set.Samples[i]
		if s.Cell != cell || s.Kernel != kernel {
			continue
		}
		if v, ok := s.Value(key); ok {
			out = append(out, v)
		}
	}
	return out
}

// Filter returns a copy of the set holding only the samples for which
// keep returns true.
func (set *Set) Filter(keep func(*Sample) bool) *Set {
	out := &Set{Env: set.Env, Sources: set.Sources, Warnings: set.Warnings}
	for i := range set.Samples {
		if keep(&set.Samples[i]) {
			out.Samples = append(out.Samples, set.Samples[i])
		}
	}
	for i := range set.Failed {
		if keep(&set.Failed[i]) {
			out.Failed = append(out.Failed, set.Failed[i])
		}
	}
	return out
}

// runDirsIn names up to three subdirectories of dir that hold a
// results file, with "..." when there are more.
func runDirsIn(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, e.Name(), ResultsFile)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if len(out) == 3 {
			return append(out, "...")
		}
		out = append(out, e.Name())
	}
	return out
}
