package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/session"
	"github.com/vnetbench/vnetbench/scenarios"
)

// cmdPlan prints a scenario's cells in run order with every resolved
// parameter, without touching the host.
func cmdPlan(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", "SCENARIO [--kernel LABEL=SPEC]... [--label NAME] [--seed N] [--set KEY=VALUE]... [--max-time D] [--format text|json] [--cpus N]", stderr)
	sets := addSetFlag(fs)
	addPerPatchFlag(fs, sets)
	seed := fs.Int64("seed", 0, "seed of the interleaved run order (default: the scenario's seed:, else random; printed)")
	formatFlag := fs.String("format", "text", "output format: text or json")
	cpus := fs.Int("cpus", runtime.NumCPU(), "check CPU lists against this many CPUs (0 = skip; a failed check is a warning here)")
	kernels := addKernelFlag(fs)
	label := fs.String("label", "", "`NAME` of the running kernel: its column in every table (default: the scenario's label, \"running\"); give each boot of a bare-metal A/B its own")
	maxTime := addMaxTimeFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("plan: give one scenario file or built-in name (vnetbench list shows the built-ins)")
	}
	if *formatFlag != "text" && *formatFlag != "json" {
		return usageErrorf("plan: unknown --format %q; use text or json", *formatFlag)
	}
	if *seed == 0 && given(fs, "seed") {
		return usageErrorf("plan: --seed 0: %s", seedZero)
	}
	if *cpus < 0 { // it passed as 0, the check skipped
		return usageErrorf("plan: --cpus %d: want a CPU count, or 0 to skip the check", *cpus)
	}
	ks, err := kernels.parse()
	if err != nil {
		return err
	}
	sp := session.Spec{Name: pos[0], Sets: *sets, Kernels: ks, Label: *label}
	s, err := sp.Load()
	if err != nil {
		return err
	}
	if err := s.CheckHost(scenarios.Host{NumCPU: *cpus}); err != nil {
		fmt.Fprintf(stderr, "warning: %v (vnetbench run refuses this on this machine)\n", err)
	}
	for _, w := range append(s.Warnings, s.HostWarnings(scenarios.Host{NumCPU: *cpus})...) {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	h := cl.host()
	p := session.BuildPlan(s, session.PlanSeed(*seed, s.Seed), h)
	p.AddEstimate(ctx, sp, s, h, cl.loadTable(stderr, ""), cl.estimateDir, *maxTime)
	for _, n := range append(s.Notes, p.Notes...) {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if *formatFlag == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	writePlanText(stdout, p)
	return nil
}

func kernelDesc(k scenarios.Kernel) string {
	switch {
	case k.Running():
		return k.Label + " (the running kernel)"
	case k.Debian != "":
		return k.Label + " (Debian " + k.Debian + " in a lab VM)"
	case k.Builds():
		src := k.Source
		if src == "" {
			src = k.Tree
		}
		if n := len(k.Patches); n > 2 {
			src += fmt.Sprintf(" + %d patches (%s ... %s)", n, session.PatchName(k.Patches[0]), session.PatchName(k.Patches[n-1]))
		} else {
			for _, p := range k.Patches {
				src += " + " + p
			}
		}
		return k.Label + " (built from " + src + ", in a lab VM)"
	case k.Modules != "":
		return k.Label + " (" + k.Image + ", modules " + k.Modules + ", in a lab VM)"
	}
	return k.Label + " (" + k.Image + " in a lab VM)"
}

func writePlanText(w io.Writer, p *session.Plan) {
	fmt.Fprintf(w, "scenario: %s (%s)\n", p.Scenario, p.File)
	if p.Description != "" {
		fmt.Fprintf(w, "description: %s\n", p.Description)
	}
	fmt.Fprintf(w, "seed: %d\n", p.Seed)
	if len(p.Sets) > 0 {
		fmt.Fprintf(w, "overrides: %s\n", setArgs(p.Sets))
	}
	kd := make([]string, len(p.Kernels))
	for i, k := range p.Kernels {
		kd[i] = kernelDesc(k)
	}
	fmt.Fprintf(w, "kernels: %s\n", strings.Join(kd, ", "))
	for _, b := range p.Builds {
		fmt.Fprintf(w, "build: %s\n", b)
	}
	writePerPatch(w, p.PerPatch)
	fmt.Fprintf(w, "accelerator: %s\n", p.Accel)
	for _, r := range p.Refusals {
		fmt.Fprintln(w, r)
	}
	for _, l := range p.LabVMs {
		fmt.Fprintf(w, "lab VM (kernel %s): %s\n", l.Kernel, proc.Quote(l.Argv))
	}
	if len(p.Axes) == 0 {
		fmt.Fprintln(w, "axes: none (a single cell)")
	}
	for _, a := range p.Axes {
		fmt.Fprintf(w, "axis %s: %s\n", a.Key, strings.Join(a.Values, " | "))
	}
	fmt.Fprintf(w, "cells: %d per kernel x %d kernel(s) = %d, runs: %d\n", len(p.Cells)/max(len(p.Kernels), 1), len(p.Kernels), len(p.Cells), len(p.Runs))
	if p.Estimate != nil {
		p.Estimate.Write(w, "", p.KernelDesc)
		switch {
		case p.MaxTime > 0 && p.Estimate.Total > p.MaxTime:
			fmt.Fprintf(w, "limit: the estimate passes %s: vnetbench run refuses it unless --max-time is raised\n", estimate.Duration(p.MaxTime))
			session.WriteShorter(w, "", p.Shorter, p.MaxTime)
		case p.MaxTime > 0:
			fmt.Fprintf(w, "limit: within %s (--max-time)\n", estimate.Duration(p.MaxTime))
		}
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "run order (repetition rounds; cells shuffled within each round):")
	kw, cw := 0, 0
	for _, r := range p.Runs {
		kw, cw = max(kw, len(r.Kernel)), max(cw, len(r.Cell))
	}
	nw := len(fmt.Sprint(len(p.Runs)))
	for _, r := range p.Runs {
		fmt.Fprintf(w, "  %*d  %-*s  %-*s  rep %d\n", nw, r.N, kw, r.Kernel, cw, r.Cell, r.Rep)
	}

	for i, c := range p.Cells {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "cell %s [kernel %s]\n", c.Name, c.Kernel)
		runs := make([]string, len(c.Runs))
		for j, n := range c.Runs {
			runs[j] = fmt.Sprint(n)
		}
		fmt.Fprintf(w, "  runs: %s\n", strings.Join(runs, " "))
		if c.Accel != "" {
			fmt.Fprintf(w, "  accelerator: %s\n", c.Accel)
		}
		writeParams(w, p.Params[i])
		if len(c.Commands) > 0 {
			fmt.Fprintln(w, "  commands:")
			for _, cmd := range c.Commands {
				fmt.Fprintf(w, "    %s\n", cmd)
			}
		}
	}
}

// writeParams prints parameters one line per section: top-level keys as
// "key: value" pairs, nested ones as "section: key=value ...".
func writeParams(w io.Writer, params []scenarios.Param) {
	var line []string
	section := "\x00"
	flush := func() {
		if len(line) == 0 {
			return
		}
		if section == "" {
			fmt.Fprintf(w, "  %s\n", strings.Join(line, "  "))
		} else {
			fmt.Fprintf(w, "  %s: %s\n", section, strings.Join(line, " "))
		}
		line = nil
	}
	for _, pr := range params {
		sec, key := "", pr.Key
		if i := strings.LastIndex(pr.Key, "."); i >= 0 {
			sec, key = pr.Key[:i], pr.Key[i+1:]
		}
		if sec != section {
			flush()
			section = sec
		}
		v := pr.Value
		if v == "" {
			v = "-"
		}
		if v == "off" && (strings.HasPrefix(pr.Key, "perf.") || pr.Key == "latency") { // a section that is off
			flush()
			section = "\x00"
			fmt.Fprintf(w, "  %s: off\n", pr.Key)
			continue
		}
		if sec == "" {
			line = append(line, key+": "+v)
		} else {
			line = append(line, key+"="+v)
		}
	}
	flush()
}
