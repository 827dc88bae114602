package estimate

import (
	"fmt"
	"io"
	"time"
)

// LabBootCPUs is how many host CPUs one lab VM keeps busy while it and
// its first nested guest boot: measured 2026-12-03 on the 2-core CI
// machine under TCG, a lab's QEMU used about 1.2 of the 2 CPUs then
// (the host was ~60% busy). Labs side by side boot in about the time of
// the longest boot, or longer when their boots together need more CPUs
// than the host has. Labs run side by side only where their vCPUs fit
// the host's CPUs (lab.SideBySide): two 4-vCPU labs on those 2 CPUs
// took about twice as long to boot beside each other, not 1.2 times.
const LabBootCPUs = 1.2

// SideBySide folds labs booting side by side into the estimate: n lab
// VMs (in the kernels' order, n at a time) boot at once and measure in
// turn, on a host with cpus CPUs. What overlaps is each lab kernel's
// boot part: its lab VM's boot and its first guest's boot. The windows,
// the other boots and the setups stay one after the other. The saving
// is taken off the total and off the first sample of each lab but the
// first of its group (the progress line's ETA); SideBySideSaving and
// Write say so.
func (e *Estimate) SideBySide(n, cpus int) {
	labs := 0
	for i := range e.Kernels {
		if e.bootPart(i) > 0 {
			labs++
		}
	}
	if n = min(n, labs); n < 2 {
		return
	}
	var group []int // kernels of the current group, by index
	flush := func() {
		e.SideBySideSaving += e.overlap(group, cpus)
		group = group[:0]
	}
	for i := range e.Kernels {
		if e.bootPart(i) == 0 {
			continue // the running kernel's: no lab
		}
		group = append(group, i)
		if len(group) == n {
			flush()
		}
	}
	flush()
	e.Total -= e.SideBySideSaving
	e.SideBySideN = n
}

// bootPart is kernel i's lab VM boot and first guest boot (0: no lab).
func (e *Estimate) bootPart(i int) time.Duration {
	var lab, guest time.Duration
	for _, l := range e.Kernels[i].Lines {
		switch {
		case l.What == LineLab:
			lab = l.Time
		case l.What == LineBoots && l.N > 0:
			guest = l.Time / time.Duration(l.N)
		}
	}
	if lab == 0 {
		return 0
	}
	return lab + guest
}

// overlap is what booting the kernels of group at once saves: their
// boots one after the other, against the longest of them or their CPU
// need (LabBootCPUs each) on cpus CPUs, whichever is longer. The saving
// comes off the first sample of every kernel but the first.
func (e *Estimate) overlap(group []int, cpus int) time.Duration {
	if len(group) < 2 {
		return 0
	}
	var serial, longest time.Duration
	for _, i := range group {
		b := e.bootPart(i)
		serial += b
		longest = max(longest, b)
	}
	load := time.Duration(float64(serial) * LabBootCPUs / float64(max(cpus, 1)))
	saving := max(serial-max(longest, load), 0)
	left := saving
	for _, i := range group[1:] {
		first := e.firstSample[e.Kernels[i].Label]
		d := min(left, e.PerSample[first])
		e.PerSample[first] -= d
		left -= d
	}
	return saving - left
}

// writeSideBySide prints the side-by-side line of Write.
func (e *Estimate) writeSideBySide(w io.Writer, prefix string) {
	if e.SideBySideN < 2 {
		return
	}
	fmt.Fprintf(w, "%s  labs side by side: up to %d lab VMs boot at once, then measure in turn, one at a time: about -%s\n",
		prefix, e.SideBySideN, Duration(e.SideBySideSaving))
	fmt.Fprintf(w, "%s    [each lab's VM and first guest boot overlap the others'; a TCG lab keeps about %.1f CPUs busy while it boots]\n",
		prefix, LabBootCPUs)
}
