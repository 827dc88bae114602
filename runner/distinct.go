package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Distinct drops the cells that would run exactly what an earlier cell of
// the same kernel runs: the same kernel-facing commands (Commands: tap,
// qdisc, QEMU, pinning, perf, the workload's commands and /proc writes),
// the same guest sink, repetitions and warmup. Such cells would measure
// one experiment twice under two names. Each dropped cell gets a note
// naming the axes in which the two differ and the cell that runs. cells
// is Expand's output (one entry per kernel and cell, before Order).
func Distinct(cells []scenarios.Cell) ([]scenarios.Cell, []string) {
	var out []scenarios.Cell
	var notes []string
	kept := map[string]int{} // fingerprint -> index in out
	for _, c := range cells {
		fp := fingerprint(&c)
		j, dup := kept[fp]
		if !dup {
			kept[fp] = len(out)
			out = append(out, c)
			continue
		}
		n := fmt.Sprintf("cell %s runs the same commands as %s (they differ only in %s): it runs once, as %s",
			c.Name, out[j].Name, axesDiff(out[j].Axes, c.Axes), out[j].Name)
		if !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	return out, notes
}

// fingerprint is everything of c that reaches the kernel or the samples.
func fingerprint(c *scenarios.Cell) string {
	var b strings.Builder
	// The accelerator is the cell's choice (guest.accel), not this
	// host's: auto and tcg differ on a KVM host.
	fmt.Fprintf(&b, "kernel %s\nsink %s\nrepetitions %d\nwarmup %v\naccel %s\n", c.Kernel.Label, c.Guest.Sink, c.Repetitions, c.Warmup, c.Guest.Accel)
	for _, l := range Commands(c, qemu.TCG) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// axesDiff names the axes whose values differ: "generator.pktgen.burst 0
// and default".
func axesDiff(a, b map[string]string) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		va, oka := a[k]
		vb, okb := b[k]
		switch {
		case va == vb && oka == okb:
		case !oka:
			out = append(out, k+" (unset and "+strconv.Quote(vb)+")")
		case !okb:
			out = append(out, k+" ("+strconv.Quote(va)+" and unset)")
		default:
			out = append(out, k+" "+va+" and "+vb)
		}
	}
	if len(out) == 0 {
		return "their names"
	}
	return strings.Join(out, ", ")
}
