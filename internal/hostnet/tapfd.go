package hostnet

import (
	"errors"
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TapInfo is what the kernel says about a tap (netlink IFLA_TUN_* data).
type TapInfo struct {
	MultiQueue bool
	VnetHdr    bool
	// Queues is the number of attached queues (file descriptors open on
	// the tap) of a multi-queue tap; a single-queue tap reports 0 here
	// and has exactly one queue.
	Queues int
}

// TapInfo returns the flags and attached queue count of a tap in the
// namespace. It fails when dev is not a tun/tap device.
func (n *Netns) TapInfo(dev string) (TapInfo, error) {
	var ti TapInfo
	err := n.Do(func() error {
		var err error
		ti, err = tapInfo(dev)
		return err
	})
	return ti, err
}

// tapInfo reads a tap's netlink info in the calling thread's namespace.
func tapInfo(dev string) (TapInfo, error) {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return TapInfo{}, fmt.Errorf("tap %s: %w", dev, err)
	}
	t, ok := l.(*netlink.Tuntap)
	if !ok {
		return TapInfo{}, fmt.Errorf("%s is a %s device, not a tap", dev, l.Type())
	}
	return TapInfo{
		MultiQueue: t.Flags&netlink.TUNTAP_MULTI_QUEUE != 0,
		VnetHdr:    t.Flags&netlink.TUNTAP_VNET_HDR != 0,
		Queues:     t.Queues,
	}, nil
}

// TapReaders reports how many readers hold queues of the tap in the
// namespace, whether its link is up or down: netlink counts a
// multi-queue tap's; a single-queue tap's one queue is found by trying to
// attach it (EBUSY: a reader holds it; else the queue is let go at once).
func (n *Netns) TapReaders(dev string) (int, error) {
	var readers int
	err := n.Do(func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		t, ok := l.(*netlink.Tuntap)
		if !ok {
			return fmt.Errorf("%s is a %s device, not a tap", dev, l.Type())
		}
		if t.Flags&netlink.TUNTAP_MULTI_QUEUE != 0 {
			readers = t.Queues + t.DisabledQueues
			return nil
		}
		flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
		if t.Flags&netlink.TUNTAP_VNET_HDR != 0 {
			flags |= unix.IFF_VNET_HDR
		}
		f, err := openTapQueue(dev, flags)
		if errors.Is(err, unix.EBUSY) {
			readers = 1
			return nil
		}
		if err != nil {
			return err
		}
		return f.Close()
	})
	return readers, err
}

// VnetHdrLen is the size of the virtio_net_hdr in front of every frame
// read from a tap opened with IFF_VNET_HDR (the kernel's default; QEMU
// and AttachTap leave it at that).
const VnetHdrLen = 10

// AttachTap opens queues file descriptors on an existing tap in the
// namespace, as a reader such as QEMU would: with the tap's own
// IFF_VNET_HDR and IFF_MULTI_QUEUE flags (a single-queue tap takes one
// reader). Attaching gives the tap its carrier; each attached queue is one
// of the tap's queues, in order. The files are non-blocking (reads go
// through Go's poller, so Close interrupts a pending Read); each Read
// returns one frame, after VnetHdrLen bytes of virtio_net_hdr when
// TapInfo.VnetHdr. Close the files to detach.
func (n *Netns) AttachTap(dev string, queues int) ([]*os.File, error) {
	if queues < 1 {
		return nil, fmt.Errorf("attach tap %s: %d queues; want 1 or more", dev, queues)
	}
	var files []*os.File
	err := n.Do(func() error {
		ti, err := tapInfo(dev)
		if err != nil {
			return err
		}
		if !ti.MultiQueue && queues > 1 {
			return fmt.Errorf("attach tap %s: it is single-queue, cannot take %d readers", dev, queues)
		}
		flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
		if ti.VnetHdr {
			flags |= unix.IFF_VNET_HDR
		}
		if ti.MultiQueue {
			flags |= unix.IFF_MULTI_QUEUE
		}
		for i := 0; i < queues; i++ {
			f, err := openTapQueue(dev, flags)
			if err != nil {
				return fmt.Errorf("attach tap %s queue %d: %w", dev, i, err)
			}
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	return files, nil
}

func openTapQueue(dev string, flags uint16) (*os.File, error) {
	// The tun file belongs to the namespace of the opening thread.
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(dev)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("TUNSETIFF: %w (the tap is already attached to a reader)", err)
		}
		return nil, fmt.Errorf("TUNSETIFF: %w", err)
	}
	return os.NewFile(uintptr(fd), "tap:"+dev), nil
}
