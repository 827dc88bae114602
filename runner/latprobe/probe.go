// Package latprobe is the host side of the latency probe: one UDP flow
// from the host's run namespace to the reflector the guest agent runs
// (vmimages.OpReflect), one request per interval, each stamped by the
// kernel (SO_TIMESTAMPING) when it enters the device layer (SCHED, before
// the qdisc), when the driver takes it (SOFTWARE: tun's
// skb_tx_timestamp) and when its reply is received. The stamps share one
// clock (CLOCK_REALTIME), so each round trip splits into the time in the
// qdisc and the time below it.
//
// It measures only; package latency summarizes the records. It does not
// start the reflector (the runner asks the agent).
package latprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/latency"
)

// Config is one probe.
type Config struct {
	Dst      netip.AddrPort // the reflector
	Src      netip.Addr     // source address to bind; zero = the route's
	Interval time.Duration
	Sizes    []int // UDP payload sizes, in turn (at least headerLen)
	Timeout  time.Duration
}

// magic starts every probe payload, then the sequence number.
var magic = [4]byte{'V', 'N', 'B', 'P'}

const headerLen = 8

// timestampFlags asks for the SCHED and SOFTWARE transmit stamps and the
// software receive stamp, reported (SOFTWARE), keyed by a per-socket
// counter (OPT_ID), with no copy of the packet on the error queue
// (OPT_TSONLY).
const timestampFlags = unix.SOF_TIMESTAMPING_TX_SCHED | unix.SOF_TIMESTAMPING_TX_SOFTWARE |
	unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
	unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// Transmit stamp kinds in sock_extended_err.ee_info (linux/errqueue.h).
const (
	scmTstampSnd   = 0
	scmTstampSched = 1
)

// Probe is a running probe.
type Probe struct {
	cfg   Config
	fd    int
	phase atomic.Value // string

	mu   sync.Mutex
	recs []latency.Record
	// keys maps the kernel's OPT_ID key of a send to its record index.
	keys    map[uint32]int
	nextKey uint32 // the sender's alone
	pending int    // sent, not answered

	stopSend chan struct{}
	stopOnce sync.Once
	sendDone chan struct{}
	stopRecv atomic.Bool
	recvDone chan struct{}
	warnings []string
}

// Open creates the probe's socket. inNetns runs a function on a thread
// in the run's network namespace (nil = this one): the socket belongs to
// the namespace it is created in.
func Open(cfg Config, inNetns func(func() error) error) (*Probe, error) {
	if len(cfg.Sizes) == 0 || cfg.Interval <= 0 || cfg.Timeout <= 0 {
		return nil, errors.New("latency probe: need sizes, an interval and a timeout")
	}
	for _, s := range cfg.Sizes {
		if s < headerLen+8 {
			return nil, fmt.Errorf("latency probe: size %d is below %d bytes", s, headerLen+8)
		}
	}
	p := &Probe{cfg: cfg, fd: -1, keys: map[uint32]int{}}
	p.phase.Store(latency.PhaseIdle)
	open := func() error {
		fd, err := openSocket(cfg)
		p.fd = fd
		return err
	}
	var err error
	if inNetns != nil {
		err = inNetns(open)
	} else {
		err = open()
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func openSocket(cfg Config) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("latency probe: udp socket: %w", err)
	}
	fail := func(what string, err error) (int, error) {
		unix.Close(fd)
		return -1, fmt.Errorf("latency probe: %s: %w", what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, timestampFlags); err != nil {
		return fail("SO_TIMESTAMPING (kernel software timestamps)", err)
	}
	if cfg.Src.IsValid() {
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: cfg.Src.As4()}); err != nil {
			return fail("bind "+cfg.Src.String(), err)
		}
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: cfg.Dst.Addr().As4(), Port: int(cfg.Dst.Port())}); err != nil {
		return fail("connect "+cfg.Dst.String(), err)
	}
	return fd, nil
}

// SetPhase labels the probes sent from now on (latency.PhaseIdle, ...).
func (p *Probe) SetPhase(phase string) { p.phase.Store(phase) }

// Start starts sending and receiving.
func (p *Probe) Start() {
	p.stopSend, p.sendDone, p.recvDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go p.receive()
	go p.send()
}

// send sends one probe per interval on a fixed schedule; a late tick is
// sent at once, and ticks missed meanwhile are skipped, never bunched.
func (p *Probe) send() {
	defer close(p.sendDone)
	buf := make([]byte, 0, 2048)
	next := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for seq := uint32(0); ; seq++ {
		select {
		case <-p.stopSend:
			return
		case <-t.C:
		}
		size := p.cfg.Sizes[int(seq)%len(p.cfg.Sizes)]
		buf = append(buf[:0], magic[:]...)
		buf = binary.BigEndian.AppendUint32(buf, seq)
		buf = buf[:size]
		rec := latency.Record{Seq: seq, Phase: p.phase.Load().(string), Size: size}
		// The record and its OPT_ID key are in place before the send: its
		// SCHED stamp is queued during the send call, and the receiver
		// may read it before the call returns. The send itself runs
		// without the lock (a blocked send must not stall the receiver).
		p.mu.Lock()
		key := p.nextKey
		p.keys[key] = len(p.recs)
		rec.Sent = time.Now().UnixNano()
		p.recs = append(p.recs, rec)
		p.pending++
		p.mu.Unlock()
		_, err := unix.Write(p.fd, buf)
		if err == nil || errors.Is(err, unix.ENOBUFS) {
			// The kernel keyed this send (a send the qdisc dropped was
			// keyed before it was dropped).
			p.nextKey++
		} else {
			p.mu.Lock()
			delete(p.keys, key)
			p.mu.Unlock()
		}
		if err != nil {
			p.warn("probe %d: send: %v", seq, err)
		}
		next = next.Add(p.cfg.Interval)
		now := time.Now()
		if d := next.Sub(now); d > 0 {
			t.Reset(d)
		} else {
			next = now
			t.Reset(0)
		}
	}
}

// receive reads replies and transmit stamps until stopped, on a thread
// of its own.
func (p *Probe) receive() {
	runtime.LockOSThread()
	defer close(p.recvDone)
	buf := make([]byte, 2048)
	oob := make([]byte, 512)
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for !p.stopRecv.Load() {
		fds[0].Revents = 0
		n, err := unix.Poll(fds, 20)
		if err != nil && !errors.Is(err, unix.EINTR) {
			p.warn("poll: %v", err)
			return
		}
		if n == 0 {
			continue
		}
		if fds[0].Revents&unix.POLLERR != 0 {
			p.drainErrQueue(oob)
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			p.drainReplies(buf, oob)
		}
	}
}

func (p *Probe) warn(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.warnings) < 10 {
		p.warnings = append(p.warnings, fmt.Sprintf(format, a...))
	}
}

// drainErrQueue reads the transmit stamps queued on the socket's error
// queue: each carries its send's OPT_ID key and kind (SCHED or SND).
func (p *Probe) drainErrQueue(oob []byte) {
	for {
		_, oobn, _, _, err := unix.Recvmsg(p.fd, nil, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err != nil {
			return // EAGAIN: drained
		}
		ts, ee, ok := parseCmsgs(oob[:oobn])
		if !ok || ee == nil || ee.Origin != unix.SO_EE_ORIGIN_TIMESTAMPING {
			continue
		}
		p.mu.Lock()
		if i, ok := p.keys[ee.Data]; ok {
			switch ee.Info {
			case scmTstampSched:
				p.recs[i].Sched = ts
			case scmTstampSnd:
				p.recs[i].Soft = ts
			}
		}
		p.mu.Unlock()
	}
}

// drainReplies reads the reflected probes and their receive stamps.
func (p *Probe) drainReplies(buf, oob []byte) {
	for {
		n, oobn, _, _, err := unix.Recvmsg(p.fd, buf, oob, unix.MSG_DONTWAIT)
		if err != nil {
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.ECONNREFUSED) {
				p.warn("receive: %v", err)
			}
			return
		}
		if n < headerLen || [4]byte(buf[:4]) != magic {
			continue
		}
		seq := binary.BigEndian.Uint32(buf[4:8])
		ts, _, _ := parseCmsgs(oob[:oobn])
		if ts == 0 {
			ts = time.Now().UnixNano()
		}
		p.mu.Lock()
		if int(seq) < len(p.recs) && p.recs[seq].Recv == 0 {
			p.recs[seq].Recv = ts
			p.pending--
		}
		p.mu.Unlock()
	}
}

// parseCmsgs returns the software stamp (ns, 0 = none) of an
// SCM_TIMESTAMPING message and the extended error of an error-queue
// message.
func parseCmsgs(b []byte) (ts int64, ee *unix.SockExtendedErr, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(b)
	if err != nil {
		return 0, nil, false
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPING:
			if len(m.Data) >= int(unsafe.Sizeof(unix.ScmTimestamping{})) {
				var st unix.ScmTimestamping
				copy((*[unsafe.Sizeof(unix.ScmTimestamping{})]byte)(unsafe.Pointer(&st))[:], m.Data)
				ts = st.Ts[0].Nano()
			}
		case m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR:
			if len(m.Data) >= int(unsafe.Sizeof(unix.SockExtendedErr{})) {
				var e unix.SockExtendedErr
				copy((*[unsafe.Sizeof(unix.SockExtendedErr{})]byte)(unsafe.Pointer(&e))[:], m.Data)
				ee = &e
			}
		}
	}
	return ts, ee, true
}

// Stop stops sending, waits for the replies still on their way (at most
// the timeout), closes the socket and returns every probe sent, a probe
// without a reply within the timeout marked lost, and warnings about the
// probe itself (send errors).
func (p *Probe) Stop() ([]latency.Record, []string) {
	p.StopSending()
	deadline := time.Now().Add(p.cfg.Timeout)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		left := p.pending
		p.mu.Unlock()
		if left <= 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A SOFTWARE stamp can trail its reply by a scheduling delay: give
	// the error queue one more pass.
	time.Sleep(20 * time.Millisecond)
	p.stopRecv.Store(true)
	<-p.recvDone
	unix.Close(p.fd)
	p.mu.Lock()
	defer p.mu.Unlock()
	timeout := p.cfg.Timeout.Nanoseconds()
	for i := range p.recs {
		r := &p.recs[i]
		r.Lost = r.Recv == 0 || r.Recv-r.Sent > timeout
	}
	return p.recs, p.warnings
}

// StopSending stops sending at once and returns when the last probe is
// out; replies are still read until Stop.
func (p *Probe) StopSending() {
	p.stopOnce.Do(func() { close(p.stopSend) })
	<-p.sendDone
}

// Close releases the socket of a probe that was opened and never
// started.
func (p *Probe) Close() { unix.Close(p.fd) }
