package agent

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolChannels is struct ethtool_channels (include/uapi/linux/ethtool.h).
type ethtoolChannels struct {
	Cmd                                    uint32
	MaxRx, MaxTx, MaxOther, MaxCombined    uint32
	RxCount, TxCount, OtherCount, Combined uint32
}

// ifreqData is struct ifreq with ifr_data: the name and a pointer, padded
// to the union's 24 bytes.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolChannelsIoctl runs ETHTOOL_GCHANNELS or ETHTOOL_SCHANNELS on dev.
func ethtoolChannelsIoctl(fd int, dev string, ch *ethtoolChannels) error {
	var ifr ifreqData
	if len(dev) >= len(ifr.name) {
		return fmt.Errorf("interface name %q too long", dev)
	}
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(ch)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(ch)
	if errno != 0 {
		return errno
	}
	return nil
}

// useAllQueues enables every queue pair a multi-queue NIC offers
// (ethtool -L DEV combined MAX): virtio-net enables only as many pairs as
// the guest has CPUs, and QEMU then detaches the tap's other queues, so a
// 1-vCPU guest on a 4-queue tap would leave the host a 1-queue tap. It
// returns the pairs in use; a NIC without channels (or with one queue)
// is left alone.
func useAllQueues(dev string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ch := ethtoolChannels{Cmd: unix.ETHTOOL_GCHANNELS}
	if err := ethtoolChannelsIoctl(fd, dev, &ch); err != nil {
		return 0, nil // no channels to set (not every driver has them)
	}
	if ch.MaxCombined <= 1 || ch.Combined >= ch.MaxCombined {
		return int(ch.Combined), nil
	}
	set := ethtoolChannels{Cmd: unix.ETHTOOL_SCHANNELS, Combined: ch.MaxCombined}
	if err := ethtoolChannelsIoctl(fd, dev, &set); err != nil {
		return int(ch.Combined), fmt.Errorf("%s: enable %d queue pairs (ethtool -L combined): %w", dev, ch.MaxCombined, err)
	}
	return int(ch.MaxCombined), nil
}
