package afxdp

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// txq is one queue's send loop: it owns its socket's Tx and completion
// rings and a FIFO of free UMEM chunks. The frames are already in the
// UMEM, so sending is writing (address, length) descriptors.
type txq struct {
	tx   *txRing
	comp *addrRing
	kick func() unix.Errno
	// stats returns the socket's XDP_STATISTICS (nil in tests).
	stats func() (unix.XDPStatistics, error)

	free               []uint64 // free chunk addresses; len is a power of two
	freeHead, freeTail uint32   // take at head, put at tail
	fmask              uint32
	frameLen           uint32
	batch              uint32
	count              uint64
	dur, drain         time.Duration

	res QueueResult
}

func newTxq(x *xsk, c Config) *txq {
	q := newTxqRings(x.tx, x.comp, x.frames, x.chunk, c)
	q.kick, q.stats, q.res.Queue = x.kick, x.stats, x.queue
	return q
}

// newTxqRings sets up the loop over the given rings with every chunk free.
func newTxqRings(tx *txRing, comp *addrRing, frames, chunk uint32, c Config) *txq {
	q := &txq{tx: tx, comp: comp, free: make([]uint64, frames), fmask: frames - 1, frameLen: uint32(c.Frame.Size),
		batch: uint32(c.Batch), count: c.Count, dur: c.Duration, drain: c.DrainTimeout}
	for i := range q.free {
		q.free[i] = uint64(i) * uint64(chunk)
	}
	q.freeTail = frames
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
	unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
	err := q.loop(stop)
	if err == nil {
		err = q.drainOut()
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
	q.res.UserCPU = time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano())
	q.res.SystemCPU = time.Duration(ru1.Stime.Nano() - ru0.Stime.Nano())
	q.res.Outstanding = q.res.Submitted - q.res.Packets
	if !q.res.first.IsZero() && q.res.last.After(q.res.first) {
		q.res.Duration = q.res.last.Sub(q.res.first)
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
		if q.dur > 0 && !q.res.first.IsZero() && time.Since(q.res.first) >= q.dur {
			return nil
		}
		n := min(want, q.freeTail-q.freeHead)
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

// submit puts n free chunks on the Tx ring.
func (q *txq) submit(n uint32) {
	prod, head := q.tx.cachedProd, q.freeHead
	for i := uint32(0); i < n; i++ {
		d := &q.tx.descs[(prod+i)&q.tx.mask]
		d.Addr = q.free[(head+i)&q.fmask]
		d.Len = q.frameLen
		d.Options = 0
	}
	q.freeHead += n
	q.tx.submit(n)
	if q.res.first.IsZero() {
		q.res.first = time.Now()
	}
	q.res.Submitted += uint64(n)
}

// reap moves completed chunks back to the free FIFO.
func (q *txq) reap() error {
	n := q.comp.avail()
	if n == 0 {
		return nil
	}
	if q.freeTail-q.freeHead+n > uint32(len(q.free)) {
		return fmt.Errorf("completion ring returned %d chunks with %d in flight (a broken ring)", n, q.res.Submitted-q.res.Packets)
	}
	cons, tail := q.comp.cachedCons, q.freeTail
	for i := uint32(0); i < n; i++ {
		q.free[(tail+i)&q.fmask] = q.comp.addrs[(cons+i)&q.comp.mask]
	}
	q.freeTail += n
	q.comp.release(n)
	q.res.Packets += uint64(n)
	q.res.last = time.Now()
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
