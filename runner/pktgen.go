package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/report"
	"github.com/vnetbench/vnetbench/runner/pktgen"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// pktgenGenerator adapts runner/pktgen's /proc driver to Generator. pktgen
// is per network namespace: the driver writes /proc/PID/net/pktgen of a
// process inside the run's namespace (QEMU) and reads the tap's carrier
// through that process's view of /sys (ip netns exec mounts the
// namespace's sysfs).
type pktgenGenerator struct {
	cfg   scenarios.Pktgen
	w     *Window
	drv   *pktgen.Driver
	sess  *pktgen.Session
	start time.Time
	cpu0  map[int]uint64
	tids  []int
}

func newPktgenGen(c *scenarios.Cell) Generator {
	return &pktgenGenerator{cfg: *c.Generator.Pktgen}
}

func (g *pktgenGenerator) Kind() string { return "pktgen" }

// pktgenConfig maps the scenario's pktgen settings to the driver's.
func pktgenConfig(p scenarios.Pktgen, dev, dst, dstMAC string, d time.Duration) pktgen.Config {
	c := pktgen.Config{Mode: p.Mode, Dev: dev, Threads: p.Threads, FirstThread: p.FirstCPU,
		Count: p.Count, CountSet: p.Count == 0 && p.Duration > 0, Duration: p.Duration, PktSize: p.PktSize,
		Burst: p.Burst, CloneSkb: p.CloneSkb, Delay: p.Delay, Dst: p.Dst, DstMAC: p.DstMAC,
		UDPSrcMin: p.UDPSrcMin, UDPSrcMax: p.UDPSrcMax, UDPDstMin: p.UDPDstMin, UDPDstMax: p.UDPDstMax,
		XmitMode: p.XmitMode}
	if c.Dst == "" {
		c.Dst = dst
	}
	if c.DstMAC == "" {
		c.DstMAC = dstMAC
	}
	if d > 0 {
		c.Duration, c.Count, c.CountSet = d, 0, true
	}
	return c
}

func (g *pktgenGenerator) Start(ctx context.Context, w *Window) error {
	if g.cfg.Mode == "script" {
		return &CapabilityError{Msg: "pktgen script mode is not wired into run yet; use mode simple, multiqueue or burst_single_flow"}
	}
	g.w = w
	g.drv = &pktgen.Driver{}
	if w.NetnsPid > 0 {
		g.drv.ProcDir = "/proc/" + strconv.Itoa(w.NetnsPid) + "/net/pktgen"
		g.drv.SysNet = "/proc/" + strconv.Itoa(w.NetnsPid) + "/root/sys/class/net"
	}
	s, err := g.drv.Start(ctx, pktgenConfig(g.cfg, w.Dev, w.Dst, w.DstMAC, w.Duration))
	if err != nil {
		return err
	}
	g.sess = s
	g.start = time.Now()
	if w.Note != nil {
		pl := s.Plan()
		for _, wr := range append(pl.Setup, pl.Start) {
			line := wr.String()
			if g.drv.ProcDir != "" {
				line = strings.Replace(line, pktgen.DefaultProcDir, g.drv.ProcDir, 1)
			}
			w.Note(line)
		}
	}
	for _, d := range s.Plan().Devices {
		g.tids = append(g.tids, qemu.KernelThreads(func(c string) bool { return c == "kpktgend_"+strconv.Itoa(d.Thread) })...)
	}
	g.cpu0 = procCPU(g.tids)
	return nil
}

func (g *pktgenGenerator) Threads() ([]int, bool) { return g.tids, false }

func (g *pktgenGenerator) Wait(ctx context.Context) (*GenResult, error) {
	res, err := g.sess.Wait(ctx)
	elapsed := time.Since(g.start)
	cpu1 := procCPU(g.tids)
	if res == nil {
		return nil, err
	}
	r := &GenResult{Packets: res.Packets(), PPS: res.PPS(), Errors: res.Errors(), Elapsed: elapsed,
		BusyFrac: busyFrac(g.cpu0, cpu1, elapsed, max(1, len(g.tids)))}
	for i, t := range res.Threads {
		r.Threads = append(r.Threads, report.ThreadSample{I: t.Thread, TxPPS: t.PPS, Errors: t.Errors})
		name := "pktgen-" + strings.ReplaceAll(t.Device, "@", "-") + ".txt"
		if os.WriteFile(filepath.Join(g.w.Artifacts, name), []byte(t.Raw), 0o644) == nil {
			r.Artifacts = append(r.Artifacts, filepath.Join(g.w.RelDir, name))
		}
		if !t.OK && t.Msg != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen thread %d: %s", i, t.Msg))
		}
	}
	if err != nil {
		return r, err
	}
	return r, nil
}
