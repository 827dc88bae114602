package session

import (
	"slices"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// A guest that cells of several workloads share boots as one guest,
// whichever cell comes first: the estimate of its boot does not depend
// on the cell order, even on a table that measured each workload's
// boots apart (as tables did before boots were kept per class).
func TestEstimateBootNotByCellOrder(t *testing.T) {
	s, err := Spec{Name: "quickstart"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	kinds := map[string]bool{}
	for _, c := range cells {
		kinds[c.Generator.Kind] = true
	}
	if len(kinds) < 2 || slices.Index(runner.GuestBoots(cells), true) != 0 || slices.Index(runner.GuestBoots(cells)[1:], true) >= 0 {
		t.Fatalf("quickstart: want cells of 2 workloads on one guest, got workloads %v, boots %v", kinds, runner.GuestBoots(cells))
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tab := &estimate.Table{Entries: map[string]*estimate.Entry{}}
	tab.Add([]estimate.Observation{
		{Workload: "iperf3", Class: estimate.TCG, Boots: []float64{10}},
		{Workload: "trafgen", Class: estimate.TCG, Boots: []float64{30}},
	}, now)
	boots := func(cells []scenarios.Cell) time.Duration {
		e, _ := EstimateCells(cells, KernelLabels(s), qemu.KVMStatus{}, tab, true)
		for _, l := range e.Kernels[0].Lines {
			if l.What == estimate.LineBoots {
				return l.Time
			}
		}
		t.Fatalf("no guest boots line in %+v", e.Kernels[0])
		return 0
	}
	rev := slices.Clone(cells)
	slices.Reverse(rev)
	if rev[0].Generator.Kind == cells[0].Generator.Kind {
		t.Fatalf("reversed cells start with the same workload, %s", rev[0].Generator.Kind)
	}
	if a, b := boots(cells), boots(rev); a != b || a != 20*time.Second {
		t.Errorf("guest boots: %v with %s first, %v with %s first; want 20 s both (the mean of the guest's boots)", a, cells[0].Generator.Kind, b, rev[0].Generator.Kind)
	}
}
