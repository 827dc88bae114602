package vsock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Tools: socat, which the guest image copies from the host (doctor shows
// its version; it does not run on the host).
func (Workload) Tools() []workload.Tool {
	return []workload.Tool{{Name: "socat", Package: "socat", Version: []string{"socat", "-V"}}}
}

// The guest's vsock modules (Needs.GuestModules).
var (
	// GuestModules give the guest AF_VSOCK to the host over virtio; the
	// VM needs QEMU's vhost-vsock-pci with a guest CID, and the host (or
	// lab VM) the vhost_vsock module.
	GuestModules = []string{"vsock", "vmw_vsock_virtio_transport"}
	// LoopbackModules give AF_VSOCK inside the guest alone (CID 1,
	// VMADDR_CID_LOCAL): no device, nothing on the host.
	LoopbackModules = []string{"vsock", "vsock_loopback"}
)

// LabModules: vhost_vsock, which gives a lab VM /dev/vhost-vsock for its
// nested guest's vhost-vsock-pci device (virtio transport).
func (Workload) LabModules() []string { return []string{"vhost_vsock"} }

// Needs: the guest's vsock modules (and device, for virtio), socat in the
// guest image for the socat redirector, vsock sockmap in the guest's
// kernel for the sockmap one.
func (c *Config) Needs() workload.Needs {
	var n workload.Needs
	switch c.Transport {
	case Loopback:
		n.GuestModules = LoopbackModules
	default:
		n.GuestModules = GuestModules
		n.VsockCID = uint32(c.CID)
	}
	switch c.Redirector {
	case Socat:
		n.GuestPrograms = []string{"socat"}
	case Sockmap:
		n.GuestFeatures = []workload.KernelFeature{SockmapFeature}
	}
	return n
}

// peer is where the guest's redirector connects.
func (c *Config) peer() uint32 {
	if c.Transport == Loopback {
		return cidLocal
	}
	return cidHost
}

func (c *Config) guestArgs(d time.Duration) guestArgs {
	if d <= 0 {
		d = c.Duration
	}
	return guestArgs{Redirector: c.Redirector, Payload: c.Payload, Threads: c.Threads, Duration: d,
		PeerCID: c.peer(), Port: uint32(c.Port), Server: c.Transport == Loopback}
}

// Commands: what runs where, for plan (the guest's side is the agent's
// op; its redirector's command line is socat's).
func (c *Config) Commands(workload.PlanEnv) []string {
	a := c.guestArgs(0)
	var out []string
	where := "guest"
	if c.Transport == Virtio {
		out = append(out, fmt.Sprintf("# host: vsock server listening on port %d (any CID), accepting guest CID %d, counting bytes", c.Port, c.CID))
	} else {
		out = append(out, fmt.Sprintf("# guest: vsock server listening on port %d, counting bytes (vsock_loopback)", c.Port))
	}
	switch c.Redirector {
	case Socat:
		out = append(out, "# "+where+": "+proc.Quote(SocatArgs("/usr/bin/socat", c.Payload, a.PeerCID, a.Port, RedirectPath)))
	case Sockmap:
		out = append(out, fmt.Sprintf("# %s: sockmap: unix datagram socket %s in a SOCKMAP whose sk_skb verdict program redirects to the egress of a vsock socket connected to %d:%d", where, RedirectPath, a.PeerCID, a.Port))
	}
	out = append(out, fmt.Sprintf("# %s: %d sender thread(s) writing %d-byte datagrams to %s for %v", where, c.Threads, c.Payload, RedirectPath, c.Duration))
	out = append(out, "# guest agent op: "+agentOp+" start "+proc.Quote(a.args()))
	return out
}

func (c *Config) Generator() workload.Generator { return &generator{cfg: *c} }

type generator struct {
	cfg    Config
	w      *workload.Window
	srv    *server
	start  time.Time
	length time.Duration
	tid    int
}

// Start starts the host's server (virtio), then the guest's side: its
// loopback server, redirector and sender threads.
func (g *generator) Start(ctx context.Context, w *workload.Window) error {
	g.w = w
	if w.Agent == nil {
		return errors.New("vsock: the workload runs in the guest and needs its agent")
	}
	a := g.cfg.guestArgs(w.Duration)
	g.length = a.Duration
	if g.cfg.Transport == Virtio {
		srv, err := listen(uint32(g.cfg.Port), uint32(g.cfg.CID))
		if err != nil {
			return err
		}
		g.srv = srv
		g.tid = srv.thread()
	}
	if w.Note != nil {
		w.Note("# guest agent op: " + agentOp + " start " + proc.Quote(a.args()))
	}
	if _, err := w.Agent.Do(ctx, agentOp, "start", a.args()...); err != nil {
		if g.srv != nil {
			g.srv.stop(0)
			g.srv = nil
		}
		if _, ok := workload.IsUnsupported(err); ok {
			return err
		}
		return fmt.Errorf("vsock guest side: %w", err)
	}
	// The sender threads started just before the reply (starting the
	// redirector may take seconds under TCG): the duration runs from here.
	g.start = time.Now()
	return nil
}

// Threads: the host's server thread (virtio); none on loopback.
func (g *generator) Threads() ([]int, bool) {
	if g.tid > 0 {
		return []int{g.tid}, false
	}
	return nil, false
}

// Wait waits for the sender's duration, stops the guest's side and
// reads what the servers counted.
func (g *generator) Wait(ctx context.Context) (*workload.Result, error) {
	stop := []string{}
	select {
	case <-time.After(time.Until(g.start.Add(g.length))):
	case <-ctx.Done():
		stop = []string{"now"}
	}
	// Stop the guest's side even after a cancel, with its own deadline.
	// "stop" lets the senders finish their duration on the guest's clock;
	// "stop now" ends them at once.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second+g.length)
	detail, serr := g.w.Agent.Do(sctx, agentOp, "stop", stop...)
	cancel()
	var count serverCount
	var srvErr error
	if g.srv != nil {
		count = g.srv.stop(5 * time.Second)
		srvErr = g.srv.errOf()
	}
	elapsed := time.Since(g.start)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("vsock: %w", ctx.Err())
	}
	if serr != nil {
		return nil, fmt.Errorf("vsock guest side: stop: %w", serr)
	}
	var res guestResult
	if err := json.Unmarshal([]byte(detail), &res); err != nil {
		return nil, fmt.Errorf("vsock guest side: bad stop reply %q: %w", detail, err)
	}
	if res.Server != nil {
		count = *res.Server
	}
	out := &workload.Result{Elapsed: elapsed, BusyFrac: -1, Metrics: map[metric.Key]float64{}}
	g.w.AddJSONArtifact(out, "vsock.json", struct {
		Guest  guestResult `json:"guest"`
		Server serverCount `json:"server"`
	}{res, count})
	out.Warnings = append(out.Warnings, res.Warnings...)
	if srvErr != nil {
		return nil, srvErr
	}
	if count.Reads < 2 || count.Seconds <= 0 {
		return nil, fmt.Errorf("vsock: the server read %d bytes in %d reads: no interval to measure over (the sender wrote %d bytes; redirector log: %s)",
			count.First+count.Bytes, count.Reads, res.SentBytes, lastLines(res.Log, 3))
	}
	addMetrics(out, res, count)
	return out, nil
}

// addMetrics fills the metrics from the guest's result and the server's
// count, and warns when the bytes do not add up.
func addMetrics(out *workload.Result, res guestResult, count serverCount) {
	m := out.Metrics
	m[metric.ThroughputBPS] = count.BPS()
	m["vsock_rx_bytes"] = float64(count.Bytes)
	if res.SendSeconds > 0 {
		m["vsock_sent_bps"] = float64(res.SentBytes) * 8 / res.SendSeconds
		m["redirector_cpu_frac"] = (res.RedirectorCPU + res.KworkerCPU) / res.SendSeconds
		m["guest_cpu_frac"] = res.GuestBusy / res.SendSeconds
	}
	// What the server got should be what the sender wrote, less what was
	// in flight at the end: a large gap is a redirector losing data.
	if got := count.First + count.Bytes; res.SentBytes > 0 && float64(got) < 0.9*float64(res.SentBytes) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the vsock server received %s of the %s bytes the sender wrote (%.0f%%): the redirector lost or truncated data",
			strconv.FormatUint(got, 10), strconv.FormatUint(res.SentBytes, 10), 100*float64(got)/float64(res.SentBytes)))
	}
	if res.CPUSource == "stat" {
		out.Warnings = append(out.Warnings, "redirector CPU from /proc/PID/stat (10 ms ticks): the guest kernel has no schedstat")
	}
}
