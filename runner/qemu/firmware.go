package qemu

import (
	"os"
	"path/filepath"
)

// Qboot is QEMU's minimal x86 firmware (qboot, shipped beside SeaBIOS in
// QEMU's data directory, Debian's qemu-system-data among them). It
// starts a -kernel boot (bzImage or PVH vmlinux) without SeaBIOS's POST
// (no option ROMs, no boot menu, no disk probing); the kernel gets the
// same ACPI tables, which QEMU builds either way, and the same devices.
//
// Under TCG inside a lab VM's TCG (a nested guest) SeaBIOS's start takes
// tens of seconds. Measured on a loaded 2-core machine (lab-selftest
// --boot-only, Debian's 6.1 cloud kernel as a PVH vmlinux, 2 boots each,
// interleaved in one lab VM): QEMU's start to the guest kernel's clock
// 42.7 and 31.7 s with SeaBIOS, 18.7 and 17.3 s with qboot; QEMU's start to
// the guest's /init ready 113.5 and 86.4 s against 71.1 and 73.3 s.
const Qboot = "qboot.rom"

// firmwareDirs are where QEMU builds look for firmware by file name.
var firmwareDirs = []string{"/usr/share/qemu", "/usr/local/share/qemu"}

// TCGFirmware is the firmware of a guest under TCG: the path of Qboot
// when QEMU's data directory has it, else "" (SeaBIOS). Under KVM guests keep SeaBIOS, as
// on a real host.
func TCGFirmware() string {
	return findFirmware(Qboot, firmwareDirs)
}

// findFirmware returns the path of the first file called name in dirs,
// else "".
func findFirmware(name string, dirs []string) string {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}
