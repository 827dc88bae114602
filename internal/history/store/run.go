// Package store turns run directories and benchfmt files into history
// points and keeps them in an index: an SQLite database (pure Go, so the
// static build keeps working) that history add fills and history rebuild
// recreates from the run directories alone. The run directories stay the
// truth; the index only saves reading them all again.
package store

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aclements/go-moremath/stats"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/history"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// Run is one run directory or benchfmt file: one point of every series it
// has values for.
type Run struct {
	// Path is the run directory or benchfmt file, as given (a run's
	// results.jsonl given stands for its directory).
	Path string
	// Time is when the run was recorded: env.json's created, else its
	// first sample's start; zero when unknown.
	Time     time.Time
	Scenario string
	// Labels maps each kernel label to the point label of that kernel's
	// identity: its commit where known, else release and config hash,
	// else the run's name.
	Labels map[string]string
	// Emulated maps each kernel label to whether a sample of it ran
	// under emulation (results.Sample.Emulated: env.json's accel tcg,
	// or the sample's own flag).
	Emulated map[string]bool
	// Values are the medians over repetitions, one per cell, kernel and
	// metric.
	Values []Value
	// Warnings are what reading the run met (results.Set.Warnings: a
	// torn last line skipped, failed samples): the caller says them, as
	// report does.
	Warnings []string
}

// Value is one run's value of a series: the median of its repetitions,
// with their number and the variance of their natural logs (NaN below 2
// repetitions or when one is not positive), the run's noise that compare
// --noise-from pools (verdict.Scale).
type Value struct {
	Cell, Kernel, Metric string
	Value                float64
	Spread               verdict.Spread
}

// ReadRun reads a run directory or a benchfmt file. A run's
// results.jsonl is read as its directory, as report reads it: read as
// a file, env.json was not found, so its points lost their scenario (a
// series apart from the directory's) and the index held the run twice.
func ReadRun(path string) (*Run, error) {
	if filepath.Base(path) == results.ResultsFile {
		path = filepath.Dir(path)
	}
	set, err := results.Load(path)
	if err != nil {
		return nil, err
	}
	run := &Run{Path: path, Labels: map[string]string{}, Emulated: map[string]bool{}, Warnings: set.Warnings}
	name := strings.TrimSuffix(filepath.Base(filepath.Clean(path)), filepath.Ext(path))
	env, _ := results.ReadEnv(path) // a benchfmt file has none
	if env != nil {
		run.Time, run.Scenario = env.Created, env.Scenario
	}
	fromSamples := run.Time.IsZero()
	type key struct{ cell, kernel, metric string }
	vals := map[key][]float64{}
	var keys []key
	for _, s := range set.Samples {
		if fromSamples && !s.Start.IsZero() && (run.Time.IsZero() || s.Start.Before(run.Time)) {
			run.Time = s.Start
		}
		kernel := s.Kernel
		if s.KernelFromName {
			// No label of its own: a series across files. A label of
			// its own that is also the directory's name (run --label
			// stock -o runs/stock) is the kernel's, kept.
			kernel = ""
		}
		if _, ok := run.Labels[kernel]; !ok {
			run.Labels[kernel] = pointLabel(set.Env[s.Kernel], env, name)
		}
		run.Emulated[kernel] = run.Emulated[kernel] || s.Emulated
		for m, v := range s.Metrics {
			k := key{s.Cell, kernel, string(m)}
			if _, ok := vals[k]; !ok {
				keys = append(keys, k)
			}
			vals[k] = append(vals[k], v)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return strings.Compare(a.cell+"\x00"+a.kernel+"\x00"+a.metric, b.cell+"\x00"+b.kernel+"\x00"+b.metric)
	})
	for _, k := range keys {
		run.Values = append(run.Values, Value{k.cell, k.kernel, k.metric, median(vals[k]), verdict.LogSpread(vals[k])})
	}
	if len(run.Values) == 0 {
		return nil, fault.Input("%s has no measured samples; pass a run directory or benchfmt file with results", path)
	}
	return run, nil
}

// pointLabel is a kernel's identity in a few characters: "COMMIT12",
// "RELEASE cfg CONFIG8", "RELEASE", or the run's name.
func pointLabel(k, run *results.Env, name string) string {
	for _, e := range []*results.Env{k, run} {
		if e == nil {
			continue
		}
		if e.Build != nil && e.Build.Commit != "" {
			return short(e.Build.Commit, 12)
		}
		rel := e.KernelRelease
		if rel == "" && e.Build != nil {
			rel = e.Build.Release
		}
		if rel == "" {
			continue
		}
		if e.ConfigSHA256 != "" {
			return rel + " cfg " + short(e.ConfigSHA256, 8)
		}
		return rel
	}
	return name
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// median is the median of xs; xs is not modified.
func median(xs []float64) float64 { return stats.Sample{Xs: xs}.Quantile(0.5) }

// Better is the direction of a metric key (a history series' Metric),
// from the results registry.
func Better(key string) history.Better {
	switch results.Describe(metric.Key(key)).Better {
	case metric.HigherIsBetter:
		return history.HigherIsBetter
	case metric.LowerIsBetter:
		return history.LowerIsBetter
	}
	return history.Neutral
}

// Series joins runs into series, one per scenario, cell, kernel label and
// metric, each in the order of runs.
func Series(runs []*Run) []history.Series {
	type key struct{ scenario, cell, kernel, metric string }
	idx := map[key]int{}
	var out []history.Series
	for _, r := range runs {
		for _, v := range r.Values {
			k := key{r.Scenario, v.Cell, v.Kernel, v.Metric}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, history.Series{Scenario: r.Scenario, Cell: v.Cell, Kernel: v.Kernel, Metric: v.Metric, Better: Better(v.Metric), Unit: results.Describe(metric.Key(v.Metric)).Unit})
			}
			out[i].Points = append(out[i].Points, history.Point{Label: r.Labels[v.Kernel], Time: r.Time, Value: v.Value, Emulated: emulation(r.Emulated, v.Kernel)})
		}
	}
	return out
}

// emulation is kernel's entry of emulated as a point's Emulation.
func emulation(emulated map[string]bool, kernel string) history.Emulation {
	e, ok := emulated[kernel]
	return history.EmulationOf(ok, e)
}

// SortRuns orders runs by recorded time, runs of unknown time and equal
// times keeping their given order.
func SortRuns(runs []*Run) {
	slices.SortStableFunc(runs, func(a, b *Run) int { return a.Time.Compare(b.Time) })
}
