package hostnet

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// KernelRelease is the running kernel's release, as uname -r prints it
// (the same as /proc/sys/kernel/osrelease). Callers choose what to show
// when it fails.
func KernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}
