package runner

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/latprobe"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// latencyRun is a cell's latency probe (scenario section latency:): the
// guest's reflector and the host's probe, from the idle phase before the
// load to the end of the window.
type latencyRun struct {
	probe   *latprobe.Probe
	agent   Agent
	stopped bool
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
		g.agent.Do(context.WithoutCancel(ctx), vmimages.OpReflect, "stop")
		return nil, err
	}
	r.note(fmt.Sprintf("# latency probe: UDP %s -> %s (the guest agent's reflector), every %v, sizes %v, timeout %v, idle %v first; probes.csv per sample",
		nic.hostIP, cfg.Dst, l.Interval, l.Sizes, l.Timeout, l.Idle))
	p.Start()
	lr := &latencyRun{probe: p, agent: g.agent}
	select {
	case <-time.After(l.Idle):
	case <-ctx.Done():
		lr.abort()
		return nil, ctx.Err()
	}
	return lr, nil
}

// phase labels the probes sent from now on.
func (lr *latencyRun) phase(p string) {
	if lr != nil {
		lr.probe.SetPhase(p)
	}
}

// stop ends the probe (waiting for answers up to its timeout) and the
// reflector, and returns the records.
func (lr *latencyRun) stop(ctx context.Context) ([]latency.Record, []string) {
	if lr == nil || lr.stopped {
		return nil, nil
	}
	lr.stopped = true
	recs, warns := lr.probe.Stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := lr.agent.Do(sctx, vmimages.OpReflect, "stop"); err != nil {
		warns = append(warns, "latency probe: stop the guest's reflector: "+err.Error())
	}
	return recs, warns
}

// abort stops a probe on an error path (records dropped).
func (lr *latencyRun) abort() {
	lr.stop(context.Background())
}

// addLatency writes the probes' artifact and adds their metrics,
// intervals and warnings to s.
func addLatency(s *results.Sample, l *scenarios.Latency, recs []latency.Record, warns []string, abs, rel string) error {
	f, err := os.Create(filepath.Join(abs, latency.ArtifactName))
	if err != nil {
		return fmt.Errorf("latency probe artifact: %w", err)
	}
	werr := latency.WriteCSV(f, recs)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("latency probe artifact: %w", werr)
	}
	s.Artifacts = append(s.Artifacts, filepath.Join(rel, latency.ArtifactName))
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
	if sum.Sent > 0 && sum.Answered == 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("latency probe: none of %d probes under load was answered", sum.Sent))
	}
	return nil
}
