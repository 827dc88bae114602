package runner

import (
	"fmt"

	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/scenarios"
)

// A cell's traffic comes from its workload (internal/workload): the
// runner asks the cell's Config for a workload.Generator per window and
// gives it a workload.Window. Options.NewGenerator replaces that in tests.

// Window is what a generator knows of the cell it drives.
type Window = workload.Window

// NewGenerator returns the generator of a cell's workload.
func NewGenerator(c *scenarios.Cell) (workload.Generator, error) {
	if c.Generator.Config == nil {
		return nil, fmt.Errorf("cell %s has no %s settings", c.Name, c.Generator.Kind)
	}
	return c.Generator.Config.Generator(), nil
}
