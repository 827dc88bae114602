package report

import (
	"slices"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// index holds a set's samples by cell and by cell and column, built once
// when the report is built (as x/perf's benchtab indexes each result once
// as it is added). Every lookup a table makes is then a map access and a
// walk over one cell's repetitions, so a report's cost grows linearly with
// the samples instead of rescanning all of them per lookup.
type index struct {
	// cells are the cell names in order of first appearance.
	cells []string
	// byCell holds each cell's samples in input order; byCol the samples of
	// each cell in each column.
	byCell map[string][]*results.Sample
	byCol  map[cellCol][]*results.Sample
	// keys are set.MetricKeys(); keyCells holds, by key, the cells that
	// have it in some column (in cells' order), cellKeys the keys of each
	// cell (in keys' order): tables and summaries visit only the pairs
	// that exist, so a report of n single-sample cells with n distinct
	// keys costs n, not n x n.
	keys     []metric.Key
	keyCells map[metric.Key][]string
	cellKeys map[string][]metric.Key
	// sweepSizes counts the distinct packet sizes of each group of cells
	// that differ only in pkt_size (see inSweep).
	sweepSizes map[string]int
	// senders counts the distinct thread counts of each group of cells
	// that differ only in theirs (see inSenders).
	senders map[string]int
	// stats and deltas remember what summaries computed for the tables,
	// metrics the descriptions of the keys (results.Describe asks every
	// registered workload).
	stats   map[statKey]Stats
	deltas  map[statKey]Delta
	metrics map[metric.Key]metric.Metric
	// versus is versusOf by generator label.
	versus map[string]versusHit
}

type versusHit struct {
	tab  *workload.Table
	name string
}

type cellCol struct{ cell, col string }

type statKey struct {
	cell, col string
	key       metric.Key
}

func newIndex(set *results.Set) *index {
	x := &index{byCell: map[string][]*results.Sample{}, byCol: map[cellCol][]*results.Sample{},
		keys: set.MetricKeys(), sweepSizes: map[string]int{}, senders: map[string]int{}, stats: map[statKey]Stats{}, deltas: map[statKey]Delta{},
		metrics: map[metric.Key]metric.Metric{}, versus: map[string]versusHit{}}
	sizes, threads := map[string]map[string]bool{}, map[string]map[int]bool{}
	for i := range set.Samples {
		s := &set.Samples[i]
		if _, ok := x.byCell[s.Cell]; !ok {
			x.cells = append(x.cells, s.Cell)
		}
		x.byCell[s.Cell] = append(x.byCell[s.Cell], s)
		cc := cellCol{s.Cell, s.Kernel}
		x.byCol[cc] = append(x.byCol[cc], s)
		if _, ok := sizeOf(s); ok {
			k := groupKey(s, "pkt_size")
			if sizes[k] == nil {
				sizes[k] = map[string]bool{}
			}
			sizes[k][s.Axes["pkt_size"]] = true
		}
		if k := sendersKey(s); k != "" {
			if threads[k] == nil {
				threads[k] = map[int]bool{}
			}
			_, n, _ := threadsAxis(s)
			threads[k][n] = true
		}
	}
	for k, v := range threads {
		x.senders[k] = len(v)
	}
	for k, v := range sizes {
		x.sweepSizes[k] = len(v)
	}
	x.indexKeys()
	return x
}

// indexKeys fills keyCells and cellKeys from the samples.
func (x *index) indexKeys() {
	rank := make(map[metric.Key]int, len(x.keys))
	for i, k := range x.keys {
		rank[k] = i
	}
	x.keyCells, x.cellKeys = map[metric.Key][]string{}, map[string][]metric.Key{}
	for _, cell := range x.cells {
		seen := map[metric.Key]bool{}
		for _, s := range x.byCell[cell] {
			for _, k := range sampleKeys(s) {
				if !seen[k] {
					seen[k] = true
					x.cellKeys[cell] = append(x.cellKeys[cell], k)
					x.keyCells[k] = append(x.keyCells[k], cell)
				}
			}
		}
		slices.SortFunc(x.cellKeys[cell], func(a, b metric.Key) int { return rank[a] - rank[b] })
	}
}

// sampleKeys are the metric keys s has a value of (Sample.Value).
func sampleKeys(s *results.Sample) []metric.Key {
	keys := make([]metric.Key, 0, len(s.Metrics)+2)
	for k := range s.Metrics {
		keys = append(keys, k)
	}
	for _, k := range []metric.Key{metric.TxPPSThread, metric.LostPPSThread} {
		if _, inMetrics := s.Metrics[k]; !inMetrics {
			if _, ok := s.Value(k); ok {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// metric is results.Describe(key), asked once per key.
func (x *index) metric(key metric.Key) metric.Metric {
	m, ok := x.metrics[key]
	if !ok {
		m = results.Describe(key)
		x.metrics[key] = m
	}
	return m
}

// versusOf is versusOf(s), asked once per generator label (it looks the
// workload up in the registry).
func (x *index) versusOf(s *results.Sample) (*workload.Table, string) {
	g := generatorOf(s)
	h, ok := x.versus[g]
	if !ok {
		h.tab, h.name = versusOf(s)
		x.versus[g] = h
	}
	return h.tab, h.name
}

// values returns the values of metric key for cell in column col, one per
// sample that has it, in sample order.
func (x *index) values(cell, col string, key metric.Key) []float64 {
	var out []float64
	for _, s := range x.byCol[cellCol{cell, col}] {
		if v, ok := s.Value(key); ok {
			out = append(out, v)
		}
	}
	return out
}

// has reports whether a sample of cell in col has metric key.
func (x *index) has(cell, col string, key metric.Key) bool {
	for _, s := range x.byCol[cellCol{cell, col}] {
		if _, ok := s.Value(key); ok {
			return true
		}
	}
	return false
}
