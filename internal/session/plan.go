package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Plan is the model of `vnetbench plan` (also its JSON form).
type Plan struct {
	Scenario    string             `json:"scenario"`
	File        string             `json:"file"`
	Description string             `json:"description"`
	Seed        int64              `json:"seed"`
	Kernels     []scenarios.Kernel `json:"kernels"`
	// PerPatch lists a per-patch run's columns and their builds.
	PerPatch []PlanColumn `json:"per_patch,omitempty"`
	Axes     []PlanAxis   `json:"axes"`
	// Sets are the --set overrides applied, in order.
	Sets []string `json:"set,omitempty"`
	// Accel describes this host's KVM (what auto picks on it).
	Accel string `json:"accel"`
	// Estimate is how long run takes; MaxTime the limit run applies
	// (--max-time) and Shorter, past it, a shorter form.
	Estimate   *estimate.Estimate  `json:"estimate"`
	MaxTime    time.Duration       `json:"max_time_ns"`
	Shorter    *Shorter            `json:"shorter,omitempty"`
	KernelDesc func(string) string `json:"-"`
	// Builds says how the kernels built from source are built.
	Builds []lab.BuildMode `json:"builds,omitempty"`
	LabVMs []PlanLabVM     `json:"lab_vms,omitempty"`
	Runs   []PlanRun       `json:"runs"`
	Cells  []PlanCell      `json:"cells"`
	// Refusals are what run refuses of the cells on this host before
	// it builds or boots anything, as far as a cheap look tells
	// (runner.RefusalsOf: the lab kernels' needs too), one line each.
	Refusals []string `json:"refusals,omitempty"`
	// Warnings: accelerator fallbacks and refusals, lab sizing.
	Warnings []string `json:"-"`
	// Params are each cell's parameters, in schema order.
	Params [][]scenarios.Param `json:"-"`
	// Notes: cells that run once for several (runner.Distinct).
	Notes     []string       `json:"-"`
	cellIndex map[string]int // kernel + "\x00" + name -> index in Cells
}

// PlanLabVM is the lab VM of one kernel label.
type PlanLabVM struct {
	Kernel string   `json:"kernel"`
	Argv   []string `json:"argv"`
}

// PlanAxis is one axis of the scenario and its values.
type PlanAxis struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// PlanRun is one sample in the run order.
type PlanRun struct {
	N      int    `json:"n"` // 1-based position in the run order
	Kernel string `json:"kernel"`
	Cell   string `json:"cell"`
	Rep    int    `json:"rep"` // 1-based
}

// PlanCell is one cell of one kernel and the runs that sample it.
type PlanCell struct {
	Kernel string            `json:"kernel"`
	Name   string            `json:"name"`
	Runs   []int             `json:"runs"`
	Axes   map[string]string `json:"axes"`
	Params map[string]string `json:"params"`
	// Accel is the accelerator the cell's guest gets here ("" = run
	// refuses the cell: see the warnings).
	Accel    string   `json:"accel"`
	Commands []string `json:"commands,omitempty"`
}

// PlanSeed picks the seed: the flag, else the scenario's, else a random
// positive one (printed, so the order can be reproduced with --seed).
func PlanSeed(flagSeed, scenarioSeed int64) int64 {
	switch {
	case flagSeed != 0:
		return flagSeed
	case scenarioSeed != 0:
		return scenarioSeed
	}
	return rand.Int64N(1<<31-1) + 1
}

// BuildPlan orders the cells and collects one block per cell, in the
// order of each cell's first run, with the accelerator each cell's guest
// gets on host h, its commands and the QEMU argv of each lab VM
// (lab.PlanCommands, as run --dry-run prints them). What run refuses on
// h is a warning here, and what h.Look predicts run's preflight refuses
// a line of Refusals.
func BuildPlan(s *scenarios.Scenario, seed int64, h lab.Host) *Plan {
	p := &Plan{Scenario: s.Name, File: s.File, Description: s.Description, Seed: seed,
		Kernels: s.Kernels, Axes: []PlanAxis{}, cellIndex: map[string]int{}, Accel: AccelDesc(h.KVM)}
	for _, st := range s.Sets {
		p.Sets = append(p.Sets, st.String())
	}
	for _, a := range s.Axes {
		p.Axes = append(p.Axes, PlanAxis{a.Key, a.Values})
	}
	cells, notes := runner.Distinct(s.Expand())
	p.Notes = notes
	order := scenarios.Order(cells, seed)
	cmds := lab.PlanCommands(order, KernelLabels(s), h)
	for _, vm := range cmds.LabVMs {
		if vm.Err != nil {
			p.warn(fmt.Sprintf("%v (vnetbench run refuses this on this machine)", vm.Err))
			continue
		}
		for _, w := range vm.Warnings {
			p.warn(w)
		}
		p.LabVMs = append(p.LabVMs, PlanLabVM{Kernel: vm.Label, Argv: vm.Argv})
	}
	for i, c := range order {
		key := c.Kernel.Label + "\x00" + c.Name
		ci, ok := p.cellIndex[key]
		if !ok {
			ci = len(p.Cells)
			p.cellIndex[key] = ci
			p.addCell(&c, cmds.Cells[i])
		}
		p.Cells[ci].Runs = append(p.Cells[ci].Runs, i+1)
		p.Runs = append(p.Runs, PlanRun{N: i + 1, Kernel: c.Kernel.Label, Cell: c.Name, Rep: c.Rep + 1})
	}
	for _, r := range runner.RefusalsOf(cells, h.Look) {
		p.Refusals = append(p.Refusals, r.String())
	}
	return p
}

// addCell adds c's block, with its commands cc.
func (p *Plan) addCell(c *scenarios.Cell, cc lab.CellCommands) {
	params := c.Params()
	pc := PlanCell{Kernel: c.Kernel.Label, Name: c.Name, Axes: c.Axes, Params: map[string]string{}}
	for _, pr := range params {
		pc.Params[pr.Key] = pr.Value
	}
	switch {
	case cc.Err != nil:
		p.warn(fmt.Sprintf("%v (vnetbench run refuses this on this machine)", cc.Err))
	case cc.Warning != "" && c.Kernel.Running():
		p.warn(cc.Warning)
	}
	pc.Accel, pc.Commands = string(cc.Accel), cc.Lines
	p.Cells = append(p.Cells, pc)
	p.Params = append(p.Params, params)
}

// warn adds w to the warnings once.
func (p *Plan) warn(w string) {
	if !slices.Contains(p.Warnings, w) {
		p.Warnings = append(p.Warnings, w)
	}
}

// AddEstimate adds how long the run of sp (loaded as s) takes on a host
// with KVM status h.KVM from the rates in t, how its kernels are built
// (with the build cache in cache), the per-patch columns and, when the
// estimate passes maxTime (0 = no limit), a shorter form.
func (p *Plan) AddEstimate(ctx context.Context, sp Spec, s *scenarios.Scenario, h lab.Host, t *estimate.Table, cache string, maxTime time.Duration) {
	cells := SamplesOf(s, p.Seed)
	side := lab.PlanSideBySide(cells, h)
	p.Estimate, _ = EstimateCells(cells, KernelLabels(s), h.KVM, t, side < 2)
	p.Estimate.SideBySide(side, len(h.CPUs))
	p.Builds = AddBuilds(ctx, cache, p.Estimate, s, t)
	// run's default -o is under runs/ here.
	for _, sp := range spaceProblems(needOf(p.Builds, cells), cache, "runs") {
		p.warn("not enough disk space: " + sp + " (vnetbench run refuses this on this machine)")
	}
	p.MaxTime = maxTime
	p.KernelDesc = DescribeKernel(s, h.KVM)
	p.PerPatch = PerPatchColumns(s, p.Builds)
	if maxTime > 0 && p.Estimate.Total > maxTime {
		p.Shorter = ShorterForm(sp, s, h.KVM, t, maxTime)
	}
}
