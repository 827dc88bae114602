package runner

import (
	"fmt"
	"slices"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// A cell's guest boots with the accelerator its guest.accel asks for
// (auto, kvm, tcg), resolved against the host's KVM probe
// (qemu.ProbeKVM: a test vCPU run, not a node that merely exists). Cells
// on the running kernel use the host's KVM; cells in a lab VM use the KVM
// the lab VM has for its own guests (NestedKVM). plan, run --dry-run,
// reproduce.sh and env.json show the accelerator really used.

// CellAccels resolves every cell's guest.accel on a host whose KVM probe
// gave st (force, when set, is every guest's accelerator). It returns the
// accelerator the cells share ("kvm+tcg" when they differ), one warning
// per fallback reason (auto without KVM), and an error (a capability
// error: exit 2) for the first cell that asks for kvm where KVM does not
// work, before anything is set up.
func CellAccels(cells []scenarios.Cell, st qemu.KVMStatus, force qemu.Accel) (qemu.Accel, []string, error) {
	var warnings []string
	seen := map[qemu.Accel]bool{}
	for i := range cells {
		a, warn, err := CellAccel(&cells[i], st, force)
		if err != nil {
			return "", nil, err
		}
		seen[a] = true
		if warn != "" && !slices.Contains(warnings, warn) {
			warnings = append(warnings, warn)
		}
	}
	switch {
	case seen[qemu.KVM] && seen[qemu.TCG]:
		return "kvm+tcg", warnings, nil
	case seen[qemu.KVM]:
		return qemu.KVM, warnings, nil
	}
	return qemu.TCG, warnings, nil
}

// CellAccel is c's accelerator on a host whose KVM probe gave st: force
// when set, else guest.accel resolved (qemu.ResolveAccel), with the
// fallback warning of auto.
func CellAccel(c *scenarios.Cell, st qemu.KVMStatus, force qemu.Accel) (qemu.Accel, string, error) {
	if force != "" {
		return force, "", nil
	}
	a, warn, err := qemu.ResolveAccel(c.Guest.Accel, st)
	if err != nil {
		return "", "", fmt.Errorf("cell %s: %w", c.Name, err)
	}
	return a, warn, nil
}

// NestedKVM is the KVM a lab VM's guests get on a host whose probe gave
// st: lab init loads the lab kernel's kvm and vendor modules, and the lab
// VM's CPU (-cpu host) shows vmx/svm only where the host's KVM runs and
// nests (nested=Y/1). That the lab kernel ships the modules is checked
// before the lab boots when a cell needs KVM (labvm.Config.NeedKVM).
func NestedKVM(st qemu.KVMStatus) qemu.KVMStatus {
	switch {
	case !st.Usable:
		return qemu.KVMStatus{Why: "the lab VM itself runs under TCG: " + st.Why}
	case !st.NestedOn():
		nested := st.Nested
		if nested == "" {
			nested = "unknown"
		}
		return qemu.KVMStatus{Flag: st.Flag, Vendor: st.Vendor, Nested: st.Nested,
			Why: fmt.Sprintf("nested KVM is off on this host (%s nested=%s; modprobe %s nested=1 turns it on)", st.Vendor, nested, st.Vendor)}
	}
	return qemu.KVMStatus{Usable: true, Flag: st.Flag, Vendor: st.Vendor}
}

// PlanAccel is the accelerator c's guest gets on a host whose KVM probe
// gave st: CellAccel with st for a cell on the running kernel, with
// NestedKVM(st) for a cell in a lab VM.
func PlanAccel(c *scenarios.Cell, st qemu.KVMStatus) (qemu.Accel, string, error) {
	if !c.Kernel.Running() {
		st = NestedKVM(st)
	}
	return CellAccel(c, st, "")
}
