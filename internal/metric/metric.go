// Package metric defines what a metric is (key, unit, better direction,
// what it counts) and holds the catalogue the results store and the
// reports look keys up in. It sits below both the workloads, which
// declare their metrics, and the store, which reads them: internal/results
// imports this package, not the workload registry.
//
// The catalogue has sources rather than entries: the workload registry
// (internal/workload) adds one that lists the metrics of every registered
// workload, so a workload registered later is seen too.
package metric

import "sync"

// Direction says which way a metric improves.
type Direction int

// Directions.
const (
	// Neutral metrics are informational (instructions executed, for one):
	// reports show their change but call it neither better nor worse.
	Neutral Direction = iota
	HigherIsBetter
	LowerIsBetter
)

func (d Direction) String() string {
	switch d {
	case HigherIsBetter:
		return "higher"
	case LowerIsBetter:
		return "lower"
	}
	return "neutral"
}

// Metric describes one metric key.
type Metric struct {
	// Key is stable snake_case with the unit in it where that helps
	// ("throughput_bps").
	Key Key
	// Unit is the base unit of the values: "pps", "bit/s", "B/s",
	// "count", "s", "fraction", ...
	Unit   string
	Better Direction
	// Rate metrics are aggregated across samples with the harmonic mean as
	// well as the arithmetic mean.
	Rate bool
	// Description says what the number counts, over which interval, and
	// whether it is per thread or a total.
	Description string
	// Diagnostic metrics tell whether the harness measured well (a
	// generator's own CPU use), not how the kernel performs: reports put
	// them in the diagnostics table and compare does not gate them by
	// default.
	Diagnostic bool
	// Header and HeaderNote are a Diagnostic metric's short column header
	// in the harness table and what its legend adds to the key ("iperf3
	// CPU", "(host CPU of the sender)"); "" = the key, nothing.
	Header, HeaderNote string
}

var (
	mu      sync.RWMutex
	sources []func() []Metric
)

// AddSource adds a lister of metric definitions to the catalogue.
func AddSource(list func() []Metric) {
	mu.Lock()
	defer mu.Unlock()
	sources = append(sources, list)
}

// All lists the catalogue's metrics, once per key, in the order their
// sources give them.
func All() []Metric {
	mu.RLock()
	src := sources
	mu.RUnlock()
	var out []Metric
	seen := map[Key]bool{}
	for _, list := range src {
		for _, m := range list() {
			if !seen[m.Key] {
				seen[m.Key] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// Lookup returns the definition of key.
func Lookup(key Key) (Metric, bool) {
	for _, m := range All() {
		if m.Key == key {
			return m, true
		}
	}
	return Metric{}, false
}
