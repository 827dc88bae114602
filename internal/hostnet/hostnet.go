// Package hostnet is the host side of a run's network: a network namespace
// the harness creates and deletes, a tap device inside it (single or
// multi-queue, vnet_hdr), its qdisc and address, and the counters the
// measurement reads (link statistics, qdisc statistics). Everything goes
// through netlink (vishvananda/netlink) from a thread switched into the
// namespace; nothing is created in the harness's own namespace.
//
// It does not start processes (programs run in the namespace through
// internal/proc's Cmd.Netns).
package hostnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named network namespaces live (as with `ip netns`).
const NetnsDir = "/run/netns"

// Netns is a named network namespace owned by the harness.
type Netns struct {
	Name   string
	handle netns.NsHandle
	item   *ledger.Item
	// mnt holds the namespace's bind mount (/run/netns/NAME) open
	// (O_PATH), so that Delete can unmount it when another mount covers
	// it (see unmountHeld).
	mnt *os.File
}

// CreateNetns creates the named namespace (/run/netns/NAME) with its
// loopback up, recorded in the process's ledger first (with its inode
// once made). It fails if the name exists.
func CreateNetns(name string) (ns *Netns, err error) {
	if _, err := os.Stat(filepath.Join(NetnsDir, name)); err == nil {
		return nil, fmt.Errorf("netns %s already exists; it is not this run's: 'vnetbench doctor' lists what killed runs left behind", name)
	}
	it, err := ledger.Record(ledger.Entry{Kind: ledger.Netns, Name: name})
	if err != nil {
		return nil, err
	}
	// NewNamed leaves its thread in the new namespace: a throwaway one.
	var h netns.NsHandle
	err = onThread(func() error {
		var err error
		h, err = netns.NewNamed(name)
		return err
	})
	if err != nil {
		os.Remove(filepath.Join(NetnsDir, name))
		it.Gone()
		return nil, fmt.Errorf("create netns %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(NetnsDir, name), &st); err == nil {
		it.Made(func(e *ledger.Entry) { e.Ino = st.Ino })
	}
	ns = &Netns{Name: name, handle: h, item: it}
	if fd, err := unix.Open(filepath.Join(NetnsDir, name), unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
		ns.mnt = os.NewFile(uintptr(fd), name)
	}
	if err := ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	}); err != nil {
		ns.Delete()
		return nil, fmt.Errorf("netns %s: set lo up: %w", name, err)
	}
	return ns, nil
}

// OpenNetns opens the existing namespace /run/netns/NAME (one a killed
// run left, for doctor); Close releases it without deleting it.
func OpenNetns(name string) (*Netns, error) {
	h, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", name, err)
	}
	return &Netns{Name: name, handle: h}, nil
}

// Close releases the namespace's handle; the namespace stays.
func (n *Netns) Close() error {
	if n.mnt != nil {
		n.mnt.Close()
		n.mnt = nil
	}
	return n.handle.Close()
}

// Delete removes the namespace; devices inside it (the tap) go with it
// once no process holds it.
func (n *Netns) Delete() error {
	n.handle.Close()
	n.unmountHeld()
	err := netns.DeleteNamed(n.Name)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, os.ErrNotExist) {
		if rerr := os.Remove(filepath.Join(NetnsDir, n.Name)); rerr != nil && !os.IsNotExist(rerr) {
			return fmt.Errorf("delete netns %s: %w", n.Name, rerr)
		}
		n.gone()
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete netns %s: %w", n.Name, err)
	}
	n.gone()
	return nil
}

// unmountHeld unmounts the bind mount CreateNetns made, through the
// descriptor that holds it, wherever it now is. `ip netns add` on a host
// whose /run/netns is not a mount point yet binds /run/netns onto itself,
// recursively: the namespace's path then shows a copy of the mount, and
// the original, covered, keeps the file busy, so unmounting the path and
// removing the file (netns.DeleteNamed) failed with EBUSY and left the
// namespace behind. The copy goes with DeleteNamed's unmount.
func (n *Netns) unmountHeld() {
	if n.mnt == nil {
		return
	}
	_ = unix.Unmount(fmt.Sprintf("/proc/self/fd/%d", n.mnt.Fd()), unix.MNT_DETACH)
	n.mnt.Close()
	n.mnt = nil
}

// gone records the namespace, and what was in it, gone.
func (n *Netns) gone() {
	ledger.GoneWithin(n.Name)
	n.item.Gone()
}

// Do runs fn on a thread switched into the namespace: a new goroutine
// locked to its thread, which Go discards when fn returns (the thread never
// goes back to the harness's namespace, so a failed switch back cannot
// leave a goroutine of the harness inside the run's namespace). fn runs on
// that goroutine, not the caller's; a panic in fn is raised again in the
// caller. Goroutines fn starts run outside the namespace.
func (n *Netns) Do(fn func() error) error {
	return onThread(func() error {
		if err := netns.Set(n.handle); err != nil {
			return fmt.Errorf("enter netns %s: %w", n.Name, err)
		}
		return fn()
	})
}

// onThread runs fn on a new goroutine locked to its OS thread and never
// unlocked, so the thread, whatever namespace fn left it in, ends with the
// goroutine. It waits for fn and re-panics a panic of fn in the caller.
//
// The process's main thread is the exception: Go cannot end it (it would
// stay, parked, in fn's namespace, and /proc/self/net with it). A goroutine
// that lands there keeps it locked and idle while another goroutine, on
// another thread, runs fn.
func onThread(fn func() error) error {
	done := make(chan threadResult, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			runLocked(fn, done) // never unlocked: see above
			return
		}
		inner := make(chan threadResult, 1)
		go func() {
			runtime.LockOSThread() // not the main thread: it is locked here
			runLocked(fn, inner)
		}()
		r := <-inner
		runtime.UnlockOSThread()
		done <- r
	}()
	r := <-done
	if r.panicked {
		if r.value == nil { // fn called runtime.Goexit (t.FailNow)
			runtime.Goexit()
		}
		panic(r.value)
	}
	return r.err
}

type threadResult struct {
	err      error
	panicked bool
	value    any
}

// runLocked runs fn and sends its result (or its panic) to done.
func runLocked(fn func() error, done chan<- threadResult) {
	r := threadResult{panicked: true}
	defer func() {
		if r.panicked {
			r.value = recover()
		}
		done <- r
	}()
	r.err = fn()
	r.panicked = false
}

// Tap describes a tap device to create.
type Tap struct {
	Name   string // ifname, at most 15 bytes
	Queues int    // 0 or 1 = single queue; N > 1 = IFF_MULTI_QUEUE
	Addr   string // host address with prefix, e.g. 10.0.0.1/24 ("" = none)
	TxQLen int    // 0 = kernel default (1000)
}

// CreateTap creates a persistent tap (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, plus
// IFF_MULTI_QUEUE when Queues > 1) inside the namespace, sets its address
// and brings it up. QEMU attaches to it by name.
func (n *Netns) CreateTap(t Tap) error {
	if len(t.Name) == 0 || len(t.Name) > 15 {
		return fmt.Errorf("tap name %q must be 1..15 bytes", t.Name)
	}
	it, err := ledger.Record(ledger.Entry{Kind: ledger.Tap, Name: t.Name, Netns: n.Name})
	if err != nil {
		return err
	}
	err = n.createTap(t)
	if err != nil {
		it.Gone()
		return err
	}
	it.Made(nil)
	return nil
}

// createTap is CreateTap's work inside the namespace; the tap's ifalias
// names the ledger that recorded it.
func (n *Netns) createTap(t Tap) error {
	return n.Do(func() error {
		flags := netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR
		q := 1
		if t.Queues > 1 {
			flags |= netlink.TUNTAP_MULTI_QUEUE
			q = t.Queues
		} else {
			flags |= netlink.TUNTAP_ONE_QUEUE
		}
		tt := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: t.Name, TxQLen: t.TxQLen}, Mode: netlink.TUNTAP_MODE_TAP,
			Flags: flags, Queues: q}
		if err := netlink.LinkAdd(tt); err != nil {
			return fmt.Errorf("create tap %s: %w", t.Name, err)
		}
		for _, f := range tt.Fds {
			f.Close()
		}
		link, err := netlink.LinkByName(t.Name)
		if err != nil {
			return fmt.Errorf("tap %s: %w", t.Name, err)
		}
		if err := netlink.LinkSetAlias(link, ledger.AliasPrefix+ledger.ID()); err != nil {
			netlink.LinkDel(link)
			return fmt.Errorf("tap %s: ifalias: %w", t.Name, err)
		}
		if t.TxQLen > 0 {
			if err := netlink.LinkSetTxQLen(link, t.TxQLen); err != nil {
				return fmt.Errorf("tap %s: txqueuelen: %w", t.Name, err)
			}
		}
		if t.Addr != "" {
			a, err := netlink.ParseAddr(t.Addr)
			if err != nil {
				return fmt.Errorf("tap %s: address %q: %w", t.Name, t.Addr, err)
			}
			if err := netlink.AddrReplace(link, a); err != nil {
				return fmt.Errorf("tap %s: add address %s: %w", t.Name, t.Addr, err)
			}
		}
		if err := netlink.LinkSetUp(link); err != nil {
			return fmt.Errorf("tap %s: set up: %w", t.Name, err)
		}
		return nil
	})
}

// DeleteLink removes a device from the namespace.
func (n *Netns) DeleteLink(name string) error {
	defer ledger.This().GoneMatching(func(e *ledger.Entry) bool {
		return e.Netns == n.Name && (e.Kind == ledger.Tap && e.Name == name || e.Kind == ledger.Qdisc && strings.HasPrefix(e.Name, name+" "))
	})
	return n.Do(func() error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return err
		}
		return netlink.LinkDel(l)
	})
}

// LinkStats are a device's counters.
type LinkStats struct {
	RxPackets, TxPackets, RxBytes, TxBytes, RxDropped, TxDropped, TxErrors uint64
	OperUp, NoCarrier                                                      bool
	// TxQLen is the device's txqueuelen: on a tap, the depth of each
	// queue's tx ring (the ptr_ring its reader drains).
	TxQLen int
}

// LinkStats reads a device's counters (the values /sys/class/net/DEV/statistics shows in the namespace).
func (n *Netns) LinkStats(dev string) (LinkStats, error) {
	var s LinkStats
	err := n.Do(func() error {
		var err error
		s, err = ReadLinkStats(dev)
		return err
	})
	return s, err
}

// ReadLinkStats reads a device's counters in the calling thread's
// namespace (inside Netns.Do, or a workload.Window's InNetns).
func ReadLinkStats(dev string) (LinkStats, error) {
	var s LinkStats
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return s, fmt.Errorf("stats of %s: %w", dev, err)
	}
	a := l.Attrs()
	if st := a.Statistics; st != nil {
		s = LinkStats{RxPackets: st.RxPackets, TxPackets: st.TxPackets, RxBytes: st.RxBytes, TxBytes: st.TxBytes,
			RxDropped: st.RxDropped, TxDropped: st.TxDropped, TxErrors: st.TxErrors}
	}
	s.OperUp = a.OperState == netlink.OperUp
	s.NoCarrier = a.RawFlags&unix.IFF_LOWER_UP == 0
	s.TxQLen = a.TxQLen
	return s, nil
}

// QdiscStats are the root qdisc's counters.
type QdiscStats struct {
	Kind                                        string
	Packets, Bytes, Drops, Overlimits, Requeues uint64
	Backlog                                     uint32 // bytes queued
	Qlen                                        uint32 // packets queued
}

// SetTxQLen sets dev's txqueuelen (tun resizes its ring to it) and
// returns the previous value.
func (n *Netns) SetTxQLen(dev string, qlen int) (old int, err error) {
	err = n.Do(func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		old = l.Attrs().TxQLen
		return netlink.LinkSetTxQLen(l, qlen)
	})
	if err != nil {
		return old, fmt.Errorf("txqueuelen %d on %s: %w", qlen, dev, err)
	}
	return old, nil
}

// RootQdisc returns the root qdisc of dev and its counters.
func (n *Netns) RootQdisc(dev string) (QdiscStats, error) {
	var out QdiscStats
	err := n.Do(func() error {
		var err error
		out, err = ReadRootQdisc(dev)
		return err
	})
	return out, err
}

// ReadRootQdisc returns the root qdisc of dev and its counters in the
// calling thread's namespace (inside Netns.Do); Kind "noqueue" when dev
// has none.
func ReadRootQdisc(dev string) (QdiscStats, error) {
	var out QdiscStats
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return out, fmt.Errorf("qdisc of %s: %w", dev, err)
	}
	qs, err := netlink.QdiscList(l)
	if err != nil {
		return out, fmt.Errorf("qdisc of %s: %w", dev, err)
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent != netlink.HANDLE_ROOT {
			continue
		}
		out.Kind = q.Type()
		if st := a.Statistics; st != nil && st.Basic != nil {
			out.Packets, out.Bytes = uint64(st.Basic.Packets), st.Basic.Bytes
		}
		if st := a.Statistics; st != nil && st.Queue != nil {
			out.Drops, out.Overlimits, out.Requeues, out.Backlog, out.Qlen = uint64(st.Queue.Drops), uint64(st.Queue.Overlimits),
				uint64(st.Queue.Requeues), st.Queue.Backlog, st.Queue.Qlen
		}
		return out, nil
	}
	out.Kind = "noqueue"
	return out, nil
}

// QdiscError is a qdisc kind the running kernel lacks (class
// fault.ErrCapability).
type QdiscError struct {
	Kind, Kernel string
	Err          error
}

func (e *QdiscError) Error() string {
	return fmt.Sprintf("qdisc %s is not available in kernel %s; use noqueue/pfifo_fast or run in lab mode (a kernel that has it, in a VM)",
		e.Kind, e.Kernel)
}

func (e *QdiscError) Unwrap() error { return e.Err }

// Is makes a missing qdisc a missing capability.
func (e *QdiscError) Is(target error) bool { return target == fault.ErrCapability }

// recordQdisc notes a qdisc change in the ledger (it goes with the
// namespace).
func (n *Netns) recordQdisc(dev, kind string) error {
	it, err := ledger.Record(ledger.Entry{Kind: ledger.Qdisc, Name: dev + " " + kind, Netns: n.Name})
	it.Made(nil)
	return err
}

// SetQdisc replaces dev's root qdisc with kind ("noqueue" removes the root
// qdisc). An unknown kind is a *QdiscError.
func (n *Netns) SetQdisc(dev, kind string) error {
	if err := n.recordQdisc(dev, kind); err != nil {
		return err
	}
	return n.Do(func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		// Handle 0: the kernel picks one, so replacing one kind by another works.
		attrs := netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_ROOT}
		var q netlink.Qdisc
		switch kind {
		case "fq_codel":
			q = &netlink.FqCodel{QdiscAttrs: attrs}
		case "fq":
			q = &netlink.Fq{QdiscAttrs: attrs}
		case "sfq":
			q = &netlink.Sfq{QdiscAttrs: attrs}
		default:
			q = &netlink.GenericQdisc{QdiscAttrs: attrs, QdiscType: kind}
		}
		if err := netlink.QdiscReplace(q); err != nil {
			if errors.Is(err, unix.ENOENT) {
				rel, rerr := KernelRelease()
				if rerr != nil {
					rel = "?"
				}
				return &QdiscError{Kind: kind, Kernel: rel, Err: err}
			}
			return fmt.Errorf("set qdisc %s on %s: %w", kind, dev, err)
		}
		return nil
	})
}

// ResetQdisc deletes dev's root qdisc (back to the kernel default).
func (n *Netns) ResetQdisc(dev string) error {
	return n.Do(func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		qs, err := netlink.QdiscList(l)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Attrs().Handle != 0 {
				if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) {
					return err
				}
			}
		}
		return nil
	})
}

// DeleteNamed removes the named namespace /run/netns/NAME (as ip netns
// del does): one a killed run left, with no handle to it.
func DeleteNamed(name string) error {
	err := netns.DeleteNamed(name)
	if errors.Is(err, unix.EINVAL) {
		// Not mounted: the empty file a deletion killed half-way left
		// (Delete unmounts, then removes).
		err = os.Remove(filepath.Join(NetnsDir, name))
	}
	if err != nil {
		return fmt.Errorf("delete netns %s: %w", name, err)
	}
	return nil
}

// IsNetnsMount reports whether path is a namespace's mount (its statfs
// type nsfs), not the plain file under it.
func IsNetnsMount(path string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(path, &fs) == nil && fs.Type == unix.NSFS_MAGIC
}

// Leftovers lists vnb* namespaces under /run/netns (tests and doctor use
// it to prove nothing was left behind).
func Leftovers() []string {
	ents, _ := os.ReadDir(NetnsDir)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "vnb") {
			out = append(out, e.Name())
		}
	}
	return out
}

// LinkMAC returns a device's hardware address.
func (n *Netns) LinkMAC(dev string) (string, error) {
	var mac string
	err := n.Do(func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		mac = l.Attrs().HardwareAddr.String()
		return nil
	})
	return mac, err
}
