package session

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Columns that are not module builds (a full build's mode, or no build
// line) read as a whole base build and incremental prefixes.
func TestPerPatchColumnsFullBuilds(t *testing.T) {
	s := &scenarios.Scenario{PerPatch: true, Kernels: []scenarios.Kernel{
		{Label: "stock", Tree: "/src/linux", Ref: "v6.1"},
		{Label: "p1", Tree: "/src/linux", Ref: "v6.1", Patches: []string{"series:tun-backpressure-split/0001-tun-include-net-sch_generic.h.patch"}},
	}}
	full := []lab.BuildMode{{Kernels: []string{"stock", "p1"}, Mode: "full"}}
	cols := PerPatchColumns(s, full)
	if len(cols) != 2 || cols[0].Build != "/src/linux at v6.1: a whole build (or the build cache's)" ||
		!strings.HasPrefix(cols[1].Build, "incremental in the base's work tree") || cols[1].Subject != "tun: include net/sch_generic.h" {
		t.Errorf("columns %+v", cols)
	}
}
