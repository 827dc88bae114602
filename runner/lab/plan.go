package lab

import (
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Commands are what a run of some cells starts on a host, as plan and run
// --dry-run print them (PlanCommands).
type Commands struct {
	// LabVMs are the lab VMs, one per kernel label other than the
	// running one, in the order they boot (the labels given, then
	// first appearance).
	LabVMs []VMCommand
	// Cells are the cells' commands, Cells[i] those of the i-th cell.
	Cells []CellCommands
}

// VMCommand is the lab VM of one kernel label: its QEMU argv and the
// warnings of its sizing and accelerator, or Err when run refuses it
// here.
type VMCommand struct {
	Label    string
	Argv     []string
	Warnings []string
	Err      error
}

// CellCommands are the accelerator a cell's guest gets and the commands
// and /proc writes the cell runs (runner.Commands, one line each,
// shell-quoted for reading); Warning is a fallback of its accelerator, Err
// a guest.accel run refuses here (then there are no commands).
type CellCommands struct {
	Accel   qemu.Accel
	Warning string
	Err     error
	Lines   []string
}

// PlanCommands turns cells, in run order, into the commands a run of them
// starts on host h: each lab VM's QEMU command line (VMArgs, with the lab
// cells in that order, as Run sizes and shares them; labs in the order of
// labels, the scenario's, as Run boots them) and each cell's commands
// among the cells. plan prints a refusal as a warning, run --dry-run
// refuses as run does.
func PlanCommands(cells []scenarios.Cell, labels []string, h Host) Commands {
	var out Commands
	_, labCells := scenarios.SplitRunning(cells)
	labels, byLabel := scenarios.ByKernel(labCells, labels)
	for _, label := range labels {
		argv, warnings, err := VMArgs(label, byLabel[label], h)
		out.LabVMs = append(out.LabVMs, VMCommand{Label: label, Argv: argv, Warnings: warnings, Err: err})
	}
	out.Cells = make([]CellCommands, len(cells))
	for i := range cells {
		c := &cells[i]
		cc := &out.Cells[i]
		cc.Accel, cc.Warning, cc.Err = runner.PlanAccel(c, h.KVM)
		if cc.Err == nil {
			cc.Err = runner.CheckGuestKernel(c)
		}
		if cc.Err == nil {
			cc.Err = runner.CheckWorkload(c)
		}
		if cc.Err == nil {
			cc.Lines = runner.Commands(c, cc.Accel, cells...)
		}
	}
	return out
}
