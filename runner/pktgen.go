package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/runner/pktgen"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// pktgenGenerator runs runner/pktgen's Driver (the exact /proc writes of
// the kernel's samples/pktgen) against the run's network namespace. pktgen
// is per network namespace, with a twist: thread and device files act on
// the namespace of the /proc file, but pgctrl (start, stop, reset) acts on
// the namespace of the writing task. So the Driver's files are
// /proc/<QEMU pid>/net/pktgen/* (QEMU lives in the run's netns) and every
// write goes through Window.InNetns (Driver.InNetns). The tap's carrier is
// read through QEMU's view of /sys (ip netns exec mounts the namespace's
// sysfs).
type pktgenGenerator struct {
	cfg     scenarios.Pktgen
	w       *Window
	drv     *pktgen.Driver
	procDir string
	sess    *pktgen.Session
	script  *pktgen.ScriptRun // script mode
	cpu0    map[int]uint64
	tids    []int
	// testProc and testSys replace the /proc and /sys paths in tests.
	testProc, testSys string
}

func newPktgenGen(c *scenarios.Cell) Generator {
	return &pktgenGenerator{cfg: *c.Generator.Pktgen}
}

func (g *pktgenGenerator) Kind() string { return "pktgen" }

// pktgenConfig maps the scenario's pktgen settings to the plan's.
func pktgenConfig(p scenarios.Pktgen, dev, dst, dstMAC string, d time.Duration) pktgen.Config {
	c := pktgen.Config{Mode: p.Mode, Dev: dev, Threads: p.Threads, FirstThread: p.FirstCPU,
		Count: p.Count, CountSet: p.Count == 0 && p.Duration > 0, Duration: p.Duration, PktSize: p.PktSize,
		Burst: p.Burst, CloneSkb: p.CloneSkb, Delay: p.Delay, Dst: p.Dst, DstMAC: p.DstMAC,
		UDPSrcMin: p.UDPSrcMin, UDPSrcMax: p.UDPSrcMax, UDPDstMin: p.UDPDstMin, UDPDstMax: p.UDPDstMax,
		XmitMode: p.XmitMode}
	if c.Burst < 0 {
		c.Burst = 0 // the scenario's "default": not written
	}
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
	g.w = w
	g.procDir = pktgen.DefaultProcDir
	sysNet := pktgen.DefaultSysNet
	if w.NetnsPid > 0 {
		g.procDir = "/proc/" + strconv.Itoa(w.NetnsPid) + "/net/pktgen"
		sysNet = "/proc/" + strconv.Itoa(w.NetnsPid) + "/root/sys/class/net"
	}
	if g.testProc != "" {
		g.procDir, sysNet = g.testProc, g.testSys
	}
	c := pktgenConfig(g.cfg, w.Dev, w.Dst, w.DstMAC, w.Duration)
	g.drv = &pktgen.Driver{ProcDir: g.procDir, SysNet: sysNet, InNetns: w.InNetns}
	var plan *pktgen.Plan
	var sc pktgen.ScriptConfig
	var err error
	if g.cfg.Mode == pktgen.ModeScript {
		// The kernel's own script, run in the tap's namespace: its
		// /proc/net/pktgen and pgctrl writes act on that namespace.
		sc = scriptConfig(g.cfg, c, w.Netns)
		_, plan, err = pktgen.ScriptCmd(sc)
	} else {
		plan, err = pktgen.NewPlan(c)
	}
	if err != nil {
		return err
	}
	if err := g.drv.Check(w.Dev); err != nil {
		return err
	}
	if w.Note != nil && g.cfg.Mode != pktgen.ModeScript {
		for _, wr := range append(plan.Setup, plan.Start) {
			w.Note(strings.Replace(wr.String(), pktgen.DefaultProcDir, g.procDir, 1))
		}
	}
	// The kpktgend_N kernel threads exist from module load on: account
	// their CPU from before the configuration.
	for _, d := range plan.Devices {
		name := "kpktgend_" + strconv.Itoa(d.Thread)
		g.tids = append(g.tids, qemu.KernelThreads(func(c string) bool { return c == name })...)
	}
	g.cpu0 = procCPU(g.tids)
	if g.cfg.Mode == pktgen.ModeScript {
		// Recorded in reproduce.sh by the executor like any command.
		g.script, err = g.drv.StartScript(ctx, w.Exec, sc)
		return err
	}
	// Start writes the plan, resets pktgen on error, and runs the
	// blocking start write in its own goroutine.
	g.sess, err = g.drv.Start(ctx, c)
	return err
}

// scriptConfig is script mode's configuration: the scenario's pktgen
// settings, the script from its kernel tree, run in netns.
func scriptConfig(p scenarios.Pktgen, c pktgen.Config, netns string) pktgen.ScriptConfig {
	return pktgen.ScriptConfig{Config: c, KernelTree: p.ScriptDir, Script: p.Script, Netns: netns}
}

func (g *pktgenGenerator) Threads() ([]int, bool) { return g.tids, false }

func (g *pktgenGenerator) Wait(ctx context.Context) (*GenResult, error) {
	// Wait stops pktgen at the deadline or on ctx (a full tap ring keeps
	// it from reaching its count; the Results stay), reads every thread's
	// Result and resets pktgen.
	var res *pktgen.Result
	var err error
	if g.script != nil {
		res, err = g.script.Wait(ctx)
	} else {
		res, err = g.sess.Wait(ctx)
	}
	cpu1 := procCPU(g.tids)
	if res == nil {
		return nil, err
	}
	r := &GenResult{Elapsed: res.Elapsed, BusyFrac: busyFrac(g.cpu0, cpu1, res.Elapsed, max(1, len(g.tids)))}
	if g.script != nil {
		if os.WriteFile(filepath.Join(g.w.Artifacts, "pktgen-script.log"), []byte(g.script.Output()), 0o644) == nil {
			r.Artifacts = append(r.Artifacts, filepath.Join(g.w.RelDir, "pktgen-script.log"))
		}
	}
	for _, tr := range res.Threads {
		name := "pktgen-" + strings.ReplaceAll(tr.Device, "@", "-") + ".txt"
		if tr.Raw != "" && os.WriteFile(filepath.Join(g.w.Artifacts, name), []byte(tr.Raw), 0o644) == nil {
			r.Artifacts = append(r.Artifacts, filepath.Join(g.w.RelDir, name))
		}
		r.Packets += tr.Packets
		r.PPS += tr.PPS
		r.Errors += tr.Errors
		ts := results.ThreadSample{I: tr.Thread, TxPPS: tr.PPS, Errors: tr.Errors}
		if tr.OK && tr.Usec > 0 {
			// Per-thread loss: the tap has no per-queue drop counter, but
			// a packet the full tap ring refuses is a pktgen error
			// (start_xmit; with queue_xmit: one the qdisc refused).
			lost := float64(tr.Errors) / (float64(tr.Usec) / 1e6)
			ts.LostPPS = &lost
		}
		r.Threads = append(r.Threads, ts)
		if !tr.OK && tr.Msg != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen thread %d: %s", tr.Thread, tr.Msg))
		}
		if tr.Packets == 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen thread %d sent no packets", tr.Thread))
		}
	}
	return r, err
}
