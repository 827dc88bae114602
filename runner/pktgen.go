package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/report"
	"github.com/vnetbench/vnetbench/runner/pktgen"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// pktgenGenerator runs runner/pktgen's plan (the exact /proc writes of the
// kernel's samples/pktgen) against the run's network namespace. pktgen is
// per network namespace, with a twist: thread and device files act on the
// namespace of the /proc file, but pgctrl (start, stop, reset) acts on the
// namespace of the writing task. So the files are
// /proc/<QEMU pid>/net/pktgen/* (QEMU lives in the run's netns) and pgctrl
// is written from a thread switched into the netns (Window.InNetns). The
// tap's carrier is read through QEMU's view of /sys (ip netns exec mounts
// the namespace's sysfs).
type pktgenGenerator struct {
	cfg      scenarios.Pktgen
	w        *Window
	procDir  string
	plan     *pktgen.Plan
	start    time.Time
	done     chan struct{}
	startErr error
	stopped  bool
	cpu0     map[int]uint64
	tids     []int
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

// write writes one pktgen command like `echo cmd > file`; pgctrl from
// inside the netns.
func (g *pktgenGenerator) write(file, cmd string) error {
	path := filepath.Join(g.procDir, file)
	do := func() error { return writeProcFile(path, cmd+"\n") }
	var err error
	if file == "pgctrl" && g.w.InNetns != nil {
		err = g.w.InNetns(do)
	} else {
		err = do()
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.Errno(524)) && (strings.HasPrefix(cmd, "burst ") || strings.HasPrefix(cmd, "clone_skb ")) {
		return &CapabilityError{Msg: fmt.Sprintf("pktgen %s: %q is not supported by this device (errno 524: tap devices lack IFF_TX_SKB_SHARING); use burst: 0 and clone_skb: 0", file, cmd)}
	}
	if b, rerr := os.ReadFile(path); rerr == nil {
		if i := strings.Index(string(b), "Result: "); i >= 0 {
			return fmt.Errorf("pktgen: write %q to %s: %w (%s)", cmd, path, err, strings.TrimSpace(strings.SplitN(string(b)[i:], "\n", 2)[0]))
		}
	}
	return fmt.Errorf("pktgen: write %q to %s: %w", cmd, path, err)
}

func writeProcFile(path, data string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(data))
	cerr := f.Close()
	if werr != nil {
		var pe *fs.PathError
		if errors.As(werr, &pe) {
			return pe.Err
		}
		return werr
	}
	return cerr
}

func (g *pktgenGenerator) Start(ctx context.Context, w *Window) error {
	if g.cfg.Mode == "script" {
		return &CapabilityError{Msg: "pktgen script mode runs the kernel's own scripts, which are not wired into run; use mode simple, multiqueue or burst_single_flow"}
	}
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
	plan, err := pktgen.NewPlan(pktgenConfig(g.cfg, w.Dev, w.Dst, w.DstMAC, w.Duration))
	if err != nil {
		return err
	}
	g.plan = plan
	if err := (&pktgen.Driver{ProcDir: g.procDir, SysNet: sysNet}).Check(w.Dev); err != nil {
		return err
	}
	if w.Note != nil {
		for _, wr := range append(plan.Setup, plan.Start) {
			w.Note(strings.Replace(wr.String(), pktgen.DefaultProcDir, g.procDir, 1))
		}
	}
	for _, wr := range plan.Setup {
		if err := ctx.Err(); err != nil {
			return errors.Join(err, g.write("pgctrl", "reset"))
		}
		if err := g.write(wr.File, wr.Cmd); err != nil {
			return errors.Join(err, g.write("pgctrl", "reset"))
		}
	}
	for _, d := range plan.Devices {
		name := "kpktgend_" + strconv.Itoa(d.Thread)
		g.tids = append(g.tids, qemu.KernelThreads(func(c string) bool { return c == name })...)
	}
	g.cpu0 = procCPU(g.tids)
	g.done = make(chan struct{})
	g.start = time.Now()
	go func() {
		// Blocks until pktgen ends (count reached, or stop).
		g.startErr = g.write(plan.Start.File, plan.Start.Cmd)
		close(g.done)
	}()
	return nil
}

func (g *pktgenGenerator) Threads() ([]int, bool) { return g.tids, false }

func (g *pktgenGenerator) Wait(ctx context.Context) (*GenResult, error) {
	var expired <-chan time.Time
	if d := g.plan.Config.Duration; d > 0 {
		t := time.NewTimer(time.Until(g.start.Add(d)))
		defer t.Stop()
		expired = t.C
	}
	var ctxErr error
	select {
	case <-g.done:
	case <-expired:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	elapsed := time.Since(g.start)
	cpu1 := procCPU(g.tids)
	var errs []error
	select {
	case <-g.done:
	default:
		// A full tap ring keeps pktgen from reaching its count: stop it;
		// the Results stay.
		g.stopped = true
		if err := g.write("pgctrl", "stop"); err != nil {
			errs = append(errs, err)
		}
		select {
		case <-g.done:
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("pktgen: start did not return 10s after pgctrl stop"))
		}
	}
	if g.startErr != nil && !g.stopped {
		errs = append(errs, g.startErr)
	}
	r := &GenResult{Elapsed: elapsed, BusyFrac: busyFrac(g.cpu0, cpu1, elapsed, max(1, len(g.tids)))}
	for _, d := range g.plan.Devices {
		b, err := os.ReadFile(filepath.Join(g.procDir, d.File))
		if err != nil {
			errs = append(errs, fmt.Errorf("pktgen: read result: %w", err))
			continue
		}
		tr, err := pktgen.ParseResult(string(b))
		if err != nil {
			errs = append(errs, fmt.Errorf("pktgen %s: %w", d.File, err))
		}
		name := "pktgen-" + strings.ReplaceAll(d.File, "@", "-") + ".txt"
		if os.WriteFile(filepath.Join(g.w.Artifacts, name), b, 0o644) == nil {
			r.Artifacts = append(r.Artifacts, filepath.Join(g.w.RelDir, name))
		}
		r.Packets += tr.Packets
		r.PPS += tr.PPS
		r.Errors += tr.Errors
		r.Threads = append(r.Threads, report.ThreadSample{I: d.Thread, TxPPS: tr.PPS, Errors: tr.Errors})
		if !tr.OK && tr.Msg != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen thread %d: %s", d.Thread, tr.Msg))
		}
		if tr.Packets == 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen thread %d sent no packets", d.Thread))
		}
	}
	if err := g.write("pgctrl", "reset"); err != nil {
		errs = append(errs, err)
	}
	if ctxErr != nil {
		errs = append([]error{ctxErr}, errs...)
	}
	if len(errs) > 0 {
		return r, errors.Join(errs...)
	}
	return r, nil
}
