package lab

import (
	"context"
	"fmt"
	"github.com/vnetbench/vnetbench/runner"
	"slices"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Size is a lab VM's size for the cells it runs.
type Size struct {
	CPUs      int
	MemoryMiB int
	// Pin are the host CPUs the lab's vCPUs are pinned to (vCPU i on
	// Pin[i]); nil = unpinned.
	Pin      []int
	Warnings []string
}

// labBaseMiB is a lab VM's memory besides its guest's: the lab kernel, the
// harness, the guest's QEMU and the tmpfs directories (/tmp, /run, ...).
const labBaseMiB = 1536

// SizeFor sizes the lab VM of cells (one kernel's) on a host whose
// harness may run on hostCPUs (its CPU affinity, in order) with hostMemMiB
// of memory (0 = unknown). Pure.
//
//   - vCPUs: every CPU number a cell names must exist in the lab
//     (Cell.CPUsNeeded: pins, pktgen threads). Beyond that the lab gets
//     one vCPU per guest vCPU or generator CPU, plus one for the harness,
//     perf and QEMU's own threads, as far as the host has CPUs. QEMU's pc
//     machine takes at most qemu.MaxCPUs.
//   - memory: the largest guest memory of the cells plus labBaseMiB.
//   - pinning: when a cell pins threads, lab vCPU i runs on hostCPUs[i],
//     so "CPU 0" inside the lab is one host CPU for the whole run; a lab
//     with more vCPUs than the host has CPUs cannot be pinned one to one
//     (a warning says so).
func SizeFor(cells []scenarios.Cell, hostCPUs []int, hostMemMiB int) (Size, error) {
	need, want, guestMiB, pinned := 1, 1, 0, false
	for i := range cells {
		c := &cells[i]
		n := c.CPUsNeeded()
		need = max(need, n)
		want = max(want, max(n, c.Guest.VCPUs)+1)
		guestMiB = max(guestMiB, c.Guest.MemoryMiB)
		pinned = pinned || c.Pinned()
	}
	if guestMiB == 0 {
		guestMiB = 512 // QEMU's guest default in this harness
	}
	var ls Size
	ls.CPUs = max(need, min(want, len(hostCPUs)))
	if len(hostCPUs) == 0 {
		ls.CPUs = max(need, want)
	}
	if need > qemu.MaxCPUs {
		return Size{}, fault.Input("the cells name CPU %d, so their lab VM needs %d vCPUs; QEMU's pc machine takes at most %d: use CPUs below %d in pin: and generator settings",
			need-1, need, qemu.MaxCPUs, qemu.MaxCPUs)
	}
	ls.CPUs = min(ls.CPUs, qemu.MaxCPUs)
	ls.MemoryMiB = guestMiB + labBaseMiB
	if hostMemMiB > 0 && ls.MemoryMiB > hostMemMiB {
		ls.Warnings = append(ls.Warnings, fmt.Sprintf("the lab VM gets %d MiB (guest.memory %d MiB + %d MiB for the lab) but this host has %d MiB: it may run out of memory; lower guest.memory",
			ls.MemoryMiB, guestMiB, labBaseMiB, hostMemMiB))
	}
	if len(hostCPUs) > 0 && ls.CPUs > len(hostCPUs) {
		ls.Warnings = append(ls.Warnings, fmt.Sprintf("the lab VM needs %d vCPUs (the cells name CPU %d) but this host has %d: its vCPUs share host CPUs, so pinned threads are not alone on a CPU",
			ls.CPUs, need-1, len(hostCPUs)))
		return ls, nil
	}
	if pinned && len(hostCPUs) > 0 {
		ls.Pin = append([]int(nil), hostCPUs[:ls.CPUs]...)
	}
	return ls, nil
}

// VMArgs is the QEMU argv of the lab VM that runs cells (one kernel
// label's) on host h, as plan shows it (labvm.PlanArgs: placeholders for
// the kernel image, temporary files and the run directory), with the
// warnings of its sizing and accelerator. A lab whose cells cannot run on
// h (guest.accel: kvm without nested KVM, more CPUs than QEMU takes) is an
// error.
func VMArgs(label string, cells []scenarios.Cell, h Host) ([]string, []string, error) {
	if err := checkKernels(context.Background(), cells); err != nil {
		return nil, nil, err
	}
	c, warnings, err := labConfig(label, cells, runner.Options{}, Inner{}, nil, h)
	if err != nil {
		return nil, nil, err
	}
	return labvm.PlanArgs(c, ""), warnings, nil
}

// ThisHost describes this machine for VMArgs and SizeFor: its KVM
// (qemu.ProbeKVM), the CPUs the harness may run on, its memory, and
// what run would refuse here (runner.LookHost).
func ThisHost() Host {
	h := thisHost(runner.Options{})
	h.Look = runner.LookHost
	return h
}

// labAccels checks, before any lab boots, the accelerator of every lab
// cell: guest.accel: kvm where a lab VM here cannot give its guests KVM is
// a capability error; auto falling back to TCG is a warning. needKVM lists
// the labels whose cells need KVM (their lab kernels must ship kvm and the
// vendor module).
func labAccels(cells []scenarios.Cell, st qemu.KVMStatus) (warnings []string, needKVM map[string]bool, err error) {
	needKVM = map[string]bool{}
	for i := range cells {
		c := &cells[i]
		a, warn, err := runner.PlanAccel(c, st)
		if err != nil {
			return nil, nil, fmt.Errorf("kernel %s: %w", c.Kernel.Label, err)
		}
		if warn != "" && !slices.Contains(warnings, warn) {
			warnings = append(warnings, warn)
		}
		if a == qemu.KVM && c.Guest.Accel == qemu.AccelKVM {
			needKVM[c.Kernel.Label] = true
		}
	}
	return warnings, needKVM, nil
}

// MaxSideBySide caps the lab VMs that run at once (SideBySide).
const MaxSideBySide = 4

// SideBySide is how many of a run's lab VMs (one per kernel with samples
// to run, each of its Size) run at once on a host with hostMemMiB of
// memory (0 = unknown) and cpus CPUs for the harness: as many as fit both
// in three quarters of its memory and, vCPU for vCPU, in its CPUs (the
// largest together), at most MaxSideBySide; 1 when only one fits or the
// memory is unknown (then the labs run one after the other, without
// turns). Pure.
//
// The vCPUs must fit: on the 2-core CI machine under TCG (2026-12-03,
// lab-pktgen, warm caches), its two 4-vCPU labs side by side saved no
// wall time (477 s and 431 s against 465 s one after the other) and took
// 25-40% more CPU (843 s and 754 s user against 603 s); their nested
// guests came up in 254-313 s beside each other, 139-140 s alone. Likely
// cause: a TCG guest kernel spins on a lock whose holder's vCPU thread is
// descheduled, and more vCPUs than CPUs make that common.
func SideBySide(labs []Size, hostMemMiB, cpus int) int {
	n := min(len(labs), MaxSideBySide)
	if n <= 1 || hostMemMiB <= 0 {
		return min(len(labs), 1)
	}
	mem := descending(labs, func(s Size) int { return s.MemoryMiB })
	vcpus := descending(labs, func(s Size) int { return max(s.CPUs, 1) })
	for ; n > 1; n-- {
		if sum(mem[:n]) <= hostMemMiB*3/4 && sum(vcpus[:n]) <= cpus {
			break
		}
	}
	return n
}

// descending is f of each lab, the largest first.
func descending(labs []Size, f func(Size) int) []int {
	out := make([]int, len(labs))
	for i, s := range labs {
		out[i] = f(s)
	}
	slices.SortFunc(out, func(a, b int) int { return b - a })
	return out
}

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// PlanSideBySide is how many of the lab VMs of cells (those of kernels
// other than the running one, each sized by SizeFor) run at once on host
// h: SideBySide of their sizes; 1 when one cannot be sized (its lab's
// start says why). For the estimate of plan and run, and for Run.
func PlanSideBySide(cells []scenarios.Cell, h Host) int {
	_, labCells := scenarios.SplitRunning(cells)
	labels, byLabel := scenarios.ByKernel(labCells, nil)
	var sizes []Size
	for _, l := range labels {
		size, err := SizeFor(byLabel[l], h.CPUs, h.MemMiB)
		if err != nil {
			return 1
		}
		sizes = append(sizes, size)
	}
	return SideBySide(sizes, h.MemMiB, len(h.CPUs))
}
