package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/runner"
)

// quickstart's 90 s boot deadline failed every guest nested under TCG
// (2 min a boot), and its 66 s traffic deadline a resumed iperf3 cell's
// warmup: inside a TCG lab the boot deadline is raised, setup and
// traffic with it, the cell's by as much, and the lab's own run deadline
// counts the raised one. With KVM for the guests nothing changes; a
// cell with a nested boot's deadline (lab-pktgen) keeps all of its own.
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
		o := cells[i].Timeouts
		if c.Timeouts.Setup != NestedTCGSetup || c.Timeouts.Traffic != o.Traffic+NestedTCGTraffic {
			t.Errorf("cell %s: setup %v, traffic %v; want %v and %v", c.Name, c.Timeouts.Setup, c.Timeouts.Traffic, NestedTCGSetup, o.Traffic+NestedTCGTraffic)
		}
		grew := c.Timeouts.Boot - o.Boot + c.Timeouts.Setup - o.Setup + c.Timeouts.Traffic - o.Traffic
		if d := c.Timeouts.Cell - o.Cell; d != grew {
			t.Errorf("cell %s: cell deadline grew by %v, want by the others' %v", c.Name, d, grew)
		}
		if cells[i].Timeouts.Boot != 90*time.Second {
			t.Errorf("NestedBoot changed its input")
		}
	}
	if want := []string{"timeouts.boot 1m30s raised to 9m0s", "timeouts.setup 30s raised to 3m0s", "timeouts.traffic 1m6s raised to 4m6s"}; len(notes) != len(want) {
		t.Errorf("notes %q, want one for each of %q", notes, want)
	} else {
		for i, w := range want {
			if !strings.HasPrefix(notes[i], w) {
				t.Errorf("note %q, want %q", notes[i], w)
			}
		}
	}
	if same, notes := NestedBoot(cells, true); same[0].Timeouts.Boot != 90*time.Second || notes != nil {
		t.Errorf("with KVM for the guests: boot %v, notes %q", same[0].Timeouts.Boot, notes)
	}
	lab := builtinCellsOf(t, "lab-pktgen")
	if same, notes := NestedBoot(lab, false); same[0].Timeouts != lab[0].Timeouts || notes != nil {
		t.Errorf("lab-pktgen's %+v: got %+v, notes %q", lab[0].Timeouts, same[0].Timeouts, notes)
	}
	c := labConfigT(t, "stock", cells, runner.Options{Dir: "/runs/r1"}, Inner{}, nil)
	if want := labRunTimeout(raised); c.Timeouts.Run != want || want <= labRunTimeout(cells) {
		t.Errorf("lab run deadline %v, want %v (the raised cells')", c.Timeouts.Run, want)
	}
	if c.Timeouts.Boot != 90*time.Second {
		t.Errorf("the lab VM's own boot deadline %v changed", c.Timeouts.Boot)
	}
}
