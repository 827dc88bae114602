package results

import (
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The benchfmt reader turns "vhost=0" back into the cell name part the
// scenario gave the cell. The store keeps its own spelling (it does not
// depend on the scenario's schema), so it must be schema.PinPart's for
// every pin axis and every kind of CPU list.
func TestPinPartIsTheScenarios(t *testing.T) {
	for a, stem := range pinStems {
		for _, cpus := range [][]int{{0}, {0, 1}, {0, 1, 4}, nil} {
			v := schema.FormatCPUs(cpus)
			if got, want := pinPart(a, v), schema.PinPart(stem, v); got != want {
				t.Errorf("pinPart(%q, %q) = %q, the scenario names it %q", a, v, got, want)
			}
		}
	}
}

// The scenario's own cells: each pin axis's value, spelled by pinPart,
// is the part of the cell name the scenario gave it (the axis names and
// stems of pinStems are the scenario's).
func TestPinPartNamesTheScenariosCells(t *testing.T) {
	src := `name: pins
backend: tap+vhost
qdisc: pfifo_fast
pin:
  vhost: [0, none]
  vcpu: [1]
  generator: ["0-1", none]
guest: {vcpus: 1, memory: 512MiB, sink: stack}
generator:
  iperf3: {duration: 1s}
`
	s, err := scenarios.Load("pins.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	seen := map[string]bool{}
	for _, c := range cells {
		for a := range pinStems {
			v, ok := c.Axes[a]
			if !ok {
				t.Errorf("cell %s has no axis %s (axes %v): pinStems names an axis the scenario does not", c.Name, a, c.Axes)
				continue
			}
			if !slices.Contains(strings.Split(c.Name, "/"), pinPart(a, v)) {
				t.Errorf("cell %s: pinPart(%s, %s) = %q is not a part of its name", c.Name, a, v, pinPart(a, v))
			}
			seen[a+"="+v] = true
		}
	}
	if len(cells) != 4 || len(seen) != 5 {
		t.Errorf("%d cells, pin values %v: want 4 cells over 5 pin values", len(cells), seen)
	}
}
