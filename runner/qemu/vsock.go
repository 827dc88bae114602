package qemu

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// VhostVsockPath is the vhost-vsock device node (module vhost_vsock): QEMU's
// vhost-vsock-pci opens it for the guest's AF_VSOCK transport.
const VhostVsockPath = "/dev/vhost-vsock"

// MinGuestCID is the lowest context ID a guest may have: 0 (hypervisor),
// 1 (local) and 2 (host) are reserved, and so is 2^32-1 (VMADDR_CID_ANY).
const MinGuestCID = 3

// vhostVsockSetGuestCID is VHOST_VSOCK_SET_GUEST_CID, _IOW(VHOST_VIRTIO
// 0xAF, 0x60, __u64) in include/uapi/linux/vhost.h.
const vhostVsockSetGuestCID = 0x4008AF60

// CheckVsock refuses a config whose vsock device cannot start: a reserved
// guest CID or one another VM already holds (bad input), or a kernel
// without vhost-vsock (a missing capability). It claims the CID on a
// throwaway /dev/vhost-vsock handle, as QEMU will, and releases it at once.
// A config without VsockCID passes.
func CheckVsock(c Config) error { return checkVsock(c, VhostVsockPath) }

func checkVsock(c Config, dev string) error {
	cid := c.VsockCID
	if cid == 0 {
		return nil
	}
	if cid < MinGuestCID || cid == math.MaxUint32 {
		return fault.Input("vsock guest CID %d is reserved (0 hypervisor, 1 local, 2 host, %d any); use a CID from %d to %d", cid, uint32(math.MaxUint32), MinGuestCID, uint32(math.MaxUint32-1))
	}
	fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return fault.Capability("vsock to the guest needs %s, which this kernel does not provide; "+
			"load vhost_vsock (modprobe vhost_vsock), or run the scenario on a VM-hosted kernel (lab mode), whose lab VM loads it", dev)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", dev, err)
	}
	defer unix.Close(fd)
	v := uint64(cid)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), vhostVsockSetGuestCID, uintptr(unsafe.Pointer(&v)))
	switch {
	case errno == 0:
		return nil
	case errno == unix.EADDRINUSE:
		return fault.Input("vsock guest CID %d is already in use on this host (another VM, or this host's own CID, has it); choose another CID", cid)
	}
	return fmt.Errorf("claim vsock guest CID %d on %s: %w", cid, dev, errno)
}
