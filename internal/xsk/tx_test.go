package xsk

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeKernel plays the kernel's side of a Tx and a completion ring in
// plain memory, as copy mode does inside sendto: take up to budget
// descriptors, check them, complete them (now, or later when held).
type fakeKernel struct {
	t        *testing.T
	tx       *txRing
	comp     *addrRing
	budget   int
	chunk    uint64
	frames   uint64
	frameLen uint32
	umem     []byte
	ports    []uint16 // UDP source port of each frame taken, when recording
	record   bool
	hold     bool     // keep completions until release
	held     []uint64 // addresses taken but not completed
	inFlight map[uint64]bool
	sent     uint64
	bad      int
}

var fakeOff = unix.XDPRingOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}

func newFakeRings(txEntries, frames uint32) (*txRing, *addrRing) {
	txMem := make([]byte, ringBytes(fakeOff, txEntries, unsafe.Sizeof(unix.XDPDesc{})))
	compMem := make([]byte, ringBytes(fakeOff, frames, 8))
	tx := newTxRing(txMem, fakeOff, txEntries)
	// Like the kernel: Tx asks for a wakeup from the start.
	atomic.StoreUint32(tx.flags, unix.XDP_RING_NEED_WAKEUP)
	return tx, newAddrRing(compMem, fakeOff, frames)
}

func (k *fakeKernel) kick() unix.Errno {
	prod := atomic.LoadUint32(k.tx.prod)
	cons := atomic.LoadUint32(k.tx.cons)
	for n := 0; cons != prod; n++ {
		if n == k.budget {
			atomic.StoreUint32(k.tx.cons, cons)
			return unix.EAGAIN
		}
		d := k.tx.descs[cons&k.tx.mask]
		if d.Addr%k.chunk != 0 || d.Addr/k.chunk >= k.frames || d.Len != k.frameLen || k.inFlight[d.Addr] {
			k.bad++
		}
		k.inFlight[d.Addr] = true
		if k.record {
			k.ports = append(k.ports, binary.BigEndian.Uint16(k.umem[d.Addr+udpSrcPortOff:]))
		}
		k.held = append(k.held, d.Addr)
		cons++
		k.sent++
	}
	atomic.StoreUint32(k.tx.cons, cons)
	if !k.hold {
		k.complete(len(k.held))
	}
	return 0
}

// complete posts n held addresses to the completion ring.
func (k *fakeKernel) complete(n int) {
	p := atomic.LoadUint32(k.comp.prod)
	for _, a := range k.held[:n] {
		k.comp.addrs[p&k.comp.mask] = a
		delete(k.inFlight, a)
		p++
	}
	k.held = k.held[n:]
	atomic.StoreUint32(k.comp.prod, p)
}

func newFakeTxq(t *testing.T, c Config) (*txq, *fakeKernel) {
	c = c.withDefaults()
	frames := uint32(2 * c.RingSize)
	tx, comp := newFakeRings(uint32(c.RingSize), frames)
	built, err := c.Frame.Build()
	if err != nil {
		t.Fatal(err)
	}
	umem := make([]byte, int(frames)*2048)
	q := newTxqRings(tx, comp, umem, frames, 2048, c, flows(built))
	k := &fakeKernel{t: t, tx: tx, comp: comp, budget: 32, chunk: 2048, frames: uint64(frames), umem: umem,
		frameLen: uint32(c.Frame.Size), inFlight: map[uint64]bool{}}
	q.kick = k.kick
	return q, k
}

func TestTxLoopCount(t *testing.T) {
	for _, batch := range []int{1, 32, 64, 100} {
		q, k := newFakeTxq(t, Config{Dev: "x", Count: 100003, Batch: batch, RingSize: 256})
		var stop atomic.Bool
		if err := q.run(&stop, -1); err != nil {
			t.Fatal(err)
		}
		r := q.res
		if r.Submitted != 100003 || r.Packets != 100003 || k.sent != 100003 || r.Outstanding != 0 || k.bad != 0 {
			t.Errorf("batch %d: submitted %d, completed %d, kernel took %d, outstanding %d, bad descriptors %d; want 100003 and 0",
				batch, r.Submitted, r.Packets, k.sent, r.Outstanding, k.bad)
		}
		// Batches above the kernel's budget of 32 get EAGAIN (this fake
		// has no XDP_MAX_TX_SKB_BUDGET) and are kicked again.
		if (batch > 32) != (r.Again > 0) {
			t.Errorf("batch %d: %d EAGAIN kicks", batch, r.Again)
		}
		if r.Duration <= 0 || q.last <= q.first {
			t.Errorf("batch %d: duration %v", batch, r.Duration)
		}
	}
}

func TestTxLoopStallsAndDrainTimeout(t *testing.T) {
	// Completions held by the "device": after 2x ring frames the loop
	// waits; stop it, and the drain gives up after DrainTimeout.
	q, k := newFakeTxq(t, Config{Dev: "x", RingSize: 64, DrainTimeout: 50 * time.Millisecond})
	k.hold = true
	var stop atomic.Bool
	go func() {
		time.Sleep(50 * time.Millisecond)
		stop.Store(true)
	}()
	start := time.Now()
	if err := q.run(&stop, -1); err != nil {
		t.Fatal(err)
	}
	r := q.res
	if r.Submitted != 128 || r.Packets != 0 || r.Outstanding != 128 || r.CompletionWaits != 1 {
		t.Errorf("held completions: submitted %d, completed %d, outstanding %d, completion waits %d; want 128, 0, 128, 1",
			r.Submitted, r.Packets, r.Outstanding, r.CompletionWaits)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("returned after %v, before stop + drain timeout", el)
	}

	// A kernel that takes nothing: the Tx ring fills up.
	q, k = newFakeTxq(t, Config{Dev: "x", RingSize: 64, Count: 1000, DrainTimeout: time.Millisecond})
	k.budget = 0
	stop.Store(false)
	go func() {
		time.Sleep(20 * time.Millisecond)
		stop.Store(true)
	}()
	if err := q.run(&stop, -1); err != nil {
		t.Fatal(err)
	}
	if r := q.res; r.Submitted != 64 || r.TxRingFull != 1 || r.Again == 0 || r.Packets != 0 {
		t.Errorf("stuck kernel: submitted %d, ring full %d, EAGAIN %d, completed %d; want 64, 1, >0, 0",
			r.Submitted, r.TxRingFull, r.Again, r.Packets)
	}
}

func TestTxLoopDrainCompletesLate(t *testing.T) {
	q, k := newFakeTxq(t, Config{Dev: "x", RingSize: 64, Count: 100})
	k.hold = true
	var stop atomic.Bool
	done := make(chan error)
	go func() { done <- q.run(&stop, -1) }()
	// The loop kicks only while the Tx ring holds descriptors: once the
	// fake kernel took all 100 (its atomic store of the consumer index
	// orders its writes to held before this read), this goroutine alone
	// touches the fake kernel.
	for atomic.LoadUint32(k.tx.cons) != 100 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	k.complete(100)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := q.res; r.Packets != 100 || r.Outstanding != 0 || r.Duration < 10*time.Millisecond {
		t.Errorf("late completions: completed %d, outstanding %d, duration %v; want 100, 0, >=10ms", r.Packets, r.Outstanding, r.Duration)
	}
}

// The frames cycle through the source ports in order, whichever chunks
// carry them.
func TestTxLoopFlows(t *testing.T) {
	q, k := newFakeTxq(t, Config{Dev: "x", Count: 1000, Batch: 7, RingSize: 64, Frame: Frame{SrcPort: 100, SrcPorts: 5}})
	k.record = true
	var stop atomic.Bool
	if err := q.run(&stop, -1); err != nil {
		t.Fatal(err)
	}
	if len(k.ports) != 1000 {
		t.Fatalf("%d frames", len(k.ports))
	}
	for i, p := range k.ports {
		if want := uint16(100 + i%5); p != want {
			t.Fatalf("frame %d: source port %d, want %d", i, p, want)
		}
	}
	// Completions come back at once: the same few chunks are reused.
	if len(k.inFlight) != 0 {
		t.Errorf("%d chunks still in flight", len(k.inFlight))
	}
}
