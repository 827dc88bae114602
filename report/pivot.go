package report

import (
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// pivot makes axis the column axis: each sample's Kernel becomes the axis
// value and the kernel label moves into the cell name. Env stays keyed
// by kernel: a column holds every kernel's samples, and keyed by column
// it held the last kernel's (--by backend's header named the patched
// kernel's build for both columns).
//
// A row pairs the columns' cells that agree on every other axis but the
// column axes (columnAxes), which pivot takes out of the samples' axes
// and returns by column. A cell that had one takes the name of its
// partner in a column without it: tap+vhost's
// "pktgen-t4/fq_codel/vhost-pin0" pairs with tap's "pktgen-t4/fq_codel"
// as the row "stock:pktgen-t4/fq_codel". Before, the two names differed
// and every change cell of a real run's --by backend tables read "-".
func pivot(set *results.Set, axis string) (*results.Set, map[string]map[string]string, error) {
	for _, s := range set.Samples {
		if _, ok := s.Axes[axis]; !ok {
			return nil, nil, fault.Input("--by %s: cell %s has no axis %q; use --by kernel or one of its axes (%s)", axis, s.Cell, axis, strings.Join(sortedKeys(s.Axes), ", "))
		}
	}
	colAxes := columnAxes(set, axis)
	out := &results.Set{Env: set.Env, Sources: set.Sources, Warnings: set.Warnings}
	// names are the row names of the cells that had no column axis, by
	// their remaining axes: the names the others take.
	names := map[string]string{}
	renamed := map[int]bool{}
	for i, s := range set.Samples {
		v := s.Axes[axis]
		var parts []string
		for _, p := range strings.Split(s.Cell, "/") {
			if p != v {
				parts = append(parts, p)
			}
		}
		axes := map[string]string{"kernel": s.Kernel}
		for k, x := range s.Axes {
			if _, ctx := colAxes[v][k]; k != axis && !ctx {
				axes[k] = x
			}
		}
		s.Cell = s.Kernel + ":" + strings.Join(parts, "/")
		s.Kernel = v
		s.Axes = axes
		if k := axesString(axes); len(colAxes[v]) == 0 {
			if _, ok := names[k]; !ok {
				names[k] = s.Cell
			}
		} else {
			renamed[i] = true
		}
		out.Samples = append(out.Samples, s)
	}
	// A name two rows share (two columns' cells named alike, their axes
	// apart) pairs no one: two cells of a column would take it and merge.
	shared := map[string]int{}
	for _, n := range names {
		shared[n]++
	}
	for i := range renamed {
		if n, ok := names[axesString(out.Samples[i].Axes)]; ok && shared[n] == 1 {
			out.Samples[i].Cell = n
		}
	}
	qualifyPerf(out.Samples)
	return out, colAxes, nil
}

// qualifyPerf names a row's perf counters with their target (perf.EV@T)
// where some sample of the row does. A sample of one perf target keeps
// its counters as perf.EV with the target in Labels["target"], one of
// several qualifies each, so once pivot pairs TAP's cell (kpktgend) with
// TAP+vhost's (kpktgend and vhost) one counter had two keys: two rows of
// the perf stat table, each paired with nothing. Metrics and
// PerfRunning are copied, not changed in place.
func qualifyPerf(samples []results.Sample) {
	qualified := map[string]bool{} // rows with a counter named with its target
	for _, s := range samples {
		for k := range s.Metrics {
			if _, tg, ok := results.SplitPerf(k); ok && tg != "" {
				qualified[s.Cell] = true
				break
			}
		}
	}
	rename := func(m map[metric.Key]float64, tg string) map[metric.Key]float64 {
		if m == nil {
			return nil
		}
		out := make(map[metric.Key]float64, len(m))
		for k, v := range m {
			if ev, t, ok := results.SplitPerf(k); ok && t == "" {
				k = results.PerfKey(ev, tg)
			}
			out[k] = v
		}
		return out
	}
	for i := range samples {
		s := &samples[i]
		if tg := s.Labels["target"]; qualified[s.Cell] && tg != "" {
			s.Metrics, s.PerfRunning = rename(s.Metrics, tg), rename(s.PerfRunning, tg)
		}
	}
}

// columnAxes are the axes that belong to a column of axis, not to a row:
// one that every cell of some column lacks, and that has one value in
// all the cells of each column that has it. TAP has no vhost worker to
// pin, so no tap cell has pin.vhost; when every tap+vhost cell has
// pin.vhost 0, that is how the tap+vhost column ran, and its cells pair
// with tap's on the other axes. When tap+vhost cells have two pinnings,
// pin.vhost tells them apart: it stays a row axis, and neither pinning's
// cells merge with the other's (nor pair with tap's). An axis in the
// column axis' own namespace (generator.pktgen.threads under --by
// generator) is a parameter of the column's value, not of the column:
// it stays a row axis, where the context reads it ("60 B packets").
// The result maps each column to its axes and their values (nil when
// there are none).
func columnAxes(set *results.Set, axis string) map[string]map[string]string {
	n := map[string]int{}                          // samples per column
	vals := map[string]map[string]map[string]int{} // column -> axis -> value -> samples
	for _, s := range set.Samples {
		col := s.Axes[axis]
		n[col]++
		if vals[col] == nil {
			vals[col] = map[string]map[string]int{}
		}
		for k, v := range s.Axes {
			if vals[col][k] == nil {
				vals[col][k] = map[string]int{}
			}
			vals[col][k][v]++
		}
	}
	keys := map[string]bool{}
	for _, ax := range vals {
		for k := range ax {
			keys[k] = true
		}
	}
	var out map[string]map[string]string
	for k := range keys {
		lacking, constant := false, true
		for col := range n {
			switch vs := vals[col][k]; {
			case len(vs) == 0:
				lacking = true
			case len(vs) > 1 || vs[onlyKey(vs)] != n[col]:
				constant = false
			}
		}
		if k == axis || strings.HasPrefix(k, axis+".") || !lacking || !constant {
			continue
		}
		for col := range n {
			if vs := vals[col][k]; len(vs) == 1 {
				if out == nil {
					out = map[string]map[string]string{}
				}
				if out[col] == nil {
					out[col] = map[string]string{}
				}
				out[col][k] = onlyKey(vs)
			}
		}
	}
	return out
}

// onlyKey is a key of m ("" when m is empty): its only one when it has one.
func onlyKey[V any](m map[string]V) string {
	for k := range m {
		return k
	}
	return ""
}
