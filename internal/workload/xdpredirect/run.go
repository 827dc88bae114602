package xdpredirect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
)

// Needs: AF_XDP sockets (the afxdp workload's feature: doctor and
// preflight bind one to a throwaway tap).
func (c *Config) Needs() workload.Needs { return workload.Needs{Features: []string{series.Feature}} }

// Commands: everything runs inside the harness; one comment line says
// what.
func (c *Config) Commands(p workload.PlanEnv) []string {
	return []string{"# " + c.describe(p.Netns, p.Dev)}
}

func (c *Config) Generator() workload.Generator { return &generator{cfg: *c} }

// drainQuiet and drainMax bound the wait for the tap's ring to drain after
// the generator's last frame: until its tx_packets stays put for
// drainQuiet, at most drainMax.
const (
	drainQuiet = 200 * time.Millisecond
	drainMax   = 5 * time.Second
)

// generator is a workload.Preparer: Prepare builds the path and binds the
// AF_XDP socket (its thread exists, perf attaches), Start reads the
// counters and lets it send, Wait drains, reads and tears down.
type generator struct {
	cfg  Config
	w    *workload.Window
	path *path
	g    *xdp.Generator
	// The counters at Start.
	ctr0 counts
	tap0 hostnet.LinkStats
}

func (g *generator) in(fn func() error) error {
	if g.w.InNetns != nil {
		return g.w.InNetns(fn)
	}
	return fn()
}

func (g *generator) Prepare(ctx context.Context, w *workload.Window) error {
	g.w = w
	if err := g.in(func() error {
		var err error
		g.path, err = openPath(w.Dev)
		return err
	}); err != nil {
		return err
	}
	cfg, err := g.senderConfig()
	if err == nil {
		g.g, err = xdp.Open(cfg)
	}
	if err == nil {
		if err = g.g.Start(ctx); err != nil {
			g.g.Close()
			g.g = nil
		}
	}
	if err != nil {
		tx := g.path.tx
		g.closePath()
		if why, ok := workload.IsUnsupported(err); ok {
			return workload.Unsupported("%s", why)
		}
		return fmt.Errorf("xdp_redirect: AF_XDP on %s: %w", tx, err)
	}
	if w.Note != nil {
		w.Note("# " + g.cfg.describe(w.Netns, w.Dev))
	}
	return nil
}

// senderConfig is the AF_XDP generator's: the veth's sending end, frames
// to the guest.
func (g *generator) senderConfig() (xdp.Config, error) {
	w := g.w
	f, err := series.Frame(w, g.cfg.PktSize)
	if err != nil {
		return xdp.Config{}, err
	}
	d := g.cfg.Duration
	if w.Duration > 0 { // warmup
		d = w.Duration
	}
	return xdp.Config{Dev: g.path.tx, Mode: xdp.Copy, Frame: f, Duration: d, Batch: g.cfg.Batch, InNetns: w.InNetns}, nil
}

// Threads: the AF_XDP generator's sending thread, in the harness.
func (g *generator) Threads() ([]int, bool) { return series.Threads(g.g) }

func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	if g.g == nil || g.w != w {
		if err := g.Prepare(ctx, w); err != nil {
			return err
		}
	}
	if err := g.in(func() error {
		var err error
		if g.ctr0, err = g.path.read(); err != nil {
			return err
		}
		g.tap0, err = hostnet.ReadLinkStats(w.Dev)
		return err
	}); err != nil {
		g.Release()
		return fmt.Errorf("xdp_redirect: counters before the run: %w", err)
	}
	g.g.Go()
	return nil
}

// Release stops the prepared sender without sending and removes the
// path.
func (g *generator) Release() {
	if g.g != nil {
		g.g.Abort()
		g.g = nil
	}
	g.closePath()
}

func (g *generator) closePath() {
	if g.path != nil {
		g.in(g.path.close)
		g.path = nil
	}
}

func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	if g.g == nil {
		return nil, errors.New("xdp_redirect: Wait without Start")
	}
	res, err := g.g.Wait()
	g.g.Close()
	g.g = nil
	defer g.closePath()
	if err != nil {
		return nil, fmt.Errorf("xdp_redirect: AF_XDP: %w", err)
	}
	if res.Packets == 0 || res.Duration <= 0 {
		return nil, fmt.Errorf("xdp_redirect: no frame completed on the veth in %v (%d submitted)", res.Duration, res.Submitted)
	}
	ctr, tap, err := g.drained(ctx)
	if err != nil {
		return nil, fmt.Errorf("xdp_redirect: counters after the run: %w", err)
	}
	if err := g.wentBack(ctr, tap); err != nil {
		return nil, err
	}
	r, o := g.result(res, ctr, tap)
	if why := refused(o); why != "" {
		return nil, workload.Unsupported("%s", why)
	}
	return r, nil
}

// wentBack names a counter that read less after the run than before it
// (the tap or the program made anew): the run then measured nothing, and
// its differences would be 2^64 less a little.
func (g *generator) wentBack(c counts, tap hostnet.LinkStats) error {
	for _, x := range []struct {
		name string
		a, b uint64
	}{{"the XDP program's seen count", g.ctr0.seen, c.seen}, {"the XDP program's redirected count", g.ctr0.redirected, c.redirected},
		{"the tap's tx_packets", g.tap0.TxPackets, tap.TxPackets}, {"the tap's tx_dropped", g.tap0.TxDropped, tap.TxDropped}} {
		if x.b < x.a {
			return fmt.Errorf("xdp_redirect: %s went back from %d to %d during the run (a device or program made anew?): nothing measured", x.name, x.a, x.b)
		}
	}
	return nil
}

// refused says why a run whose program redirected frames that neither
// reached the tap's reader nor its ring's drop count shows a kernel that
// does not take XDP frames into a tap ("" when some got through).
func refused(o outcome) string {
	if o.Redirected > 0 && o.TapTxPackets == 0 && o.TapTxDropped == 0 {
		return "the XDP program redirected every frame to the tap, and none reached its ring (no tx_packets, no tx_dropped): this kernel's devmap or tun refuses XDP frames for the tap"
	}
	return ""
}

// drained reads the counters once the tap's ring has drained: its
// tx_packets stayed put for drainQuiet (or drainMax passed).
func (g *generator) drained(ctx context.Context) (counts, hostnet.LinkStats, error) {
	var c counts
	var s hostnet.LinkStats
	read := func() error {
		return g.in(func() error {
			var err error
			if c, err = g.path.read(); err != nil {
				return err
			}
			s, err = hostnet.ReadLinkStats(g.w.Dev)
			return err
		})
	}
	if err := read(); err != nil {
		return c, s, err
	}
	last, since := s.TxPackets, time.Now()
	for end := time.Now().Add(drainMax); time.Now().Before(end) && time.Since(since) < drainQuiet && ctx.Err() == nil; {
		time.Sleep(20 * time.Millisecond)
		if err := read(); err != nil {
			return c, s, err
		}
		if s.TxPackets != last {
			last, since = s.TxPackets, time.Now()
		}
	}
	return c, s, nil
}

// outcome is the artifact xdp_redirect.json: the counts behind the
// metrics.
type outcome struct {
	Sender          *xdp.Result `json:"sender"`
	Seen            uint64      `json:"xdp_seen"`
	Redirected      uint64      `json:"xdp_redirected"`
	TapTxPackets    uint64      `json:"tap_tx_packets"`
	TapTxDropped    uint64      `json:"tap_tx_dropped"`
	Lost            uint64      `json:"lost"`
	RunS            float64     `json:"run_s"`
	VethXDPDropsEst uint64      `json:"veth_drops"` // sent - seen
}

// result computes the metrics over the sender's run time.
func (g *generator) result(res *xdp.Result, c counts, tap hostnet.LinkStats) (*workload.Result, outcome) {
	run := res.Duration.Seconds()
	o := outcome{Sender: res, Seen: c.seen - g.ctr0.seen, Redirected: c.redirected - g.ctr0.redirected,
		TapTxPackets: tap.TxPackets - g.tap0.TxPackets, TapTxDropped: tap.TxDropped - g.tap0.TxDropped, RunS: run}
	if o.Redirected > o.TapTxPackets {
		o.Lost = o.Redirected - o.TapTxPackets
	}
	if res.Packets > o.Seen {
		o.VethXDPDropsEst = res.Packets - o.Seen
	}
	r := &workload.Result{Elapsed: res.Duration, Packets: o.TapTxPackets, InHarnessCPU: res.CPU(),
		Metrics: map[metric.Key]float64{
			TxPPS.Key:       float64(o.TapTxPackets) / run,
			LostPPS.Key:     float64(o.Lost) / run,
			RedirectPPS.Key: float64(o.Redirected) / run,
			SentPPS.Key:     res.PPS(),
		}}
	if o.Redirected == 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("xdp_redirect: the XDP program saw %d frames and redirected none", o.Seen))
	}
	if o.TapTxPackets > o.Redirected+o.Redirected/100+100 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("xdp_redirect: the tap passed on %d frames, more than the %d redirected: something else sent through it", o.TapTxPackets, o.Redirected))
	}
	if len(res.Queues) > 0 {
		q := res.Queues[0]
		r.Threads = append(r.Threads, workload.Thread{I: q.Queue, TxPPS: q.PPS()})
		if q.Duration > 0 {
			r.BusyFrac = float64(q.CPU()) / float64(q.Duration)
		}
	}
	g.w.AddJSONArtifact(r, "xdp_redirect.json", o)
	return r, o
}

var (
	_ workload.Preparer = (*generator)(nil)
	_ workload.Releaser = (*generator)(nil)
)
