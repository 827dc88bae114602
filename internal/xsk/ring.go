package xsk

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one single-producer single-consumer ring shared with the
// kernel: a producer index, a consumer index and a flags word at the
// offsets XDP_MMAP_OFFSETS gives, then a power-of-two array of entries.
// The indices run freely (uint32 wrap-around); an entry is idx & mask.
// Go's atomic loads and stores order the entry accesses around the index
// updates (the kernel pairs them with its own barriers).
type ring struct {
	prod, cons, flags *uint32
	mask              uint32
	size              uint32
	// cached copies of the two indices: ours is exact, the other side's
	// is refreshed only when the cached value says the ring is full
	// (producer) or empty (consumer).
	cachedProd, cachedCons uint32
}

func newRing(mem []byte, off unix.XDPRingOffset, entries uint32) ring {
	u32 := func(o uint64) *uint32 { return (*uint32)(unsafe.Pointer(&mem[o])) }
	return ring{prod: u32(off.Producer), cons: u32(off.Consumer), flags: u32(off.Flags), mask: entries - 1, size: entries,
		cachedProd: atomic.LoadUint32(u32(off.Producer)), cachedCons: atomic.LoadUint32(u32(off.Consumer))}
}

// needWakeup reports XDP_RING_NEED_WAKEUP: the kernel consumes the ring
// only when kicked (copy mode always sets it).
func (r *ring) needWakeup() bool { return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0 }

// free returns how many entries the producer may fill, up to want,
// reloading the consumer index only when the cached one is not enough.
func (r *ring) free(want uint32) uint32 {
	n := r.size - (r.cachedProd - r.cachedCons)
	if n < want {
		r.cachedCons = atomic.LoadUint32(r.cons)
		n = r.size - (r.cachedProd - r.cachedCons)
	}
	return min(n, want)
}

// submit publishes n filled entries to the consumer.
func (r *ring) submit(n uint32) {
	r.cachedProd += n
	atomic.StoreUint32(r.prod, r.cachedProd)
}

// pending returns how many produced entries the consumer has not taken
// yet (producer side).
func (r *ring) pending() uint32 {
	r.cachedCons = atomic.LoadUint32(r.cons)
	return r.cachedProd - r.cachedCons
}

// avail returns how many entries the consumer may read.
func (r *ring) avail() uint32 {
	n := r.cachedProd - r.cachedCons
	if n == 0 {
		r.cachedProd = atomic.LoadUint32(r.prod)
		n = r.cachedProd - r.cachedCons
	}
	return n
}

// release hands n read entries back to the producer.
func (r *ring) release(n uint32) {
	r.cachedCons += n
	atomic.StoreUint32(r.cons, r.cachedCons)
}

// txRing is the Tx ring: descriptors (UMEM address, length).
type txRing struct {
	ring
	descs []unix.XDPDesc
}

func newTxRing(mem []byte, off unix.XDPRingOffset, entries uint32) *txRing {
	return &txRing{ring: newRing(mem, off, entries),
		descs: unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&mem[off.Desc])), entries)}
}

// addrRing is the fill or completion ring: UMEM addresses.
type addrRing struct {
	ring
	addrs []uint64
}

func newAddrRing(mem []byte, off unix.XDPRingOffset, entries uint32) *addrRing {
	return &addrRing{ring: newRing(mem, off, entries),
		addrs: unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off.Desc])), entries)}
}

// ringBytes is the mmap length of a ring of entries of entrySize bytes.
func ringBytes(off unix.XDPRingOffset, entries uint32, entrySize uintptr) int {
	return int(off.Desc) + int(entries)*int(entrySize)
}
