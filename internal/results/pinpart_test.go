package results

import (
	"testing"

	"github.com/vnetbench/vnetbench/internal/schema"
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
