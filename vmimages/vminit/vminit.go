// Package vminit is what every VM's /init does before its own work, the
// guest agent's (vmimages/agent) and the lab VM's (runner/labvm) alike:
// mount the kernel's file systems, load kernel modules in order, read the
// kernel's uptime, power off. It runs inside the VM, as PID 1.
//
// The module loader takes a list of module files, dependencies first: the
// host side decides which files (vmimages.ModuleIndex resolves names and
// their dependencies into the image), so a rebuilt module loaded in place
// of the packaged one is only another file in the list.
package vminit

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Mount is one file system to mount.
type Mount struct {
	Src, Dst, FSType string
	Flags            uintptr
}

// Base are the kernel's file systems every /init mounts: proc, sysfs and
// devtmpfs.
var Base = []Mount{{"proc", "/proc", "proc", 0}, {"sysfs", "/sys", "sysfs", 0}, {"devtmpfs", "/dev", "devtmpfs", 0}}

// MountAll creates each mount point and mounts ms in order; one mounted
// already (EBUSY) is fine.
func MountAll(ms []Mount) error {
	for _, m := range ms {
		if err := os.MkdirAll(m.Dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.Src, m.Dst, m.FSType, m.Flags, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.FSType, m.Dst, err)
		}
	}
	return nil
}

// LoadModules loads the module files in order (finit_module) and returns
// how many it loaded; a module loaded already (EEXIST) is fine. A file
// that is missing or that the kernel refuses ends it, the module named.
func LoadModules(paths []string) (int, error) {
	n := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return n, fmt.Errorf("load module: %w", err)
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return n, fmt.Errorf("load module %s: %w", filepath.Base(p), err)
		}
		n++
	}
	return n, nil
}

// ModuleList is where an image lists the modules its /init loads at boot
// (vmimages.Build writes it for the guest agent): one file a line,
// relative to the kernel's /lib/modules/<release>, dependencies first.
const ModuleList = "/etc/vnb/modules"

// ModuleListPaths returns the module files of list (ModuleList's
// format) under dir, in order.
func ModuleListPaths(list []byte, dir string) []string {
	var paths []string
	for _, rel := range strings.Fields(string(list)) {
		paths = append(paths, filepath.Join(dir, rel))
	}
	return paths
}

// LoadModuleList loads the modules the list file names (ModuleList's
// format) from dir, in order (LoadModules). No list file is nothing to
// load; a listed file that is missing hints at an image built for another
// kernel release.
func LoadModuleList(file, dir string) (int, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := LoadModules(ModuleListPaths(data, dir))
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%w (the image was built for another kernel release?)", err)
	}
	return n, err
}

// Uptime is the time since the kernel started (/proc/uptime; 0 when
// unknown).
func Uptime() time.Duration {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(strings.TrimSpace(f), 64)
	return time.Duration(v * float64(time.Second))
}

// PowerOff syncs the file systems and powers the VM off; it returns only
// when the kernel refused (not PID 1, say). With QEMU's -no-reboot and
// panic=-1 a PID 1 that exits after it ends the VM too.
func PowerOff() error {
	unix.Sync()
	return unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
}

// ModuleCheck is a module that must run as built: a rebuilt module loaded
// in place of the packaged one, by its srcversion and GNU build ID.
type ModuleCheck struct {
	Name       string `json:"name"`
	SrcVersion string `json:"srcversion,omitempty"`
	BuildID    string `json:"build_id,omitempty"`
}

// CheckModules makes sure each module of checks runs as built: its
// srcversion and GNU build ID under sysfs (/sys/module) are the expected
// ones. A module loaded from elsewhere (the kernel's own build winning the
// load) is an error: a VM must not be measured with it as the rebuilt
// one. It returns the modules found as built.
func CheckModules(sysfs string, checks []ModuleCheck) ([]string, error) {
	var ok []string
	for _, c := range checks {
		dir := filepath.Join(sysfs, c.Name)
		if _, err := os.Stat(dir); err != nil {
			return ok, fmt.Errorf("rebuilt module %s is not loaded (%v)", c.Name, err)
		}
		if c.SrcVersion != "" {
			b, err := os.ReadFile(filepath.Join(dir, "srcversion"))
			if got := strings.TrimSpace(string(b)); err != nil || got != c.SrcVersion {
				return ok, fmt.Errorf("module %s running has srcversion %q, the rebuilt one %s: not the rebuilt module", c.Name, got, c.SrcVersion)
			}
		}
		if c.BuildID != "" {
			b, err := os.ReadFile(filepath.Join(dir, "notes", ".note.gnu.build-id"))
			got := ""
			if err == nil {
				got, err = NoteBuildID(b)
			}
			if err != nil || got != c.BuildID {
				return ok, fmt.Errorf("module %s running has build ID %q (%v), the rebuilt one %s: not the rebuilt module", c.Name, got, err, c.BuildID)
			}
		}
		ok = append(ok, c.Name)
	}
	return ok, nil
}

// NoteBuildID reads the GNU build ID from an ELF note section's bytes (a
// module file's .note.gnu.build-id, or
// /sys/module/NAME/notes/.note.gnu.build-id of a loaded one).
func NoteBuildID(b []byte) (string, error) {
	for len(b) >= 12 {
		nsz := binary.LittleEndian.Uint32(b[0:])
		dsz := binary.LittleEndian.Uint32(b[4:])
		typ := binary.LittleEndian.Uint32(b[8:])
		name := int(nsz+3) &^ 3
		if 12+name+int(dsz) > len(b) {
			break
		}
		if typ == 3 && nsz == 4 && string(b[12:15]) == "GNU" { // NT_GNU_BUILD_ID
			return hex.EncodeToString(b[12+name : 12+name+int(dsz)]), nil
		}
		b = b[min(12+name+(int(dsz+3)&^3), len(b)):]
	}
	return "", errors.New("no GNU build ID note")
}
