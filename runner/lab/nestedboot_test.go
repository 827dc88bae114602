package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/runner"
)

// quickstart's 90 s boot deadline failed every guest nested under TCG
// (2 min a boot): inside a TCG lab the deadline is raised, the cell's
// with it, and the lab's own run deadline counts the raised one. With
// KVM for the guests nothing changes; a longer deadline stays.
func TestNestedBootRaisesQuickstart(t *testing.T) {
	cells := builtinCellsOf(t, "quickstart")
	if b := cells[0].Timeouts.Boot; b != 90*time.Second {
		t.Fatalf("quickstart's boot deadline is %v; the test assumes 90s", b)
	}
	raised, notes := NestedBoot(cells, false)
	for i, c := range raised {
		if c.Timeouts.Boot != NestedTCGBoot {
			t.Errorf("cell %s: boot %v, want %v", c.Name, c.Timeouts.Boot, NestedTCGBoot)
		}
		if d := c.Timeouts.Cell - cells[i].Timeouts.Cell; d != NestedTCGBoot-90*time.Second {
			t.Errorf("cell %s: cell deadline grew by %v, want by the boot's", c.Name, d)
		}
		if cells[i].Timeouts.Boot != 90*time.Second {
			t.Errorf("NestedBoot changed its input")
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "1m30s raised to 9m0s") {
		t.Errorf("notes %q, want one that names the raise", notes)
	}
	if same, notes := NestedBoot(cells, true); same[0].Timeouts.Boot != 90*time.Second || notes != nil {
		t.Errorf("with KVM for the guests: boot %v, notes %q", same[0].Timeouts.Boot, notes)
	}
	lab := builtinCellsOf(t, "lab-pktgen")
	if same, notes := NestedBoot(lab, false); same[0].Timeouts.Boot != lab[0].Timeouts.Boot || notes != nil {
		t.Errorf("lab-pktgen's %v: got %v, notes %q", lab[0].Timeouts.Boot, same[0].Timeouts.Boot, notes)
	}
	c := labConfigT(t, "stock", cells, runner.Options{Dir: "/runs/r1"}, Inner{}, nil)
	if want := labRunTimeout(raised); c.Timeouts.Run != want || want <= labRunTimeout(cells) {
		t.Errorf("lab run deadline %v, want %v (the raised cells')", c.Timeouts.Run, want)
	}
	if c.Timeouts.Boot != 90*time.Second {
		t.Errorf("the lab VM's own boot deadline %v changed", c.Timeouts.Boot)
	}
}
