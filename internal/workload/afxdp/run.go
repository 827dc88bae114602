package afxdp

import (
	"context"
	"errors"
	"fmt"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
)

func (c *Config) Needs() workload.Needs { return workload.Needs{Features: []string{series.Feature}} }

// Commands: the generator runs inside the harness; its line says what it
// does, as a comment.
func (c *Config) Commands(p workload.PlanEnv) []string {
	return []string{"# " + c.describe(p.Netns, p.Dev, p.DevMAC, p.DstMAC, p.Src, p.Dst)}
}

func (c *Config) describe(netns, dev, srcMAC, dstMAC, src, dst string) string {
	bound := fmt.Sprintf("for %s", c.Duration)
	switch {
	case c.Count > 0 && c.Duration > 0:
		bound = fmt.Sprintf("%d frames per thread or %s, whichever comes first", c.Count, c.Duration)
	case c.Count > 0:
		bound = fmt.Sprintf("%d frames per thread", c.Count)
	}
	where := dev
	if netns != "" {
		where += " in netns " + netns
	}
	socks := fmt.Sprintf("1 AF_XDP socket and thread on %s queue %d", where, c.FirstQueue)
	if c.Threads > 1 {
		socks = fmt.Sprintf("%d AF_XDP sockets and threads on %s queues %d-%d", c.Threads, where, c.FirstQueue, c.FirstQueue+c.Threads-1)
	}
	return fmt.Sprintf("afxdp (in the vnetbench process): %s, bind %s, %d-byte UDP frames %s -> %s, %s -> %s port 9, batch %d, %s",
		socks, c.Mode, c.PktSize, srcMAC, dstMAC, src, dst, c.Batch, bound)
}

func (c *Config) Generator() workload.Generator { return &generator{cfg: *c} }

// config is the generator's configuration for window w.
func (c *Config) config(w *workload.Window) (xdp.Config, error) {
	f, err := series.Frame(w, c.PktSize)
	if err != nil {
		return xdp.Config{}, err
	}
	x := xdp.Config{Dev: w.Dev, Mode: xdp.Mode(c.Mode), Frame: f, Count: c.Count, Duration: c.Duration, Batch: c.Batch,
		InNetns: w.InNetns}
	for i := range c.Threads {
		x.Queues = append(x.Queues, c.FirstQueue+i)
	}
	if w.Duration > 0 { // warmup
		x.Duration, x.Count = w.Duration, 0
	}
	return x, nil
}

// generator is a workload.Preparer: Prepare opens and binds the sockets
// and starts the threads (perf attaches to them), Start lets them send.
type generator struct {
	cfg    Config
	w      *workload.Window
	g      *xdp.Generator
	went   bool
	before hostnet.LinkStats
	// beforeErr: the tap's counters could not be read at Go (lost_pps
	// is then left to the runner's window).
	beforeErr error
}

func (g *generator) Prepare(ctx context.Context, w *workload.Window) error {
	g.w = w
	cfg, err := g.cfg.config(w)
	if err != nil {
		return fmt.Errorf("afxdp: %w", err)
	}
	x, err := xdp.Open(cfg)
	if err != nil {
		if why, ok := workload.IsUnsupported(err); ok {
			return workload.Unsupported("%s", why)
		}
		return fmt.Errorf("afxdp: %w", err)
	}
	if err := x.Start(ctx); err != nil {
		x.Close()
		return fmt.Errorf("afxdp: %w", err)
	}
	g.g = x
	if w.Note != nil {
		w.Note("# " + g.cfg.describe(w.Netns, w.Dev, w.DevMAC, w.DstMAC, w.Src, w.Dst))
	}
	return nil
}

// Threads are the sending threads, inside the harness's process.
func (g *generator) Threads() ([]int, bool) { return series.Threads(g.g) }

// Start reads the tap's counters and lets the threads send (after
// Prepare, which it runs when the runner did not).
func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	if g.g == nil || g.w != w {
		if err := g.Prepare(ctx, w); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		g.Release()
		return err
	}
	g.before, g.beforeErr = g.linkStats()
	g.went = true
	g.g.Go()
	return nil
}

// Release ends the prepared threads without sending and closes the
// sockets.
func (g *generator) Release() {
	if g.g != nil {
		g.g.Abort()
		g.g = nil
	}
}

func (g *generator) linkStats() (hostnet.LinkStats, error) { return series.LinkStats(g.w) }

func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	if g.g == nil {
		return nil, errors.New("afxdp: Wait without Start")
	}
	defer g.g.Close()
	res, err := g.g.Wait()
	if err != nil {
		return nil, fmt.Errorf("afxdp: %w", err)
	}
	if res.Packets == 0 || res.Duration <= 0 {
		return nil, fmt.Errorf("afxdp: no frame completed in %v (%d submitted)", res.Duration, res.Submitted)
	}
	r := &workload.Result{Elapsed: res.Duration, Metrics: map[metric.Key]float64{metric.TxPPS: res.PPS()}, CountsDrops: true}
	after, aerr := g.linkStats()
	switch {
	case g.beforeErr != nil || aerr != nil:
		r.Warnings = append(r.Warnings, fmt.Sprintf("afxdp: lost_pps is over the window, not the generator's run: %v", errors.Join(g.beforeErr, aerr)))
	default:
		// Drops happen inside the sends (copy mode) or while frames are
		// in flight: all of them between the two readings, all within
		// the run time.
		r.Metrics[metric.LostPPS] = float64(after.TxDropped-g.before.TxDropped) / res.Duration.Seconds()
	}
	var busy float64
	for _, q := range res.Queues {
		r.Threads = append(r.Threads, workload.Thread{I: q.Queue, TxPPS: q.PPS()})
		if q.Duration > 0 {
			busy += float64(q.CPU()) / float64(q.Duration)
		}
		if q.InvalidDescs > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("afxdp queue %d: the kernel rejected %d Tx descriptors as invalid", q.Queue, q.InvalidDescs))
		}
	}
	if len(res.Queues) > 0 {
		r.BusyFrac = busy / float64(len(res.Queues))
	}
	r.InHarnessCPU = res.CPU()
	if res.Outstanding > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("afxdp: %d frames were still in flight when the drain timed out (not counted)", res.Outstanding))
	}
	g.w.AddJSONArtifact(r, "afxdp.json", res)
	return r, nil
}

var (
	_ workload.Preparer = (*generator)(nil)
	_ workload.Releaser = (*generator)(nil)
)
