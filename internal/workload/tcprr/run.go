package tcprr

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// dialTimeout bounds a connect to the guest (a TCG guest answers a SYN
// in milliseconds; a guest that never does has no server).
const dialTimeout = 10 * time.Second

// bulkChunk is what one write of a bulk stream sends.
const bulkChunk = 64 << 10

func (c *Config) Needs() workload.Needs { return workload.Needs{} }

// Commands: the client runs inside the harness; its line says what it
// does, as a comment.
func (c *Config) Commands(p workload.PlanEnv) []string {
	return []string{"# " + c.describe(p.Netns, p.Dst)}
}

func (c *Config) describe(netns, dst string) string {
	from := "the harness's namespace"
	if netns != "" {
		from = "netns " + netns
	}
	s := fmt.Sprintf("tcp_rr (in the vnetbench process): 1 TCP connection from %s to %s:%d (the guest agent's echo server), %d B requests and responses, one in flight, for %v",
		from, dst, c.Port, c.Size, c.Duration)
	if c.Bulk == BulkTCP {
		s += fmt.Sprintf("; then %d bulk TCP stream(s) to %s:%d (its discard server), %v of ramp, and the transactions again for %v beside them",
			c.BulkStreams, dst, c.Port+1, Ramp, c.Duration)
	}
	return s
}

func (c *Config) Generator() workload.Generator { return &generator{cfg: *c} }

// generator runs the phases on locked threads of its own: Start connects
// and starts them, Wait collects them.
type generator struct {
	cfg    Config
	w      *workload.Window
	ctx    context.Context // Start's: the agent's requests during the run
	rr     int             // the transactions' socket
	bulk   []int           // the bulk streams' sockets
	stop   atomic.Bool     // ends every loop within a tick
	bulkGo chan struct{}   // closed when the bulk streams may send (or stop)
	goOnce sync.Once
	tids   []int
	wg     sync.WaitGroup
	done   chan struct{}
	mu     sync.Mutex // out.bulkErr, which the senders set too
	out    runOut
}

// runOut is what the run measured.
type runOut struct {
	phases    []phaseOut
	bulkBytes uint64
	bulkSpan  time.Duration
	bulkErr   error
	err       error
	echoed    int64 // bytes the guest's echo server wrote back; -1 = unknown
}

// phaseOut is one phase: its round trips and its length.
type phaseOut struct {
	loaded bool
	rtts   []time.Duration
	span   time.Duration
}

// Start starts the guest's servers, connects and starts the phases; it
// returns once the client's and the bulk senders' threads exist (Threads).
func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	g.w, g.ctx = w, ctx
	if w.Duration > 0 { // warmup
		g.cfg.Duration = w.Duration
	}
	dst, err := netip.ParseAddr(w.Dst)
	if err != nil {
		return fmt.Errorf("tcp_rr: guest address %q: %w", w.Dst, err)
	}
	if w.Agent != nil {
		// A stop first: servers a failed window left running (its
		// cell ended before Wait) would refuse the start.
		w.Agent.Do(ctx, agentOp, "stop")
		if _, err := w.Agent.Do(ctx, agentOp, "start", strconv.Itoa(g.cfg.Port)); err != nil {
			return fmt.Errorf("tcp_rr: start the guest's servers: %w", err)
		}
	}
	if w.Note != nil {
		w.Note("# " + g.cfg.describe(w.Netns, w.Dst))
	}
	g.rr, g.bulk = -1, nil
	if err := g.dial(dst); err != nil {
		g.closeAll()
		g.stopGuest()
		return err
	}
	g.bulkGo, g.done = make(chan struct{}), make(chan struct{})
	tids := make(chan int, 1+len(g.bulk))
	for _, fd := range g.bulk {
		g.wg.Add(1)
		go g.send(fd, tids)
	}
	g.wg.Add(1)
	go g.run(tids)
	for range 1 + len(g.bulk) {
		g.tids = append(g.tids, <-tids)
	}
	go func() { g.wg.Wait(); close(g.done) }()
	return nil
}

// dial makes the connections inside the run's namespace.
func (g *generator) dial(dst netip.Addr) error {
	in := g.w.InNetns
	if in == nil {
		in = func(fn func() error) error { return fn() }
	}
	return in(func() error {
		fd, err := dial(netip.AddrPortFrom(dst, uint16(g.cfg.Port)), dialTimeout)
		if err != nil {
			return fmt.Errorf("tcp_rr: %w", err)
		}
		g.rr = fd
		if g.cfg.Bulk != BulkTCP {
			return nil
		}
		for range g.cfg.BulkStreams {
			fd, err := dial(netip.AddrPortFrom(dst, uint16(g.cfg.Port+1)), dialTimeout)
			if err != nil {
				return fmt.Errorf("tcp_rr bulk stream: %w", err)
			}
			g.bulk = append(g.bulk, fd)
		}
		return nil
	})
}

// run is the client's thread: the phase alone, then the bulk streams'
// ramp and the phase beside them.
func (g *generator) run(tids chan<- int) {
	defer g.wg.Done()
	runtime.LockOSThread()
	tids <- unix.Gettid()
	defer func() {
		// The bulk senders end with the phases.
		g.stop.Store(true)
		g.startBulk()
	}()
	p, err := g.phase(false)
	g.out.phases = append(g.out.phases, p)
	if err != nil || g.cfg.Bulk != BulkTCP {
		g.out.err = err
		return
	}
	g.startBulk()
	if !g.sleep(Ramp) {
		return
	}
	b0, t0, err0 := g.bulkCount()
	p, err = g.phase(true)
	g.out.phases = append(g.out.phases, p)
	g.out.err = err
	b1, t1, err1 := g.bulkCount()
	if err := errors.Join(err0, err1); err != nil {
		g.bulkFailed(err)
		return
	}
	g.out.bulkBytes, g.out.bulkSpan = b1-b0, t1.Sub(t0)
}

func (g *generator) startBulk() { g.goOnce.Do(func() { close(g.bulkGo) }) }

// bulkFailed records the bulk streams' first error.
func (g *generator) bulkFailed(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.out.bulkErr == nil {
		g.out.bulkErr = err
	}
}

// phase runs transactions back to back for the configured duration.
func (g *generator) phase(loaded bool) (phaseOut, error) {
	req, resp := make([]byte, g.cfg.Size), make([]byte, g.cfg.Size)
	out := phaseOut{loaded: loaded, rtts: make([]time.Duration, 0, 4096)}
	start := time.Now()
	end := start.Add(g.cfg.Duration)
	for {
		t0 := time.Now()
		if !t0.Before(end) {
			break
		}
		if err := writeAll(g.rr, req, &g.stop); err != nil {
			return out, g.ioError("request", err)
		}
		if err := readFull(g.rr, resp, &g.stop); err != nil {
			return out, g.ioError("response", err)
		}
		t1 := time.Now()
		out.rtts = append(out.rtts, t1.Sub(t0))
		out.span = t1.Sub(start)
	}
	return out, nil
}

func (g *generator) ioError(what string, err error) error {
	if errors.Is(err, errStopped) {
		return errStopped
	}
	return fmt.Errorf("tcp_rr: %s after %d transactions: %w", what, g.count(), err)
}

func (g *generator) count() int {
	n := 0
	for _, p := range g.out.phases {
		n += len(p.rtts)
	}
	return n
}

// sleep waits d unless stopped first.
func (g *generator) sleep(d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if g.stop.Load() {
			return false
		}
	}
	return true
}

// bulkCount asks the guest how much the bulk streams delivered.
func (g *generator) bulkCount() (uint64, time.Time, error) {
	if g.w.Agent == nil {
		return 0, time.Now(), errors.New("no guest agent to ask for the bulk streams' bytes")
	}
	d, err := g.w.Agent.Do(g.ctx, agentOp, "bulk")
	t := time.Now()
	if err != nil {
		return 0, t, fmt.Errorf("tcp_rr: ask the guest for the bulk bytes: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(d, "bytes "), 10, 64)
	if err != nil {
		return 0, t, fmt.Errorf("tcp_rr: the guest's bulk reply %q: want \"bytes N\"", d)
	}
	return n, t, nil
}

// send is a bulk stream's thread: it waits for the loaded phase and
// writes until the phases end.
func (g *generator) send(fd int, tids chan<- int) {
	defer g.wg.Done()
	runtime.LockOSThread()
	tids <- unix.Gettid()
	<-g.bulkGo
	buf := make([]byte, bulkChunk)
	if err := func() error {
		for !g.stop.Load() {
			if err := writeAll(fd, buf, &g.stop); err != nil {
				return err
			}
		}
		return nil
	}(); err != nil && !errors.Is(err, errStopped) && !g.stop.Load() {
		g.bulkFailed(fmt.Errorf("tcp_rr bulk stream: %w", err))
	}
}

// Threads: the client's and the bulk senders' threads, in the harness.
func (g *generator) Threads() ([]int, bool) { return g.tids, false }

// Wait waits for the phases (or ctx: the loops end within a tick),
// stops the guest's servers and returns the metrics.
func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	if g.done == nil {
		return nil, errors.New("tcp_rr: Wait without Start")
	}
	select {
	case <-g.done:
	case <-ctx.Done():
		g.stop.Store(true)
		<-g.done
	}
	g.closeAll()
	g.out.echoed = g.stopGuest()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("tcp_rr: %w after %d transactions", ctx.Err(), g.count())
	}
	if g.out.err != nil {
		return nil, g.out.err
	}
	return g.result()
}

func (g *generator) closeAll() {
	for _, fd := range append([]int{g.rr}, g.bulk...) {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	g.rr, g.bulk = -1, nil
}

// stopGuest stops the guest's servers, even after ctx ended, and returns
// the bytes its echo server wrote back (-1 when it cannot tell).
func (g *generator) stopGuest() int64 {
	if g.w.Agent == nil {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.ctx), 30*time.Second)
	defer cancel()
	d, err := g.w.Agent.Do(ctx, agentOp, "stop")
	var echoed, discarded int64
	if err != nil {
		return -1
	}
	if _, err := fmt.Sscanf(d, "echoed %d bytes %d", &echoed, &discarded); err != nil {
		return -1
	}
	return echoed
}

// result turns the phases into the metrics.
func (g *generator) result() (*workload.Result, error) {
	r := &workload.Result{Metrics: map[metric.Key]float64{}}
	sum := summary{Size: g.cfg.Size, GuestEchoed: g.out.echoed}
	for _, p := range g.out.phases {
		if len(p.rtts) == 0 || p.span <= 0 {
			return nil, fmt.Errorf("tcp_rr: no transaction completed in %v", g.cfg.Duration)
		}
		r.Elapsed += p.span
		ps := summarize(p)
		sum.Phases = append(sum.Phases, ps)
		key := TPS.Key
		if p.loaded {
			key = LoadTPS.Key
		}
		r.Metrics[key] = ps.TPS
		for i, q := range percentiles {
			r.Metrics[rttKey(p.loaded, q.suffix)] = ps.RTT[i]
		}
		if len(p.rtts) < 1000 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("tcp_rr: %d transactions in the %s phase: its p99.9 is one of the largest few round trips (1000 or more make it a percentile); lengthen generator.tcp_rr.duration", len(p.rtts), ps.Phase))
		}
	}
	if g.cfg.Bulk == BulkTCP {
		switch {
		case g.out.bulkErr != nil:
			r.Warnings = append(r.Warnings, g.out.bulkErr.Error())
		case g.out.bulkSpan > 0:
			r.Metrics[BulkBPS.Key] = float64(g.out.bulkBytes) * 8 / g.out.bulkSpan.Seconds()
			sum.BulkBytes, sum.BulkSpanS = g.out.bulkBytes, g.out.bulkSpan.Seconds()
		}
	}
	g.w.AddJSONArtifact(r, "tcp_rr.json", sum)
	return r, nil
}

// summary is the artifact tcp_rr.json: each phase's count, rate and
// percentiles (seconds), and the bulk streams' bytes.
type summary struct {
	Size   int            `json:"size"`
	Phases []phaseSummary `json:"phases"`
	// GuestEchoed is what the guest's echo server wrote back over the
	// whole run (-1 = unknown): the transactions times size.
	GuestEchoed int64   `json:"guest_echoed_bytes"`
	BulkBytes   uint64  `json:"bulk_bytes,omitempty"`
	BulkSpanS   float64 `json:"bulk_span_s,omitempty"`
}

type phaseSummary struct {
	Phase        string    `json:"phase"` // "alone" or "bulk"
	Transactions int       `json:"transactions"`
	SpanS        float64   `json:"span_s"`
	TPS          float64   `json:"tps"`
	RTT          []float64 `json:"rtt_s"` // at percentiles' q
	Quantiles    []float64 `json:"quantiles"`
	MinS         float64   `json:"min_s"`
	MaxS         float64   `json:"max_s"`
}

// summarize is one phase's rate and percentiles (order statistics, as
// internal/latency computes them for the probe).
func summarize(p phaseOut) phaseSummary {
	sorted := make([]float64, len(p.rtts))
	for i, d := range p.rtts {
		sorted[i] = d.Seconds()
	}
	slices.Sort(sorted)
	ps := phaseSummary{Phase: "alone", Transactions: len(sorted), SpanS: p.span.Seconds(),
		TPS: float64(len(sorted)) / p.span.Seconds(), MinS: sorted[0], MaxS: sorted[len(sorted)-1]}
	if p.loaded {
		ps.Phase = "bulk"
	}
	for _, q := range percentiles {
		v := latency.Quantile(sorted, q.q)
		ps.RTT = append(ps.RTT, v)
		ps.Quantiles = append(ps.Quantiles, q.q)
	}
	return ps
}

var _ workload.ThreadLister = (*Config)(nil)
