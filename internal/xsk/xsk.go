package xsk

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/vnetbench/vnetbench/internal/fault"
	"golang.org/x/sys/unix"
)

// sockParams size one socket's UMEM and rings.
type sockParams struct {
	frames    uint32 // UMEM chunks (power of two) = completion ring entries
	chunk     uint32 // UMEM chunk size
	txEntries uint32 // Tx ring entries (power of two, <= frames)
	flags     uint16 // bind flags
	budget    int    // XDP_MAX_TX_SKB_BUDGET, 0 = leave the kernel's
}

// xsk is one AF_XDP socket with its own UMEM, bound to one queue.
type xsk struct {
	fd         int
	queue      int
	umem       []byte
	fillMem    []byte
	compMem    []byte
	txMem      []byte
	tx         *txRing
	comp       *addrRing
	chunk      uint32
	frames     uint32
	budgetSet  int // XDP_MAX_TX_SKB_BUDGET in effect (0 = kernel default)
	boundFlags uint16
}

// newXSK creates the socket, registers its UMEM (frame copied into every
// chunk), creates and maps the fill,
// completion and Tx rings. It does not bind. It runs in the target
// network namespace (the socket belongs to the creating thread's).
func newXSK(p sockParams, frame []byte) (x *xsk, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, socketError(err)
	}
	x = &xsk{fd: fd, queue: -1, chunk: p.chunk, frames: p.frames}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	x.umem, err = unix.Mmap(-1, 0, int(p.frames*p.chunk), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("allocate UMEM (%d x %d bytes): %w", p.frames, p.chunk, err)
	}
	for i := uint32(0); i < p.frames; i++ {
		copy(x.umem[i*p.chunk:], frame)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&x.umem[0]))), Len: uint64(len(x.umem)), Size: p.chunk}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return nil, fmt.Errorf("register UMEM: %w", err)
	}
	// The fill ring feeds Rx only, but bind requires one.
	for _, r := range []struct {
		opt     int
		entries uint32
	}{{unix.XDP_UMEM_FILL_RING, 64}, {unix.XDP_UMEM_COMPLETION_RING, p.frames}, {unix.XDP_TX_RING, p.txEntries}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, r.opt, int(r.entries)); err != nil {
			return nil, fmt.Errorf("create ring (option %d, %d entries): %w", r.opt, r.entries, err)
		}
	}
	var off unix.XDPMmapOffsets
	n := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return nil, fmt.Errorf("XDP_MMAP_OFFSETS: %w", e)
	}
	if n != uint32(unsafe.Sizeof(off)) {
		return nil, fmt.Errorf("XDP_MMAP_OFFSETS: %d bytes, a kernel without ring flags (need_wakeup, 5.4+)", n)
	}
	mmapRing := func(pgoff int64, size int) ([]byte, error) {
		return unix.Mmap(fd, pgoff, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	}
	if x.fillMem, err = mmapRing(unix.XDP_UMEM_PGOFF_FILL_RING, ringBytes(off.Fr, 64, 8)); err != nil {
		return nil, fmt.Errorf("map fill ring: %w", err)
	}
	if x.compMem, err = mmapRing(unix.XDP_UMEM_PGOFF_COMPLETION_RING, ringBytes(off.Cr, p.frames, 8)); err != nil {
		return nil, fmt.Errorf("map completion ring: %w", err)
	}
	if x.txMem, err = mmapRing(unix.XDP_PGOFF_TX_RING, ringBytes(off.Tx, p.txEntries, unsafe.Sizeof(unix.XDPDesc{}))); err != nil {
		return nil, fmt.Errorf("map Tx ring: %w", err)
	}
	x.comp = newAddrRing(x.compMem, off.Cr, p.frames)
	x.tx = newTxRing(x.txMem, off.Tx, p.txEntries)
	if p.budget > 0 {
		b := uint32(p.budget)
		err := setsockopt(fd, unix.XDP_MAX_TX_SKB_BUDGET, unsafe.Pointer(&b), unsafe.Sizeof(b))
		switch {
		case err == nil:
			x.budgetSet = p.budget
		case errors.Is(err, unix.ENOPROTOOPT):
			// Before 6.17: the kernel's fixed 32 frames per kick.
		default:
			return nil, fmt.Errorf("XDP_MAX_TX_SKB_BUDGET %d: %w", p.budget, err)
		}
	}
	return x, nil
}

// socketError explains why socket(AF_XDP) failed.
func socketError(err error) error {
	switch {
	case errors.Is(err, unix.EAFNOSUPPORT):
		return &classError{msg: ErrNoAFXDP.Error() + " (EAFNOSUPPORT: a kernel built with CONFIG_XDP_SOCKETS=y has them)",
			sentinel: ErrNoAFXDP, class: fault.ErrCapability}
	case errors.Is(err, unix.EPERM):
		return fault.Capability("AF_XDP socket: %w (needs CAP_NET_RAW: run as root)", err)
	}
	return fmt.Errorf("AF_XDP socket: %w", err)
}

// bindBusyWait is how long bind retries EBUSY: a closed socket's buffer
// pool leaves its queue in deferred work after close returns, so a new
// socket on the same queue right after (the next repetition) is refused
// for a moment.
const bindBusyWait = time.Second

// bind binds the socket to a device queue with flags (XDP_COPY or
// XDP_ZEROCOPY, plus XDP_USE_NEED_WAKEUP). The errno is returned as is,
// EBUSY after bindBusyWait of retries (a failed bind leaves the socket as
// it was).
func (x *xsk) bind(ifindex, queue int, flags uint16) error {
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	for end := time.Now().Add(bindBusyWait); ; time.Sleep(10 * time.Millisecond) {
		err := unix.Bind(x.fd, sa)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(end) {
			return err
		}
	}
	x.queue, x.boundFlags = queue, flags
	return nil
}

// kick asks the kernel to transmit what the Tx ring holds (sendto with
// MSG_DONTWAIT, the only way; a blocking send is EOPNOTSUPP).
//
// A raw syscall: it never blocks (copy mode transmits up to the budget
// and returns), and Go's syscall bookkeeping costs more here than the
// ring work: sendto runs for tens of microseconds, long enough for the
// runtime's monitor to take the P away and hand it back on every kick.
// The thread keeps its P meanwhile, which only this goroutine uses.
func (x *xsk) kick() unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}

// stats reads XDP_STATISTICS.
func (x *xsk) stats() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	n := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(x.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return st, e
	}
	return st, nil
}

// close unmaps the rings and the UMEM and closes the socket.
func (x *xsk) close() error {
	var errs []error
	for _, m := range []*[]byte{&x.txMem, &x.compMem, &x.fillMem, &x.umem} {
		if *m != nil {
			errs = append(errs, unix.Munmap(*m))
			*m = nil
		}
	}
	if x.fd >= 0 {
		errs = append(errs, unix.Close(x.fd))
		x.fd = -1
	}
	return errors.Join(errs...)
}

func setsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), size, 0); e != 0 {
		return e
	}
	return nil
}
