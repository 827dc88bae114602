package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// groupRows finds the groups a cell joins through an index; it must agree
// with the plain definition (every group whose axes include the cell's,
// groups made by the cells with the most axes first) on cells that lack
// random axes.
func TestGroupRowsMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		set := &results.Set{Env: map[string]*results.Env{}}
		for i := range 40 {
			axes := map[string]string{"backend": []string{"tap", "tap+vhost"}[r.IntN(2)]}
			for _, k := range []string{"qdisc", "pin.vhost", "threads"} {
				if r.IntN(4) > 0 { // some cells lack an axis
					axes[k] = fmt.Sprint(r.IntN(3))
				}
			}
			cell := fmt.Sprintf("c%d", i)
			set.Samples = append(set.Samples, results.Sample{Cell: cell, Kernel: "k", Axes: axes, Metrics: map[metric.Key]float64{"tx_pps": 1}})
		}
		b := &builder{set: set, idx: newIndex(set), r: &Report{}}
		b.lab = labels{b: b}
		got := b.lab.groupRows(func(*results.Sample) bool { return true }, "backend")
		want := groupRowsByDefinition(set, "backend")
		if len(got) != len(want) {
			t.Fatalf("round %d: %d groups, want %d", round, len(got), len(want))
		}
		for i := range got {
			g, w := slices.Clone(got[i].cells), want[i]
			slices.Sort(g)
			slices.Sort(w)
			if !slices.Equal(g, w) {
				t.Errorf("round %d group %d (%s): cells %v, want %v", round, i, got[i].key, g, w)
			}
		}
	}
}

// groupRowsByDefinition compares every cell with every group, in the
// order groupRows uses, and returns each group's cells in group order.
func groupRowsByDefinition(set *results.Set, row string) [][]string {
	type cand struct {
		cell string
		axes map[string]string
		at   int
	}
	var cands []cand
	for i, s := range set.Samples {
		axes := map[string]string{}
		for k, v := range s.Axes {
			if k != row {
				axes[k] = v
			}
		}
		cands = append(cands, cand{s.Cell, axes, i})
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return len(b.axes) - len(a.axes) })
	type group struct {
		sig   map[string]string
		cells []string
		first int
	}
	var groups []*group
	for _, c := range cands {
		joined := false
		for _, g := range groups {
			if subsetOf(c.axes, g.sig) {
				g.cells = append(g.cells, c.cell)
				g.first = min(g.first, c.at)
				joined = true
			}
		}
		if !joined {
			groups = append(groups, &group{sig: c.axes, cells: []string{c.cell}, first: c.at})
		}
	}
	slices.SortStableFunc(groups, func(x, y *group) int { return x.first - y.first })
	var out [][]string
	for _, g := range groups {
		out = append(out, g.cells)
	}
	return out
}

// subsetOf reports whether every axis of a is in b with the same value.
func subsetOf(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
