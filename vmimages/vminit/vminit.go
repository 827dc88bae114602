// Package vminit is what every VM's /init does before its own work, the
// guest agent's (vmimages/agent) and the lab VM's (runner/labvm) alike:
// mount the kernel's file systems, load kernel modules in order, read the
// kernel's uptime. It runs inside the VM, as PID 1.
//
// The module loader takes a list of module files, dependencies first: the
// host side decides which files (vmimages.ModuleIndex resolves names and
// their dependencies into the image), so a rebuilt module loaded in place
// of the packaged one is only another file in the list.
package vminit

import (
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
