package xsk

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// txq is one queue's send loop: it owns its socket's Tx and completion
// rings and a stack of free UMEM chunks. The frames are already in the
// UMEM, so sending is writing (address, length) descriptors, plus the
// UDP source port and checksum when the frames cycle through several
// ports.
//
// The free chunks are a stack, not a FIFO: a chunk that just completed is
// the next one sent, so a copy-mode run, whose completions come back
// within the kick, touches a batch's worth of chunks that stay in the
// cache and TLB, instead of walking the whole UMEM (megabytes) and missing
// on every frame the kernel copies.
type txq struct {
	tx   *txRing
	comp *addrRing
	kick func() unix.Errno
	// stats returns the socket's XDP_STATISTICS (nil in tests).
	stats func() (unix.XDPStatistics, error)

	free       []uint64 // free chunk addresses, a stack: free[:nfree]
	nfree      uint32
	umem       []byte
	flows      [][4]byte // per flow: UDP source port and checksum (big endian); nil = one flow
	flow       int       // the next frame's flow
	frameLen   uint32
	batch      uint32
	count      uint64
	dur, drain time.Duration

	// Times are offsets from base (one monotonic clock read each;
	// time.Now reads two clocks). expired is set by a timer Duration
	// after the first submit, so the loop reads no clock for it.
	base          time.Time
	started       bool
	first, last   time.Duration
	expired       atomic.Bool
	durationTimer *time.Timer

	res QueueResult
}

func newTxq(x *xsk, c Config, flows [][4]byte) *txq {
	q := newTxqRings(x.tx, x.comp, x.umem, x.frames, x.chunk, c, flows)
	q.kick, q.stats, q.res.Queue = x.kick, x.stats, x.queue
	return q
}

// newTxqRings sets up the loop over the given rings and UMEM (frames
// chunks of chunk bytes) with every chunk free, chunk 0 on top.
func newTxqRings(tx *txRing, comp *addrRing, umem []byte, frames, chunk uint32, c Config, flows [][4]byte) *txq {
	q := &txq{tx: tx, comp: comp, umem: umem, free: make([]uint64, frames), nfree: frames, frameLen: uint32(c.Frame.Size),
		batch: uint32(c.Batch), count: c.Count, dur: c.Duration, drain: c.DrainTimeout, base: time.Now()}
	if len(flows) > 1 {
		q.flows = flows
	}
	for i := range q.free {
		q.free[i] = uint64(int(frames)-1-i) * uint64(chunk)
	}
	return q
}

// run sends until stop, Count or Duration, drains, and fills q.res. It
// runs on a locked OS thread (the CPU times are the thread's).
func (q *txq) run(stop *atomic.Bool, cpu int) error {
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("afxdp queue %d: pin to CPU %d: %w", q.res.Queue, cpu, err)
		}
	}
	var ru0, ru1 unix.Rusage
	var ts0, ts1 unix.Timespec
	unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
	cpuOK := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts0) == nil
	err := q.loop(stop)
	if q.durationTimer != nil {
		q.durationTimer.Stop()
	}
	if err == nil {
		err = q.drainOut()
	}
	if cpuOK && unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts1) == nil {
		q.res.CPUTime = time.Duration(ts1.Nano() - ts0.Nano())
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
	q.res.UserCPU = time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano())
	q.res.SystemCPU = time.Duration(ru1.Stime.Nano() - ru0.Stime.Nano())
	q.res.Outstanding = q.res.Submitted - q.res.Packets
	if q.started && q.last > q.first {
		q.res.Duration = q.last - q.first
	}
	if q.stats != nil {
		if st, serr := q.stats(); serr == nil {
			q.res.InvalidDescs = st.Tx_invalid_descs
		}
	}
	if err != nil {
		return fmt.Errorf("afxdp queue %d: %w", q.res.Queue, err)
	}
	return nil
}

// loop submits batches until it should stop. Each turn: take the
// completions, fill up to a batch of descriptors (bounded by free chunks,
// free Tx slots and Count), kick the kernel when it asks for it.
func (q *txq) loop(stop *atomic.Bool) error {
	stalled := false
	for {
		if err := q.reap(); err != nil {
			return err
		}
		if stop.Load() {
			return nil
		}
		want := q.batch
		if q.count > 0 {
			left := q.count - q.res.Submitted
			if left == 0 {
				return nil
			}
			want = uint32(min(uint64(want), left))
		}
		if q.expired.Load() {
			return nil
		}
		n := min(want, q.nfree)
		if n == 0 {
			if !stalled {
				q.res.CompletionWaits++
				stalled = true
			}
		} else if n = q.tx.free(n); n == 0 && !stalled {
			q.res.TxRingFull++
			stalled = true
		}
		if n > 0 {
			stalled = false
			q.submit(n)
		}
		if err := q.wake(); err != nil {
			return err
		}
	}
}

// submit puts n free chunks on the Tx ring, setting each frame's flow.
func (q *txq) submit(n uint32) {
	prod, top := q.tx.cachedProd, q.nfree
	for i := uint32(0); i < n; i++ {
		addr := q.free[top-1-i]
		if q.flows != nil {
			f := &q.flows[q.flow]
			copy(q.umem[addr+udpSrcPortOff:addr+udpSrcPortOff+2], f[:2])
			copy(q.umem[addr+udpCsumOff:addr+udpCsumOff+2], f[2:])
			if q.flow++; q.flow == len(q.flows) {
				q.flow = 0
			}
		}
		d := &q.tx.descs[(prod+i)&q.tx.mask]
		d.Addr = addr
		d.Len = q.frameLen
		d.Options = 0
	}
	q.nfree -= n
	q.tx.submit(n)
	if !q.started {
		q.started = true
		q.first = time.Since(q.base)
		if q.dur > 0 {
			q.durationTimer = time.AfterFunc(q.dur, func() { q.expired.Store(true) })
		}
	}
	q.res.Submitted += uint64(n)
}

// reap moves completed chunks back onto the free stack.
func (q *txq) reap() error {
	n := q.comp.avail()
	if n == 0 {
		return nil
	}
	if q.nfree+n > uint32(len(q.free)) {
		return fmt.Errorf("completion ring returned %d chunks with %d in flight (a broken ring)", n, q.res.Submitted-q.res.Packets)
	}
	cons, top := q.comp.cachedCons, q.nfree
	for i := uint32(0); i < n; i++ {
		q.free[top+i] = q.comp.addrs[(cons+i)&q.comp.mask]
	}
	q.nfree += n
	q.comp.release(n)
	q.res.Packets += uint64(n)
	q.last = time.Since(q.base)
	return nil
}

// wake kicks the kernel when the Tx ring holds descriptors it has not
// taken and it set XDP_RING_NEED_WAKEUP (copy mode always does; a
// zero-copy driver only when its Tx processing went to sleep).
func (q *txq) wake() error {
	if !q.tx.needWakeup() || q.tx.pending() == 0 {
		return nil
	}
	q.res.Kicks++
	switch e := q.kick(); e {
	case 0:
	case unix.EAGAIN:
		q.res.Again++
	case unix.EBUSY:
		q.res.Busy++
	case unix.ENETDOWN:
		return fmt.Errorf("sendto: %w (the device went down)", e)
	case unix.ENXIO:
		return fmt.Errorf("sendto: %w (the socket lost its device: was it deleted?)", e)
	default:
		return fmt.Errorf("sendto: %w", e)
	}
	return nil
}

// drainOut waits up to q.drain for the outstanding completions, kicking
// what the Tx ring still holds.
func (q *txq) drainOut() error {
	deadline := time.Now().Add(q.drain)
	for q.res.Packets < q.res.Submitted {
		if err := q.wake(); err != nil {
			return err
		}
		before := q.res.Packets
		if err := q.reap(); err != nil {
			return err
		}
		if q.res.Packets == before {
			if time.Now().After(deadline) {
				return nil
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
	return nil
}
