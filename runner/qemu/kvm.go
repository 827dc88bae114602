package qemu

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// KVM vendor modules and the CPU flags that select them.
const (
	ModuleKVMIntel = "kvm_intel" // CPUs with vmx
	ModuleKVMAMD   = "kvm_amd"   // CPUs with svm
)

// KVMHost is what the KVM probe looks at. The zero value is this machine;
// tests set the paths and RunVCPU to describe another one.
type KVMHost struct {
	CPUInfo   string // /proc/cpuinfo
	Dev       string // /dev/kvm
	SysModule string // /sys/module (vendor modules and their nested parameter)
	// RunVCPU creates a VM on dev and runs one vCPU to its first exit
	// (default: RunTinyGuest, the KVM ioctls).
	RunVCPU func(dev string) error
}

// KVMStatus is what the probe found.
type KVMStatus struct {
	// Usable is true when a vCPU really ran under KVM: the CPU shows vmx
	// or svm, the vendor module is loaded and a tiny guest ran to its
	// first exit on /dev/kvm. A node that merely exists (KVM-PVM, which
	// runs only specially built guests; a CPU without vmx/svm) is not
	// enough.
	Usable bool
	// Why is the reason KVM is not usable ("" when it is).
	Why string
	// Flag is the CPU's virtualization flag: "vmx", "svm" or "".
	Flag string
	// Vendor is the vendor module for Flag (ModuleKVMIntel,
	// ModuleKVMAMD; "" without a flag).
	Vendor string
	// Nested is the vendor module's nested parameter as it reads ("Y",
	// "N", "1", "0"; "" when unknown): a guest with -cpu host then sees
	// vmx/svm and can run KVM itself (a lab VM's nested guests).
	Nested string
}

// NestedOn reports whether KVM is usable and the vendor module lets
// guests run KVM themselves (nested=Y or 1).
func (s KVMStatus) NestedOn() bool { return s.Usable && (s.Nested == "Y" || s.Nested == "1") }

// Accel is the accelerator auto picks: KVM when usable, else TCG.
func (s KVMStatus) Accel() Accel {
	if s.Usable {
		return KVM
	}
	return TCG
}

// Probe looks at the host: the CPU flag, the vendor module and its nested
// parameter, the node, and a vCPU run to its first exit.
func (h KVMHost) Probe() KVMStatus {
	if h.CPUInfo == "" {
		h.CPUInfo = "/proc/cpuinfo"
	}
	if h.Dev == "" {
		h.Dev = "/dev/kvm"
	}
	if h.SysModule == "" {
		h.SysModule = "/sys/module"
	}
	if h.RunVCPU == nil {
		h.RunVCPU = RunTinyGuest
	}
	var st KVMStatus
	b, err := os.ReadFile(h.CPUInfo)
	if err != nil {
		st.Why = fmt.Sprintf("read %s: %v", h.CPUInfo, err)
		return st
	}
	st.Flag = VirtFlag(string(b))
	switch st.Flag {
	case "vmx":
		st.Vendor = ModuleKVMIntel
	case "svm":
		st.Vendor = ModuleKVMAMD
	default:
		st.Why = "the CPU has no vmx/svm flag (no hardware virtualization exposed)"
		return st
	}
	if v, err := os.ReadFile(filepath.Join(h.SysModule, st.Vendor, "parameters", "nested")); err == nil {
		st.Nested = strings.TrimSpace(string(v))
	}
	if _, err := os.Stat(h.Dev); err != nil {
		st.Why = fmt.Sprintf("no %s (load %s, or enable virtualization in the firmware)", h.Dev, st.Vendor)
		return st
	}
	if _, err := os.Stat(filepath.Join(h.SysModule, st.Vendor)); err != nil {
		// A /dev/kvm served by another module (kvm_pvm runs only
		// specially built guest kernels) is no KVM for a stock guest.
		st.Why = fmt.Sprintf("%s exists but %s is not loaded (%s serves another KVM flavour, such as KVM-PVM)", h.Dev, st.Vendor, h.Dev)
		return st
	}
	if err := h.RunVCPU(h.Dev); err != nil {
		st.Why = fmt.Sprintf("a test vCPU did not run on %s: %v", h.Dev, err)
		return st
	}
	st.Usable = true
	return st
}

// VirtFlag returns "vmx" or "svm" when a flags line of /proc/cpuinfo text
// has it, else "".
func VirtFlag(cpuinfo string) string {
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, f := range strings.Fields(v) {
			if f == "vmx" || f == "svm" {
				return f
			}
		}
	}
	return ""
}

var (
	hostOnce   sync.Once
	hostStatus KVMStatus
)

// ProbeKVM probes this machine once per process (a vCPU run costs a few
// milliseconds; the answer does not change during a run).
func ProbeKVM() KVMStatus {
	hostOnce.Do(func() { hostStatus = KVMHost{}.Probe() })
	return hostStatus
}

// DetectAccel returns KVM when KVM is really usable on this machine
// (ProbeKVM), else TCG with the reason.
func DetectAccel() (Accel, string) {
	st := ProbeKVM()
	return st.Accel(), st.Why
}

// Accelerator choices of a scenario's guest.accel.
const (
	AccelAuto = "auto"
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// ResolveAccel turns guest.accel (want: auto, kvm, tcg; "" = auto) into
// the accelerator for a host whose KVM probe gave st. auto falls back to
// TCG with a warning; kvm where KVM is not usable is a capability error
// (nothing may boot).
func ResolveAccel(want string, st KVMStatus) (Accel, string, error) {
	switch want {
	case AccelTCG:
		return TCG, "", nil
	case AccelKVM:
		if !st.Usable {
			return "", "", fault.Capability("guest.accel: kvm, but KVM is not usable here (%s); use accel: auto or tcg, or run 'vnetbench doctor'", st.Why)
		}
		return KVM, "", nil
	case AccelAuto, "":
		if !st.Usable {
			return TCG, "KVM is not usable (" + st.Why + "): guests run under TCG, so numbers measure the emulator, not the kernel datapath", nil
		}
		return KVM, "", nil
	}
	return "", "", fault.Input("guest.accel %q: want auto, kvm or tcg", want)
}

// KVMState is QMP query-kvm's answer.
type KVMState struct {
	Enabled bool `json:"enabled"`
	Present bool `json:"present"`
}

// CheckAccel compares what a running QEMU says (query-kvm) with the
// accelerator it was started with: a QEMU asked for KVM that does not run
// KVM is an error, so a run never measures TCG while believing it is KVM.
func CheckAccel(want Accel, got KVMState) error {
	if want == KVM && !got.Enabled {
		if !got.Present {
			return errors.New("qemu was started with -accel kvm but query-kvm says KVM is not present")
		}
		return errors.New("qemu was started with -accel kvm but query-kvm says KVM is not enabled")
	}
	if want != KVM && got.Enabled {
		return errors.New("qemu was started with -accel tcg but query-kvm says KVM is enabled")
	}
	return nil
}
