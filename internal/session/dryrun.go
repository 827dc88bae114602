package session

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/scenarios"
)

// dryRun prints the cells in run order with their commands and the lab
// VMs' command lines, changing nothing; what run would refuse, it refuses.
func (r *run) dryRun() error {
	fmt.Fprintf(r.Stdout, "scenario %s, seed %d%s: %d samples in this order\n", r.s.Name, r.seed, r.shardNote, len(r.cells))
	fmt.Fprintf(r.Stdout, "accelerator: %s\n", AccelDesc(r.host.KVM))
	r.est.Write(r.Stdout, "", DescribeKernel(r.s, r.host.KVM))
	cmds := lab.PlanCommands(r.cells, r.in.Labels, r.host)
	labVMs := map[string][]string{} // label -> the lab VM's QEMU argv
	for _, vm := range cmds.LabVMs {
		if vm.Err != nil {
			return vm.Err // run refuses it: so does its dry run
		}
		for _, w := range vm.Warnings {
			r.warnf("%s", w)
		}
		labVMs[vm.Label] = vm.Argv
	}
	if err := r.printCellCommands(cmds.Cells); err != nil {
		return err
	}
	if len(r.labCells) > 0 {
		r.printLabVMs(labVMs)
	}
	return r.refuse()
}

// refuse prints what run would refuse of the cells here before it
// builds or boots anything (runner.RefusalsOf: the running kernel's
// cells' preflight, the lab kernels' fetch, build and programs), a line
// each, and returns the last as the error, so a dry run exits 2 where
// run would; a run directory run would refuse (-o), or disk space it
// lacks, is the error then.
func (r *run) refuse() error {
	rs := runner.RefusalsOf(r.cells, r.host.Look)
	if last := cmp.Or(r.dirErr, r.spaceErr); last != nil {
		for _, rf := range rs {
			fmt.Fprintf(r.Stderr, "vnetbench: %s\n", rf)
		}
		if r.dirErr != nil && r.spaceErr != nil {
			fmt.Fprintf(r.Stderr, "vnetbench: %v\n", r.spaceErr)
		}
		return last
	}
	if len(rs) == 0 {
		return nil
	}
	for _, rf := range rs[:len(rs)-1] {
		fmt.Fprintf(r.Stderr, "vnetbench: %s\n", rf)
	}
	return fault.Capability("%s", rs[len(rs)-1])
}

// printCellCommands prints each cell's commands (cmds[i] are r.cells[i]'s),
// as plan does.
func (r *run) printCellCommands(cmds []lab.CellCommands) error {
	var warned []string
	for i := range r.cells {
		c, cc := &r.cells[i], &cmds[i]
		if cc.Err != nil {
			return cc.Err // run refuses it: so does its dry run
		}
		if cc.Warning != "" && c.Kernel.Running() && !slices.Contains(warned, cc.Warning) {
			warned = append(warned, cc.Warning)
			r.warnf("%s", cc.Warning)
		}
		fmt.Fprintf(r.Stdout, "\n%3d. %s rep %d (kernel %s, %s)\n", i+1, c.Name, c.Rep+1, kernelName(c), cc.Accel)
		for _, l := range cc.Lines {
			fmt.Fprintf(r.Stdout, "     %s\n", l)
		}
	}
	return nil
}

// printLabVMs prints the command each lab VM runs inside and its QEMU
// command line, in the order the labs run.
func (r *run) printLabVMs(labVMs map[string][]string) {
	in := r.in
	if in.ScenarioData != nil { // the copy the run would write
		in.Scenario = filepath.Join(r.Dir, results.LabScenario)
	}
	fmt.Fprintf(r.Stdout, "\nlab VMs, one per kernel, each running the cells of its kernel:\n")
	have := scenarios.KernelLabels(r.labCells)
	for _, l := range in.Labels {
		if !slices.Contains(have, l) {
			continue
		}
		_, args := lab.InnerArgs(r.Dir, l, r.seed, in)
		fmt.Fprintf(r.Stdout, "  %s: vnetbench %s\n", l, strings.Join(args, " "))
		fmt.Fprintf(r.Stdout, "    in %s\n", proc.Quote(labVMs[l]))
	}
}
