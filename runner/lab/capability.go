package lab

import (
	"os"
	"os/exec"
	"strings"

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
	// NestedKVM says the lab VM could itself use KVM for the experiment's
	// guest (kvm_intel/kvm_amd nested=1); false under TCG.
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
	var c Capabilities
	_, err := exec.LookPath(qemu.DefaultBinary)
	c.QEMU = err == nil
	c.Accel, c.KVMReason = qemu.DetectAccel()
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		c.Vendor = KVMVendorModule(string(b))
	}
	if c.Accel == qemu.KVM {
		c.NestedKVM = nestedEnabled("/sys/module/kvm_intel/parameters/nested") || nestedEnabled("/sys/module/kvm_amd/parameters/nested")
	}
	_, e1 := exec.LookPath("apt-get")
	_, e2 := exec.LookPath("dpkg-deb")
	c.APTGet = e1 == nil && e2 == nil
	return c
}

func nestedEnabled(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	v := strings.TrimSpace(string(b))
	return v == "Y" || v == "1"
}
