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
// Measured nested (TCG inside a lab VM's TCG, Debian's 6.1 cloud kernel
// as a PVH vmlinux) on a loaded 2-core machine, QEMU's start to the
// guest's ready, SeaBIOS against qboot, boots interleaved: with
// lab-selftest --boot-only 113.5 and 86.4 s against 71.1 and 73.3 s (the
// firmware's part, QEMU's start to the kernel's clock, 42.7 and 31.7 s
// against 18.7 and 17.3 s); with a run's guest (the agent's image, 512
// MiB) 105.9, 81.4, 112.5 and 111.8 s against 83.0, 90.3, 89.5 and 80.6 s,
// where the firmware's part was 13-16 s either way and the gain came in
// the guest kernel's own clock until /init (57-82 s against 54-60 s), for
// reasons not understood. One SeaBIOS boot overlaps; the means differ by
// 17 s (102.9 against 85.9 s).
const Qboot = "qboot.rom"

// firmwareDirs are where QEMU builds look for firmware by file name.
var firmwareDirs = []string{"/usr/share/qemu", "/usr/local/share/qemu"}

// TCGFirmware is the firmware of a guest under TCG: the path of Qboot
// when QEMU's data directory has it, else "" (SeaBIOS). Under KVM guests
// keep SeaBIOS, as on a real host.
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
