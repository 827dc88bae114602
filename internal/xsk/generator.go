package xsk

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Mode is how a socket binds: the kernel copies each frame into an skb
// (copy, XDP_COPY) or the driver sends from the UMEM (zerocopy,
// XDP_ZEROCOPY).
type Mode string

// The bind modes.
const (
	Copy     Mode = "copy"
	ZeroCopy Mode = "zerocopy"
)

func (m Mode) bindFlags() uint16 {
	if m == ZeroCopy {
		return unix.XDP_ZEROCOPY | unix.XDP_USE_NEED_WAKEUP
	}
	return unix.XDP_COPY | unix.XDP_USE_NEED_WAKEUP
}

// Defaults of Config.
const (
	DefaultBatch        = 64
	DefaultRingSize     = 2048
	DefaultDrainTimeout = time.Second
)

// Config describes one generator run.
type Config struct {
	// Dev is the device to send on (a tap), in the namespace InNetns
	// enters.
	Dev string
	// Queues are the device queue ids to send on, one socket and one
	// thread each (default [0]). A tap has one queue per attached reader.
	Queues []int
	// Mode is copy (default) or zerocopy.
	Mode Mode
	// Frame is what is sent.
	Frame Frame
	// Count is the number of frames each queue sends (0 = no limit).
	Count uint64
	// Duration is how long each queue submits frames, from its first
	// submit (0 = no limit). With neither Count nor Duration, Run sends
	// until ctx is done.
	Duration time.Duration
	// Batch is the number of descriptors submitted per kick (default 64).
	// Above 32 the socket's XDP_MAX_TX_SKB_BUDGET is raised to it where
	// the kernel has that option (6.17+), so one kick sends the batch.
	Batch int
	// RingSize is the Tx ring's entries (power of two, default 2048); the
	// completion ring and the UMEM have twice as many (frames in flight).
	RingSize int
	// DrainTimeout bounds the wait for outstanding completions after the
	// last submit (default 1s); a zero-copy driver that stopped sending
	// may never complete them.
	DrainTimeout time.Duration
	// CPUs, when set, pins queue i's thread to CPU CPUs[i] (same length
	// as Queues).
	CPUs []int
	// InNetns runs fn on a thread inside the device's network namespace
	// (hostnet.Netns.Do); nil = the caller's namespace. Sockets belong to
	// the namespace they are created in; Run works from any thread.
	InNetns func(fn func() error) error
}

func (c Config) withDefaults() Config {
	if len(c.Queues) == 0 {
		c.Queues = []int{0}
	}
	if c.Mode == "" {
		c.Mode = Copy
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	c.Frame = c.Frame.withDefaults()
	return c
}

// validate checks what needs no device.
func (c Config) validate() error {
	if c.Dev == "" {
		return invalidf("no device to send on")
	}
	if c.Mode != Copy && c.Mode != ZeroCopy {
		return invalidf("mode %q: want copy or zerocopy", c.Mode)
	}
	seen := map[int]bool{}
	for _, q := range c.Queues {
		if q < 0 || seen[q] {
			return invalidf("queues %v: want distinct queue ids from 0", c.Queues)
		}
		seen[q] = true
	}
	if c.CPUs != nil && len(c.CPUs) != len(c.Queues) {
		return invalidf("%d CPUs for %d queues: want one CPU per queue", len(c.CPUs), len(c.Queues))
	}
	if c.RingSize < 64 || c.RingSize > 1<<16 || c.RingSize&(c.RingSize-1) != 0 {
		return invalidf("ring size %d: want a power of two from 64 to 65536", c.RingSize)
	}
	if c.Batch < 1 || c.Batch > c.RingSize {
		return invalidf("batch %d: want 1 to the ring size %d", c.Batch, c.RingSize)
	}
	if c.Duration < 0 || c.DrainTimeout < 0 {
		return invalidf("negative duration")
	}
	return c.Frame.validate()
}

// Generator is a set of AF_XDP sockets bound to a device's queues, with
// their frames in place, ready to Run once.
type Generator struct {
	cfg    Config
	driver string
	socks  []*xsk
	flows  [][4]byte
	ran    bool

	// The run (Start, Go, Wait).
	ctx     context.Context // Start's
	cancel  context.CancelFunc
	res     *Result
	gate    chan struct{} // closed by Go
	runDone chan struct{} // closed by Wait
	stop    atomic.Bool
	base    time.Time // set by Go, before the gate opens
	wg      sync.WaitGroup
	errs    []error
	tids    []int
}

// Open validates cfg, checks the device (it exists, is up, has a carrier
// and the queues) and creates one socket per queue, each with its own
// UMEM holding the prebuilt frames, bound in cfg.Mode. Errors: ErrInvalid
// (bad configuration or device state), ErrNoAFXDP, an *UnsupportedError
// (ErrUnsupported: the mode is refused), or a wrapped errno.
func Open(cfg Config) (*Generator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg}
	in := cfg.InNetns
	if in == nil {
		in = func(fn func() error) error { return fn() }
	}
	err := in(g.open)
	if err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// open runs inside the namespace.
func (g *Generator) open() error {
	c := g.cfg
	dev, err := lookupDev(c.Dev)
	if err != nil {
		return err
	}
	if err := dev.checkQueues(c.Queues); err != nil {
		return err
	}
	g.driver = dev.driver
	frames, err := c.Frame.withMAC(dev.mac).Build()
	if err != nil {
		return err
	}
	g.flows = flows(frames)
	p := sockParams{frames: uint32(2 * c.RingSize), chunk: chunkSize(c.Frame.Size), txEntries: uint32(c.RingSize),
		flags: c.Mode.bindFlags()}
	if c.Batch > 32 {
		p.budget = c.Batch
	}
	for _, q := range c.Queues {
		x, err := newXSK(p, frames[0])
		if err != nil {
			return fmt.Errorf("afxdp %s queue %d: %w", c.Dev, q, err)
		}
		g.socks = append(g.socks, x)
		if err := x.bind(dev.index, q, p.flags); err != nil {
			return fmt.Errorf("afxdp: bind %s queue %d %s: %w", c.Dev, q, c.Mode, bindError(err, c, dev, q))
		}
	}
	return nil
}

func chunkSize(frame int) uint32 {
	if frame <= 2048 {
		return 2048
	}
	return 4096
}

func (f Frame) withMAC(mac []byte) Frame {
	if f.SrcMAC == nil {
		f.SrcMAC = mac
	}
	return f
}

// bindError explains a bind errno.
func bindError(err error, c Config, dev *device, q int) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return unsupported(c.Mode, dev.driver, unix.EOPNOTSUPP)
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("%w (another AF_XDP socket is bound to this queue, for over %v)", err, bindBusyWait)
	case errors.Is(err, unix.EINVAL):
		return invalidf("EINVAL: %s has no queue %d (or refuses the bind flags); use a queue the device has", c.Dev, q)
	}
	return err
}

// Close unbinds and frees the sockets.
func (g *Generator) Close() error {
	var errs []error
	for _, x := range g.socks {
		errs = append(errs, x.close())
	}
	g.socks = nil
	return errors.Join(errs...)
}

// Result is what a run did. Packets are completions: frames the kernel
// took from the Tx ring and finished with (transmitted, or dropped by the
// device, which counts that in its tx_dropped).
type Result struct {
	Mode      Mode `json:"mode"`
	FrameSize int  `json:"frame_size"`
	// Packets is the completions over all queues.
	Packets uint64 `json:"packets"`
	// Submitted is the descriptors put on the Tx rings.
	Submitted uint64 `json:"submitted"`
	// Outstanding were submitted but not completed when the drain timed
	// out.
	Outstanding uint64 `json:"outstanding"`
	// Duration is the run time: the first submit on any queue to the
	// last completion on any queue.
	Duration time.Duration `json:"duration_ns"`
	// TxBudget is the frames one kick may send (XDP_MAX_TX_SKB_BUDGET;
	// 0 = the kernel's default of 32).
	TxBudget int           `json:"tx_budget"`
	Queues   []QueueResult `json:"queues"`
}

// QueueResult is one queue's (one socket's, one thread's) share.
type QueueResult struct {
	Queue       int           `json:"queue"`
	Packets     uint64        `json:"packets"`
	Submitted   uint64        `json:"submitted"`
	Outstanding uint64        `json:"outstanding"`
	Duration    time.Duration `json:"duration_ns"` // first submit to last completion
	// Kicks is the sendto calls; Again those the kernel cut short with
	// EAGAIN (its per-kick budget, a full completion ring or the socket's
	// send buffer), Busy those that ended on EBUSY (the device dropped a
	// frame: a full tap ring or no carrier).
	Kicks uint64 `json:"kicks"`
	Again uint64 `json:"again"`
	Busy  uint64 `json:"busy"`
	// TxRingFull counts the times the thread found no free Tx slot (the
	// kernel had not taken what was submitted); CompletionWaits the times
	// every frame was in flight, waiting for completions. Each is counted
	// once per stall, not per spin.
	TxRingFull      uint64 `json:"tx_ring_full"`
	CompletionWaits uint64 `json:"completion_waits"`
	// InvalidDescs is the kernel's count of Tx descriptors it rejected
	// (XDP_STATISTICS; 0 unless the generator is broken).
	InvalidDescs uint64 `json:"invalid_descs"`
	// CPUTime is the thread's CPU time during the run, exact to the
	// nanosecond (CLOCK_THREAD_CPUTIME_ID: the scheduler's runtime).
	// UserCPU and SystemCPU split it as getrusage RUSAGE_THREAD does;
	// copy mode's kernel work runs in the sendto calls, so it is
	// SystemCPU. That split is sampled at timer ticks and never runs
	// ahead of the scheduler's last update, so a queue that ran for
	// less than a tick can show 0 in both.
	CPUTime   time.Duration `json:"cpu_ns"`
	UserCPU   time.Duration `json:"user_cpu_ns"`
	SystemCPU time.Duration `json:"system_cpu_ns"`

	// started, first and last: the first submit and the last completion,
	// as offsets from the run's start.
	started     bool
	first, last time.Duration
}

// PPS is Packets over Duration (0 without a duration).
func (r *Result) PPS() float64 { return pps(r.Packets, r.Duration) }

// PPS is the queue's Packets over its Duration.
func (q *QueueResult) PPS() float64 { return pps(q.Packets, q.Duration) }

func pps(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// CPU is the generator threads' CPU time (all queues).
func (r *Result) CPU() time.Duration {
	var t time.Duration
	for _, q := range r.Queues {
		t += q.CPU()
	}
	return t
}

// CPU is the queue thread's CPU time: CPUTime, or user + system where
// the thread CPU clock was not read.
func (q *QueueResult) CPU() time.Duration {
	if q.CPUTime > 0 {
		return q.CPUTime
	}
	return q.UserCPU + q.SystemCPU
}

// CPUPerPacket is CPU over Packets, in nanoseconds (0 without packets).
func (r *Result) CPUPerPacket() float64 {
	if r.Packets == 0 {
		return 0
	}
	return float64(r.CPU().Nanoseconds()) / float64(r.Packets)
}

// Run sends on every queue, one locked OS thread per queue, until each
// queue has sent Count frames or Duration has passed since its first
// submit, or ctx is done; then it waits (up to DrainTimeout) for the
// outstanding completions. The Result is filled even when an error
// is returned. A ctx done before Count or Duration is reached returns
// ctx's error; without Count and Duration, ctx ending the run is the
// normal end. Run is Start, Go and Wait; a generator runs once.
func (g *Generator) Run(ctx context.Context) (*Result, error) {
	if err := g.Start(ctx); err != nil {
		return nil, err
	}
	g.Go()
	return g.Wait()
}

// Start starts one locked OS thread per queue and returns once each has
// its thread id (Threads) and waits for Go: nothing is sent before Go,
// so whoever measures the threads (perf stat -t, pinning) can attach
// first. ctx bounds the run as for Run; a ctx done before Go ends the
// threads without sending. Wait must follow.
func (g *Generator) Start(ctx context.Context) error {
	if g.ran {
		return errors.New("afxdp: generator started twice; Open a new generator")
	}
	g.ran = true
	c := g.cfg
	g.ctx = ctx
	ctx, g.cancel = context.WithCancel(ctx)
	g.res = &Result{Mode: c.Mode, FrameSize: c.Frame.Size, Queues: make([]QueueResult, len(g.socks))}
	g.gate = make(chan struct{})
	g.runDone = make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			g.stop.Store(true)
		case <-g.runDone:
		}
	}()
	g.errs = make([]error, len(g.socks))
	g.tids = make([]int, len(g.socks))
	var ready sync.WaitGroup
	for i, x := range g.socks {
		g.res.TxBudget = x.budgetSet
		g.wg.Add(1)
		ready.Add(1)
		go func() {
			defer g.wg.Done()
			// The thread stays locked: it ends with the goroutine, so a
			// pinned affinity never leaks to other goroutines.
			runtime.LockOSThread()
			g.tids[i] = unix.Gettid()
			ready.Done()
			select {
			case <-g.gate:
			case <-ctx.Done():
				return
			}
			cpu := -1
			if c.CPUs != nil {
				cpu = c.CPUs[i]
			}
			q := newTxq(x, c, g.flows)
			q.base = g.base
			g.errs[i] = q.run(&g.stop, cpu)
			g.res.Queues[i] = q.res
			g.res.Queues[i].started, g.res.Queues[i].first, g.res.Queues[i].last = q.started, q.first, q.last
		}()
	}
	ready.Wait()
	return nil
}

// Threads returns the thread ids of the queues' threads (after Start),
// in queue order.
func (g *Generator) Threads() []int { return slices.Clone(g.tids) }

// Go lets the queue threads send. It is called once, after Start.
func (g *Generator) Go() {
	g.base = time.Now()
	close(g.gate)
}

// Stop ends the run early: the threads stop sending (or never start,
// before Go) and Wait returns what was sent. Wait's error does not count
// a Stop.
func (g *Generator) Stop() {
	if g.cancel != nil {
		g.cancel()
	}
}

// Abort ends a started run whose result nobody reads (Stop, Wait) and
// closes the sockets.
func (g *Generator) Abort() {
	g.Stop()
	g.Wait()
	g.Close()
}

// Wait waits for the queue threads to finish and returns what they did
// (filled even with an error).
func (g *Generator) Wait() (*Result, error) {
	if g.res == nil {
		return nil, errors.New("afxdp: Wait without Start")
	}
	g.wg.Wait()
	close(g.runDone)
	res, c := g.res, g.cfg
	g.cancel()
	for i := range res.Queues {
		res.Queues[i].Queue = g.socks[i].queue
	}
	started := false
	var first, last time.Duration
	for _, q := range res.Queues {
		res.Packets += q.Packets
		res.Submitted += q.Submitted
		res.Outstanding += q.Outstanding
		if q.started && (!started || q.first < first) {
			first = q.first
		}
		started = started || q.started
		last = max(last, q.last)
	}
	if started && last > first {
		res.Duration = last - first
	}
	if err := errors.Join(g.errs...); err != nil {
		return res, err
	}
	if err := g.ctx.Err(); err != nil && (c.Count > 0 || c.Duration > 0 || !started) {
		return res, err
	}
	return res, nil
}

// device is what Open learns about the device.
type device struct {
	index  int
	mac    []byte
	driver string
	tap    *netlink.Tuntap
	txq    int // IFLA_NUM_TX_QUEUES
}

// lookupDev reads the device in the calling thread's namespace and checks
// it can send.
func lookupDev(name string) (*device, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, invalidf("device %s does not exist in this network namespace", name)
		}
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	a := l.Attrs()
	d := &device{index: a.Index, mac: a.HardwareAddr, driver: driverName(name), txq: a.NumTxQueues}
	if t, ok := l.(*netlink.Tuntap); ok {
		d.tap = t
		if d.driver == "" {
			d.driver = "tun"
		}
	}
	if d.driver == "" {
		d.driver = l.Type()
	}
	if a.RawFlags&unix.IFF_UP == 0 {
		return nil, invalidf("device %s is down; set it up first", name)
	}
	if a.RawFlags&unix.IFF_LOWER_UP == 0 {
		if d.tap != nil {
			return nil, invalidf("tap %s has no carrier (nothing reads it: attach QEMU or a reader first); every frame would be dropped", name)
		}
		return nil, invalidf("device %s has no carrier; every frame would be dropped", name)
	}
	return d, nil
}

// checkQueues checks the queue ids against the device's. A tap's queues
// are its attached readers (a single-queue tap has queue 0 only); the
// kernel's bind takes any queue below the allocated count, but a tap
// silently sends nothing on a queue without a reader.
func (d *device) checkQueues(queues []int) error {
	for _, q := range queues {
		switch {
		case d.tap != nil && d.tap.Flags&netlink.TUNTAP_MULTI_QUEUE == 0 && q > 0:
			return invalidf("queue %d: tap %s is single-queue (queue 0 only); use queue 0 or a multi-queue tap", q, d.tap.Name)
		case d.tap != nil && d.tap.Flags&netlink.TUNTAP_MULTI_QUEUE != 0 && q >= d.tap.Queues:
			return invalidf("queue %d: tap %s has %d queues (0-%d, one per attached reader); use a lower queue or give the tap more queues",
				q, d.tap.Name, d.tap.Queues, d.tap.Queues-1)
		case d.tap == nil && d.txq > 0 && q >= d.txq:
			return invalidf("queue %d: device has %d Tx queues (0-%d)", q, d.txq, d.txq-1)
		}
	}
	return nil
}

// driverName asks ethtool for the device's driver ("" when it cannot).
func driverName(dev string) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, dev)
	if err != nil {
		return ""
	}
	return unix.ByteSliceToString(info.Driver[:])
}
