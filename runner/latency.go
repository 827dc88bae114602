package runner

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/latprobe"
	"github.com/vnetbench/vnetbench/runner/undo"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// latencyRun is a cell's latency probe (scenario section latency:): the
// guest's reflector and the host's probe, from the idle phase before the
// load to the end of the window.
type latencyRun struct {
	probe *latprobe.Probe
	// agent is the guest's, as its workloads see it: a dead guest is not
	// asked (liveAgent).
	agent   workload.Agent
	stopped bool
	// The qdisc and tap readings, every latency.Tick from a thread in
	// the run's namespace.
	series     []latency.Point
	seriesErr  error
	phaseNow   atomic.Value // string
	stopSeries chan struct{}
	seriesDone chan struct{}
}

// startLatency starts the guest's reflector and the probe and runs the
// idle phase (the baseline) before it returns.
func (r *runState) startLatency(ctx context.Context, c *scenarios.Cell, g *guest, nic *guestNIC) (*latencyRun, error) {
	l := c.Latency
	dst, err := netip.ParseAddr(nic.guestIP)
	if err != nil {
		return nil, fmt.Errorf("latency probe: guest address %q: %w", nic.guestIP, err)
	}
	src, _ := netip.ParseAddr(nic.hostIP)
	port := strconv.Itoa(l.Port)
	if _, err := g.agent.Do(ctx, vmimages.OpReflect, "start", port); err != nil {
		return nil, fmt.Errorf("latency probe: start the guest's reflector on port %s: %w", port, err)
	}
	cfg := latprobe.Config{Dst: netip.AddrPortFrom(dst, uint16(l.Port)), Src: src, Interval: l.Interval, Sizes: l.Sizes, Timeout: l.Timeout}
	p, err := latprobe.Open(cfg, r.ns.Do)
	if err != nil {
		stopReflector(ctx, g.workloadAgent())
		return nil, err
	}
	r.repro.note(fmt.Sprintf("# latency probe: UDP %s -> %s (the guest agent's reflector), every %v, sizes %v, timeout %v, idle %v first; probes.csv per sample",
		nic.hostIP, cfg.Dst, l.Interval, l.Sizes, l.Timeout, l.Idle))
	p.Start()
	lr := &latencyRun{probe: p, agent: g.workloadAgent(), stopSeries: make(chan struct{}), seriesDone: make(chan struct{})}
	lr.phaseNow.Store(latency.PhaseIdle)
	go lr.sample(r.ns.Do, nic.tap)
	select {
	case <-time.After(l.Idle):
	case <-ctx.Done():
		lr.abort()
		return nil, ctx.Err()
	}
	return lr, nil
}

// phase labels the probes sent and the readings taken from now on.
func (lr *latencyRun) phase(p string) {
	if lr != nil {
		lr.probe.SetPhase(p)
		lr.phaseNow.Store(p)
	}
}

// sample reads the tap's root qdisc and counters every latency.Tick
// until stopped, on one thread inside the namespace (inNetns runs the
// whole loop there). The first error ends it (seriesErr).
func (lr *latencyRun) sample(inNetns func(func() error) error, tap string) {
	defer close(lr.seriesDone)
	lr.seriesErr = inNetns(func() error {
		t := time.NewTicker(latency.Tick)
		defer t.Stop()
		for {
			q, err := hostnet.ReadRootQdisc(tap)
			if err != nil {
				return err
			}
			l, err := hostnet.ReadLinkStats(tap)
			if err != nil {
				return err
			}
			lr.series = append(lr.series, latency.Point{T: time.Now().UnixNano(), Phase: lr.phaseNow.Load().(string),
				Qlen: q.Qlen, Backlog: q.Backlog, QDrops: q.Drops, QRequeues: q.Requeues,
				TapTxPackets: l.TxPackets, TapTxBytes: l.TxBytes, TapTxDropped: l.TxDropped})
			select {
			case <-lr.stopSeries:
				return nil
			case <-t.C:
			}
		}
	})
}

// stopSending ends the probe's sending when the load ends; stop
// collects the answers later.
func (lr *latencyRun) stopSending() {
	if lr != nil && !lr.stopped {
		lr.probe.StopSending()
	}
}

// stop ends the probe (waiting for answers up to its timeout) and the
// reflector, and returns the records.
func (lr *latencyRun) stop(ctx context.Context) ([]latency.Record, []string) {
	if lr == nil || lr.stopped {
		return nil, nil
	}
	lr.stopped = true
	close(lr.stopSeries)
	recs, warns := lr.probe.Stop()
	<-lr.seriesDone
	if lr.seriesErr != nil {
		warns = append(warns, "latency probe: qdisc readings: "+lr.seriesErr.Error())
	}
	if err := stopReflector(ctx, lr.agent); err != nil {
		warns = append(warns, "latency probe: stop the guest's reflector: "+err.Error())
	}
	return recs, warns
}

// stopReflector stops the guest's reflector, also when ctx has ended,
// within 10 s of its own: the agent answers at once, and a guest that
// does not is stuck.
func stopReflector(ctx context.Context, a workload.Agent) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := a.Do(sctx, vmimages.OpReflect, "stop")
	return err
}

// writeArtifact writes the file name of out with write.
func writeArtifact(out *safefs.Dir, name string, write func(io.Writer) error) error {
	if err := out.WriteWith(name, 0o644, write); err != nil {
		return fmt.Errorf("latency probe artifact: %w", err)
	}
	return nil
}

// setTxQLen sets the tap's txqueuelen for the cell and pushes its
// restore.
func (r *runState) setTxQLen(u *undo.Stack, tap string, qlen int) error {
	r.repro.argv([]string{"ip", "netns", "exec", r.ns.Name, "ip", "link", "set", "dev", tap, "txqueuelen", strconv.Itoa(qlen)})
	old, err := r.ns.SetTxQLen(tap, qlen)
	if err != nil {
		return err
	}
	u.Push("restore txqueuelen", func(context.Context) error { _, err := r.ns.SetTxQLen(tap, old); return err })
	return nil
}

// abort stops a probe on an error path (records dropped).
func (lr *latencyRun) abort() {
	lr.stop(context.Background())
}

// addLatency writes the probes' artifact and adds their metrics,
// intervals and warnings to s.
func addLatency(s *results.Sample, l *scenarios.Latency, lr *latencyRun, recs []latency.Record, warns []string, out *safefs.Dir, rel string) error {
	if err := writeArtifact(out, latency.ArtifactName, func(w io.Writer) error { return latency.WriteCSV(w, recs) }); err != nil {
		return err
	}
	s.Artifacts = append(s.Artifacts, filepath.Join(rel, latency.ArtifactName))
	if err := writeArtifact(out, latency.SeriesName, func(w io.Writer) error { return latency.WriteSeries(w, lr.series) }); err != nil {
		return err
	}
	s.Artifacts = append(s.Artifacts, filepath.Join(rel, latency.SeriesName))
	for k, v := range latency.SeriesMetrics(lr.series) {
		s.Metrics[k] = v
	}
	sum := latency.Summarize(recs)
	for k, v := range sum.Metrics {
		s.Metrics[k] = v
	}
	for k, v := range sum.Labels() {
		s.Labels[k] = v
	}
	s.Labels["probes"] = strconv.Itoa(sum.Sent)
	s.Labels["probe_interval"] = l.Interval.String()
	s.Warnings = append(s.Warnings, warns...)
	probeShare(s, sum.Sent)
	if sum.Sent > 0 && sum.Answered == 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("latency probe: none of %d probes under load was answered", sum.Sent))
	}
	return nil
}

// MaxProbeShare is the probe's largest share of the load's packets
// before a sample warns that the probe itself is part of the load.
const MaxProbeShare = 0.001

// probeShare adds probe_share_frac: the probe's requests per second over
// the load's packet rate (tx_pps, the packets the load offered, else
// rx_pps, what the guest received), and a warning past MaxProbeShare.
func probeShare(s *results.Sample, sent int) {
	load, ok := s.Metrics[metric.TxPPS]
	if !ok || load <= 0 {
		load = s.Metrics[metric.RxPPS]
	}
	if sent == 0 || load <= 0 || s.WindowS <= 0 {
		return
	}
	share := float64(sent) / s.WindowS / load
	s.Metrics[metric.ProbeShareFrac] = share
	if share > MaxProbeShare {
		s.Warnings = append(s.Warnings, fmt.Sprintf("latency probe: its %.0f requests/s are %.2f%% of the load's %.0f pps (over %.1f%%): the probe is part of the load; a longer latency.interval or a faster load lowers it",
			float64(sent)/s.WindowS, share*100, load, MaxProbeShare*100))
	}
}
