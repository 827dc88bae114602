package labvm

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/vminit"
)

// KVM modules: kvm, and one vendor module that registers /dev/kvm. Debian
// builds all three as modules and lab init has no udev to load them, so
// without them a lab VM on a KVM host never gets /dev/kvm and its nested
// guests fall back to TCG.
const (
	KVMModule      = "kvm"
	KVMIntelModule = "kvm_intel" // CPUs with vmx
	KVMAMDModule   = "kvm_amd"   // CPUs with svm
)

// KVMVendorModule returns the vendor module for the CPU described by
// /proc/cpuinfo text: KVMIntelModule when a flags line has vmx,
// KVMAMDModule when it has svm, "" when neither (no hardware virtualization
// exposed: a host without nested KVM, or a VM under TCG's -cpu without it).
func KVMVendorModule(cpuinfo string) string {
	switch qemu.VirtFlag(cpuinfo) {
	case "vmx":
		return KVMIntelModule
	case "svm":
		return KVMAMDModule
	}
	return ""
}

// MissingKVMModules returns which of kvm and vendor (KVMIntelModule or
// KVMAMDModule) the kernel of modulesDir has neither as a module nor built
// in: a lab VM booted on it could not give its nested guests KVM.
func MissingKVMModules(modulesDir, vendor string) ([]string, error) {
	ix, err := vmimages.OpenModules(modulesDir)
	if err != nil {
		return nil, err
	}
	_, missing, err := ix.ResolveAvailable([]string{KVMModule, vendor})
	return missing, err
}

// kvmFiles resolves kvm and each vendor module in the modules index for
// the initramfs: per vendor module, its files in load order (kvm and its
// dependencies first). Modules already loaded by the main list (have) are
// left out; names the kernel lacks go to missing.
func kvmFiles(ix *vmimages.ModuleIndex, have map[string]bool) (perVendor map[string][]vmimages.Module, missing []string, err error) {
	perVendor = map[string][]vmimages.Module{}
	for _, v := range []string{KVMIntelModule, KVMAMDModule} {
		mods, miss, err := ix.ResolveAvailable([]string{KVMModule, v})
		if err != nil {
			return nil, nil, err
		}
		for _, m := range miss {
			if !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
		if slices.Contains(miss, v) {
			continue
		}
		var out []vmimages.Module
		for _, m := range mods {
			if !have[m.Name] {
				out = append(out, m)
			}
		}
		perVendor[v] = out
	}
	return perVendor, missing, nil
}

// loadKVM runs in lab init: it picks the vendor module from /proc/cpuinfo
// (pickKVM), loads its files and makes sure /dev/kvm exists. It returns
// what it loaded ("kvm_intel"), or "" and why not; only an unreadable
// /proc/cpuinfo is an error.
func loadKVM(cfg *InitConfig) (loaded, why string, err error) {
	if cfg.KVM == nil {
		return "", "", nil
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "", "", fmt.Errorf("read /proc/cpuinfo: %w", err)
	}
	vendor, files, why := pickKVM(cfg, string(b))
	if vendor == "" {
		return "", why, nil
	}
	// A vendor module that refuses to load (say, vmx shown but VMX
	// disabled by the host) leaves the nested guests under TCG; the lab
	// itself still runs.
	if _, err := vminit.LoadModules(files); err != nil {
		return "", err.Error(), nil
	}
	if err := ensureCharDev("/dev/kvm", "/sys/class/misc/kvm/dev"); err != nil {
		return "", err.Error(), nil
	}
	return vendor, "", nil
}

// pickKVM chooses, for a CPU described by cpuinfo, the vendor module and
// its files from cfg.KVM, or says why there is none. A nil cfg.KVM (a lab
// under TCG) gives nothing and no reason.
func pickKVM(cfg *InitConfig, cpuinfo string) (vendor string, files []string, why string) {
	if cfg.KVM == nil {
		return "", nil, ""
	}
	v := KVMVendorModule(cpuinfo)
	if v == "" {
		return "", nil, "the lab VM's CPU shows no vmx/svm (nested KVM is off on the host)"
	}
	files, ok := cfg.KVM[v]
	if !ok {
		return "", nil, "the lab kernel has no " + v
	}
	return v, files, ""
}

// ensureCharDev creates the character device node path from the
// "MAJOR:MINOR" in sysDev when devtmpfs has not made it already.
func ensureCharDev(path, sysDev string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b, err := os.ReadFile(sysDev)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	dev, err := parseDevNumber(string(b))
	if err != nil {
		return fmt.Errorf("create %s: %s: %w", path, sysDev, err)
	}
	if err := unix.Mknod(path, unix.S_IFCHR|0o660, int(dev)); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// parseDevNumber parses a sysfs "dev" file ("10:232\n").
func parseDevNumber(s string) (uint64, error) {
	maj, min, ok := strings.Cut(strings.TrimSpace(s), ":")
	a, err1 := strconv.ParseUint(maj, 10, 32)
	b, err2 := strconv.ParseUint(min, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("device number %q: want MAJOR:MINOR", strings.TrimSpace(s))
	}
	return unix.Mkdev(uint32(a), uint32(b)), nil
}
