package labvm

import (
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/runner/qemu"
)

// Needed reports whether a kernel entry needs lab mode: it names a kernel
// image or a Debian package rather than the running kernel.
func Needed(k Kernel) bool { return k.Image != "" || k.Debian != "" }

// Capabilities is what doctor reports about lab mode on this host.
type Capabilities struct {
	QEMU      bool       // qemu-system-x86_64 found
	Accel     qemu.Accel // what a lab VM would use
	KVMReason string     // why KVM is not used ("" when it is)
	// KVM is the host's KVM probe (a vCPU run, the vendor module, its
	// nested parameter).
	KVM qemu.KVMStatus
	// NestedKVM says the lab VM could itself use KVM for the experiment's
	// guest: KVM really runs here and the vendor module has nested=Y/1.
	// The lab kernel must still ship kvm and the vendor module
	// (MissingKVMModules), which lab init loads.
	NestedKVM bool
	// Vendor is the KVM vendor module for this host's CPU (KVMIntelModule,
	// KVMAMDModule; "" without vmx/svm): a lab VM with nested KVM loads it
	// from its own kernel, which must ship it (MissingKVMModules).
	Vendor string
	// APTGet says Debian kernel packages can be fetched (apt-get, dpkg-deb).
	APTGet bool
}

// Probe checks the host for lab mode (QEMU, KVM and nesting, apt-get).
func Probe() Capabilities {
	c := FromKVM(qemu.ProbeKVM())
	_, err := proc.LookPath(qemu.DefaultBinary)
	c.QEMU = err == nil
	_, e1 := proc.LookPath("apt-get")
	_, e2 := proc.LookPath("dpkg-deb")
	c.APTGet = e1 == nil && e2 == nil
	return c
}

// FromKVM fills the KVM part of Capabilities from a KVM probe: the lab VM's
// accelerator, the vendor module, nested KVM only where a vCPU really ran
// and nesting is on (a nested parameter alone proves nothing on a host
// whose /dev/kvm cannot run a standard guest).
func FromKVM(st qemu.KVMStatus) Capabilities {
	return Capabilities{Accel: st.Accel(), KVMReason: st.Why, KVM: st, NestedKVM: st.NestedOn(), Vendor: st.Vendor}
}
