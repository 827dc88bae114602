package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/runner/undo"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// A sample is a pipeline of phases, each a method of cellRun: get a
// guest (readyGuest), prepare the host (setup: txqueuelen, qdisc, the
// threads and their pinning, the guest's sink), start the latency probe,
// warm up, measure the window (measure: counters, generator, perf),
// collect the sample, and tear the host knobs down. A phase fails one way,
// with a phaseError naming it, and a configuration the kernel refuses is
// one way too, an unsupportedError: runSample turns the first into a
// CellError and the second into an n/a sample.

// phaseError is a phase's failure; runSample names the phase in its
// CellError.
type phaseError struct {
	phase string
	err   error
}

func (e *phaseError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

func failed(phase string, err error) error { return &phaseError{phase: phase, err: err} }

// unsupportedError is a cell the kernel or device cannot run (the
// workload said so): its sample reads n/a with the reason.
type unsupportedError struct{ why string }

func (e *unsupportedError) Error() string { return "unsupported: " + e.why }

// orUnsupported is failed(phase, err), or the unsupportedError a workload
// returned.
func orUnsupported(phase string, err error) error {
	if why, ok := workload.IsUnsupported(err); ok {
		return &unsupportedError{why: why}
	}
	return failed(phase, err)
}

// cellRun is one sample on its way through the phases.
type cellRun struct {
	r     *runState
	c     *scenarios.Cell
	g     *guest
	nic   *guestNIC
	u     *undo.Stack
	again *again // nil: the cell's first attempt

	cellStart, t0, t1 time.Time
	laps              *laps
	bootTime, warmup  time.Duration
	trafficTimeout    time.Duration

	vcpus, vhost []int
	vhostWorkers qemu.VhostWorkers
	vhostWarn    string
	win          *Window
	abs, rel     string
	out          *safefs.Dir // abs, every write of the sample's artifacts
	lat          *latencyRun
	gen          workload.Generator
	targets      map[string]perfTarget
	perfs        []*perfRun
	prepared     bool

	before, after Counters
	res           *workload.Result
	ru0, ru1      unix.Rusage
	perfOut       []*perfRun
	perfErr       error
}

// runSample runs one repetition of one cell: host knobs, warmup, window,
// teardown of the knobs, then appends the sample; a second attempt's
// sample says why (again).
func (r *runState) runSample(ctx context.Context, c *scenarios.Cell, a *again) (*results.Sample, error) {
	cr := &cellRun{r: r, c: c, again: a, cellStart: time.Now(), u: undo.New()}
	cr.laps = newLaps(cr.cellStart)
	if err := cr.readyGuest(ctx); err != nil {
		return nil, err
	}
	cr.laps.lap("guest")
	// From here on the cell also ends when the guest kernel reports a
	// fault on its console; the failure then names it and the console.
	runCtx := ctx
	ctx, endCell := withGuest(ctx, cr.g)
	defer endCell()
	knobsDone := false
	defer func() {
		if !knobsDone {
			cr.u.Run(teardownTimeout(c))
		}
	}()
	defer func() { stopPerfs(cr.perfs) }()
	defer func() { cr.lat.abort() }()
	defer func() {
		if cr.out != nil {
			cr.out.Close()
		}
	}()
	s, err := cr.pipeline(ctx, runCtx)
	var us *unsupportedError
	switch {
	case errors.As(err, &us):
		return r.unsupportedSample(c, us.why)
	case err != nil:
		return nil, cr.fail(ctx, err)
	}
	// Undo the host knobs now so their cost is part of the overhead.
	knobsDone = true
	if err := cr.u.Run(teardownTimeout(c)); err != nil {
		s.Warnings = append(s.Warnings, "teardown: "+err.Error())
	}
	cr.laps.lap("teardown")
	s.Labels["phases_s"] = cr.laps.String()
	if err := cr.finish(s); err != nil {
		return nil, err
	}
	return s, nil
}

// teardownTimeout bounds the teardown of cell c's host knobs and guest.
func teardownTimeout(c *scenarios.Cell) time.Duration {
	if c.Timeouts.Teardown > 0 {
		return c.Timeouts.Teardown
	}
	return 30 * time.Second
}

// pipeline runs the phases after the guest is up.
func (cr *cellRun) pipeline(ctx, runCtx context.Context) (*results.Sample, error) {
	setupCtx, cancel := context.WithTimeout(ctx, orDefault(cr.c.Timeouts.Setup, time.Minute))
	defer cancel()
	if err := cr.setup(setupCtx); err != nil {
		return nil, err
	}
	cr.laps.lap("setup")
	if waited, err := cr.r.turn.wait(ctx); err != nil {
		return nil, failed("turn", err)
	} else if waited {
		cr.laps.lap("turn")
	}
	if err := cr.startLatency(setupCtx); err != nil {
		return nil, err
	}
	if err := cr.warmUp(ctx); err != nil {
		return nil, err
	}
	cr.laps.lap("warmup")
	if err := cr.measure(ctx); err != nil {
		return nil, err
	}
	if err := cr.readAfter(runCtx); err != nil {
		return nil, err
	}
	cr.laps.lap("counters after")
	s := cr.collect(ctx, runCtx)
	cr.laps.lap("collect")
	return s, nil
}

// fail is err as the cell's CellError: a guest kernel fault or a guest
// that went away is named instead of what it caused.
func (cr *cellRun) fail(ctx context.Context, err error) error {
	phase := "setup"
	var pe *phaseError
	if errors.As(err, &pe) {
		phase, err = pe.phase, pe.err
	}
	if fe := faultOf(ctx); fe != nil {
		err = fe
	} else if errors.Is(err, vmimages.ErrClosed) {
		err = guestGone(ctx, cr.g, err)
	}
	return &CellError{Cell: cr.c.Name, Rep: cr.c.Rep, Phase: phase, Err: err}
}

// readyGuest gets the cell's guest (guests.ready) and its NIC.
func (cr *cellRun) readyGuest(ctx context.Context) error {
	g, bootTime, err := cr.r.guests.ready(ctx, cr.c)
	if err != nil {
		return err
	}
	cr.g, cr.bootTime, cr.nic = g, bootTime, g.nic(cr.c.Backend)
	return nil
}

// setup sets the host knobs (txqueuelen, qdisc), finds and pins the vCPU
// and vhost threads, sets the guest's sink and makes the window.
func (cr *cellRun) setup(ctx context.Context) error {
	r, c, g, nic := cr.r, cr.c, cr.g, cr.nic
	if c.TxQueueLen > 0 {
		if err := r.setTxQLen(cr.u, nic.tap, c.TxQueueLen); err != nil {
			return failed("setup", err)
		}
	}
	if c.Qdisc != "" {
		r.repro.argv([]string{"ip", "netns", "exec", r.ns.Name, "tc", "qdisc", "replace", "dev", nic.tap, "root", c.Qdisc})
		if err := r.ns.SetQdisc(nic.tap, c.Qdisc); err != nil {
			return failed("setup", err)
		}
		cr.u.Push("reset qdisc", func(context.Context) error { return r.ns.ResetQdisc(nic.tap) })
	}
	if err := cr.pinThreads(ctx); err != nil {
		return failed("setup", err)
	}
	sink := c.Guest.Sink
	if sink == "" {
		sink = "stack"
	}
	if sink != g.sink {
		if err := g.agent.Sink(ctx, sink); err != nil {
			return failed("setup", fmt.Errorf("guest sink %s: %w", sink, err))
		}
		g.sink = sink
	}
	var err error
	if cr.out, cr.rel, err = r.w.ArtifactDir(c.Name, kernelLabel(c), c.Rep); err != nil {
		return failed("setup", err)
	}
	cr.abs = cr.out.Path()
	cr.win = &Window{Exec: r.exec, Netns: r.ns.Name, NetnsProc: "/proc/" + strconv.Itoa(g.vm.Pid()), Dev: nic.tap, DevMAC: nic.tapMAC,
		Src: nic.hostIP, Dst: nic.guestIP, DstMAC: nic.mac, Artifacts: cr.abs, Out: cr.out, RelDir: cr.rel, Agent: g.workloadAgent(), Note: r.repro.note, InNetns: r.ns.Do,
		Proc: r.opts.Proc, KernelThreads: r.kthreads.pids, DropCounts: r.drops.countsFunc(c, r.ns, nic.tap)}
	cr.trafficTimeout = orDefault(c.Timeouts.Traffic, 10*time.Minute)
	return nil
}

// pinThreads finds the guest's vCPU threads and, with vhost-net, its
// vhost workers, and pins both as the cell says.
func (cr *cellRun) pinThreads(ctx context.Context) error {
	r, c, g := cr.r, cr.c, cr.g
	var err error
	if cr.vcpus, err = g.vm.VCPUThreads(ctx); err != nil {
		return err
	}
	if c.Backend == "tap+vhost" {
		vsock := c.Generator.Config != nil && c.Generator.Config.Needs().VsockCID != 0
		cr.vhostWorkers = qemu.FindVhostWorkers(r.opts.Proc, g.vm.Pid())
		cr.vhost, cr.vhostWarn, err = vhostNet(cr.vhostWorkers, g.vm.Pid(), c.TapQueues(), vsock, len(c.Pin.Vhost) > 0)
		if err != nil {
			return err
		}
	}
	if err := Pin(cr.u, "vcpu", cr.vcpus, c.Pin.VCPU, true); err != nil {
		return err
	}
	if err := Pin(cr.u, "vhost", cr.vhost, c.Pin.Vhost, false); err != nil {
		return err
	}
	for _, l := range append(pinNotes("vCPU", cr.vcpus, c.Pin.VCPU, true), pinNotes("vhost-net worker", cr.vhost, c.Pin.Vhost, false)...) {
		r.repro.note(l)
	}
	return nil
}

// startLatency starts the latency probe where the cell has one: its idle
// phase (the baseline) runs now, before warmup and window; its probes
// carry the phase they were sent in.
func (cr *cellRun) startLatency(ctx context.Context) error {
	if cr.c.Latency == nil {
		return nil
	}
	var err error
	if cr.lat, err = cr.r.startLatency(ctx, cr.c, cr.g, cr.nic); err != nil {
		return failed("latency probe", err)
	}
	if cr.c.Warmup > 0 {
		cr.lat.phase(latency.PhaseWarmup)
	}
	return nil
}

// warmUp runs the same generator for the cell's warmup, discarded.
func (cr *cellRun) warmUp(ctx context.Context) error {
	c := cr.c
	if c.Warmup <= 0 {
		return nil
	}
	ws := time.Now()
	wout, err := cr.out.Sub(results.WarmupDir)
	if err != nil {
		return failed("warmup", err)
	}
	defer wout.Close()
	ww := *cr.win
	ww.Duration, ww.Artifacts, ww.Out, ww.RelDir = c.Warmup, wout.Path(), wout, filepath.Join(cr.rel, results.WarmupDir)
	if err := cr.r.runGenerator(ctx, c, &ww, cr.trafficTimeout); err != nil {
		return orUnsupported("warmup", err)
	}
	cr.warmup = time.Since(ws)
	return nil
}

// measure runs the window: the counters before, the generator (prepared
// first where it can be, so perf attaches before its first packet), perf
// on its targets, and perf's output once the generator is done.
func (cr *cellRun) measure(ctx context.Context) error {
	var err error
	if cr.gen, err = cr.r.opts.NewGenerator(cr.c); err != nil {
		return failed("setup", err)
	}
	// The counters' own deadline: setup's may be spent by the idle
	// probe phase and the warmup that came after it.
	sctx, scancel := context.WithTimeout(ctx, orDefault(cr.c.Timeouts.Setup, time.Minute))
	cr.before, err = cr.r.snapshot(sctx, cr.g, cr.nic)
	scancel()
	if err != nil {
		return failed("counters", err)
	}
	cr.before.Drops = readDrops(cr.win)
	cr.laps.lap("counters before")
	tctx, tcancel := context.WithTimeout(ctx, cr.trafficTimeout)
	defer tcancel()
	cr.targets = map[string]perfTarget{
		"vcpu": {tids: cr.vcpus}, "qemu": {tids: []int{cr.g.vm.Pid()}, whole: true}, "vhost": {tids: cr.vhost},
	}
	if err := cr.prepareGenerator(tctx); err != nil {
		return err
	}
	cr.laps.lap("prepare")
	if err := cr.startGenerator(tctx); err != nil {
		return err
	}
	res, gerr := cr.gen.Wait(tctx)
	cr.t1 = time.Now()
	cr.laps.lap("traffic")
	cr.lat.stopSending()
	unix.Getrusage(unix.RUSAGE_SELF, &cr.ru1)
	cr.perfOut, cr.perfErr = finishPerfs(cr.perfs)
	cr.perfs = nil
	cr.laps.lap("perf stop")
	if gerr != nil {
		if errors.Is(gerr, context.DeadlineExceeded) && ctx.Err() == nil {
			// A tool that hangs (iperf3's client and server can both
			// wait forever at the end of a test, esnet/iperf#1527)
			// measured nothing: the cell runs once more on a fresh
			// guest (againAfter), a second hang fails it.
			gerr = fault.VoidBecause(HungCause, fmt.Errorf("%w: traffic did not finish within timeouts.traffic %v", gerr, cr.trafficTimeout))
		}
		return orUnsupported("traffic", gerr)
	}
	cr.res = res
	return nil
}

// genTargets adds the generator's threads to the perf targets and notes
// their pinning.
func (cr *cellRun) genTargets() []int {
	gtids, whole := cr.gen.Threads()
	gt := perfTarget{tids: gtids, whole: whole}
	cr.targets[scenarios.TargetGenerator] = gt
	cr.targets[workload.Target(cr.c.Generator.Workload())] = gt
	for _, l := range pinNotes("generator thread", gtids, cr.c.Pin.Generator, false) {
		cr.r.repro.note(l)
	}
	return gtids
}

// prepareGenerator starts perf on the threads that exist before the
// traffic starts, so they cover the whole window. A generator whose
// threads exist before it sends (pktgen's kpktgend: workload.Preparer) is
// prepared first and perf attaches to those now too, so it never attaches
// to or detaches from a thread that is sending.
func (cr *cellRun) prepareGenerator(ctx context.Context) error {
	c := cr.c
	// release frees what Prepare took when the window fails before Start.
	release := func() {
		if rl, ok := cr.gen.(workload.Releaser); ok && cr.prepared {
			rl.Release()
		}
	}
	if p, ok := cr.gen.(workload.Preparer); ok {
		if err := p.Prepare(ctx, cr.win); err != nil {
			return orUnsupported("traffic", fmt.Errorf("prepare %s: %w", c.Generator.Kind, err))
		}
		cr.prepared = true
		if err := Pin(cr.u, "generator", cr.genTargets(), c.Pin.Generator, false); err != nil {
			release()
			return failed("setup", err)
		}
	}
	var err error
	cr.perfs, err = cr.r.startPerf(ctx, c, cr.targets, cr.abs, false)
	if err != nil {
		release()
		return failed("perf", err)
	}
	if cr.prepared {
		more, err := cr.r.startPerf(ctx, c, cr.targets, cr.abs, true)
		cr.perfs = append(cr.perfs, more...)
		if err != nil {
			release()
			return failed("perf", err)
		}
	}
	return nil
}

// startGenerator opens the window: the probe's load phase, the harness's
// CPU clock, the generator's start, and (for a generator not prepared)
// its pinning and perf.
func (cr *cellRun) startGenerator(ctx context.Context) error {
	c := cr.c
	cr.lat.phase(latency.PhaseLoad)
	unix.Getrusage(unix.RUSAGE_SELF, &cr.ru0)
	cr.t0 = time.Now()
	if err := cr.gen.Start(ctx, cr.win); err != nil {
		return orUnsupported("traffic", fmt.Errorf("start %s: %w", c.Generator.Kind, err))
	}
	if cr.prepared {
		return nil
	}
	if err := Pin(cr.u, "generator", cr.genTargets(), c.Pin.Generator, false); err != nil {
		cr.gen.Wait(ctx)
		return failed("setup", err)
	}
	more, err := cr.r.startPerf(ctx, c, cr.targets, cr.abs, true)
	cr.perfs = append(cr.perfs, more...)
	if err != nil {
		cr.gen.Wait(ctx)
		return failed("perf", err)
	}
	return nil
}

// readAfter reads the window's counters after it, even after a SIGINT
// during the traffic (the sample is kept), but never without a deadline:
// a guest that stopped answering fails the cell instead of hanging the
// run. (A guest kernel fault still ends it: fail reports the fault.)
func (cr *cellRun) readAfter(runCtx context.Context) error {
	gctx, gcancel := withGuest(context.WithoutCancel(runCtx), cr.g)
	defer gcancel()
	actx, acancel := context.WithTimeout(gctx, orDefault(cr.c.Timeouts.Setup, time.Minute))
	defer acancel()
	var err error
	cr.after, err = cr.r.snapshot(actx, cr.g, cr.nic)
	cr.after.Drops = readDrops(cr.win)
	if err != nil {
		if cr.g.vm != nil {
			if tail := strings.TrimSpace(cr.g.vm.ConsoleTail(8)); tail != "" {
				err = fmt.Errorf("%w (last guest console lines: %s)", err, strings.ReplaceAll(tail, "\n", " | "))
			}
		}
		return failed("counters", err)
	}
	return nil
}

// collect makes the sample: the window's counters, the generator's
// result, the latency probe's records, the harness's CPU, perf, warnings
// and labels.
func (cr *cellRun) collect(ctx, runCtx context.Context) *results.Sample {
	c, g := cr.c, cr.g
	window := cr.t1.Sub(cr.t0)
	// The probe's last answers (up to its timeout) come after the
	// window's counters were read.
	latRecs, latWarns := cr.lat.stop(ctx)
	s := &results.Sample{Run: cr.r.id, Cell: c.Name, Rep: c.Rep, Kernel: kernelLabel(c), Axes: c.Axes,
		Start: cr.t0.UTC(), WindowS: window.Seconds(), Metrics: map[metric.Key]float64{}, Labels: map[string]string{},
		Emulated: g.accel != qemu.KVM}
	windowMetrics(s, c, cr.res, cr.before, cr.after, window)
	cr.r.drops.addDrops(s, c, cr.res, cr.before, cr.after)
	if c.Latency != nil {
		if err := addLatency(s, c.Latency, cr.lat, latRecs, latWarns, cr.out, cr.rel); err != nil {
			s.Warnings = append(s.Warnings, err.Error())
		}
		if path := workload.PathOf(c.Generator.Config); path != "" {
			s.Labels["load_path"] = path
		}
	}
	harnessCPU := max(cpuTime(cr.ru1)-cpuTime(cr.ru0)-cr.res.InHarnessCPU, 0)
	s.Metrics[metric.HarnessCPUFrac] = harnessCPU.Seconds() / window.Seconds()
	cr.addWarnings(s)
	// perf report is analysis, not setup or teardown: its time is
	// recorded apart from cell_overhead_s.
	reportStart := time.Now()
	cr.r.addPerf(runCtx, s, c, cr.perfOut)
	CPUPerPacket(s, cr.res)
	analysis := time.Since(reportStart)
	if c.Perf.Record != nil {
		s.Labels["perf_report_s"] = strconv.FormatFloat(analysis.Seconds(), 'f', 2, 64)
	}
	cr.addLabels(s)
	// cell_overhead_s is finished once the host knobs are undone.
	s.Metrics[metric.CellOverheadS] = -(window + cr.warmup + cr.bootTime + analysis).Seconds()
	return s
}

// addWarnings adds the run's caveats to s: TCG, the guest's, the retry
// note (and a void first attempt's cause, a faulted first guest's kept
// console), the vhost worker's and perf's.
func (cr *cellRun) addWarnings(s *results.Sample) {
	if cr.g.accel != qemu.KVM {
		s.Warnings = append(s.Warnings, "TCG in use: numbers measure the emulator, not the kernel datapath")
	}
	s.Warnings = append(s.Warnings, cr.g.warnings...)
	if cr.again != nil {
		s.Warnings = append(s.Warnings, cr.again.note)
		s.VoidRerun = cr.again.voidCause
		s.FaultRerun = cr.again.faultWhy
		if cr.again.kept != "" {
			s.Artifacts = append(s.Artifacts, cr.again.kept)
		}
	}
	if cr.vhostWarn != "" {
		s.Warnings = append(s.Warnings, cr.vhostWarn)
	}
	if cr.perfErr != nil {
		s.Warnings = append(s.Warnings, "perf: "+cr.perfErr.Error())
	}
}

// addLabels labels s with what the cell ran on: vhost workers, perf's
// QEMU target, generator, accelerator, qdisc, txqueuelen, the context and
// the guest's boot times.
func (cr *cellRun) addLabels(s *results.Sample) {
	c, g := cr.c, cr.g
	if c.Backend == "tap+vhost" {
		if k := cr.vhostWorkers.Kind(); k != "" {
			s.Labels["vhost_workers"] = k
		}
	}
	if c.Perf.Stat != nil || c.Perf.Record != nil {
		s.Labels["qemu_target"] = qemuTargetLabel(c.Backend, cr.vhostWorkers)
	}
	s.Labels["generator"] = c.Generator.Kind
	s.Labels["accel"] = string(g.accel)
	if c.Qdisc != "" {
		s.Labels["qdisc"] = c.Qdisc
	}
	if c.TxQueueLen > 0 {
		s.Labels["txqueuelen"] = strconv.Itoa(c.TxQueueLen)
	}
	addContextLabels(s, c, cr.r.guests.notes.release)
	if g.restored != "" {
		s.Labels[LabelRestoreS] = strconv.FormatFloat(g.bootTime.Seconds(), 'f', 2, 64)
		s.Labels[LabelGuestState] = g.restored
	} else {
		s.Labels["boot_s"] = strconv.FormatFloat(g.bootTime.Seconds(), 'f', 2, 64)
	}
	if g.guestReady > 0 {
		s.Labels["guest_ready_uptime_s"] = strconv.FormatFloat(g.guestReady.Seconds(), 'f', 2, 64)
	}
}

// finish completes cell_overhead_s (setup and teardown outside the
// window) and appends s to the run.
func (cr *cellRun) finish(s *results.Sample) error {
	s.Metrics[metric.CellOverheadS] += time.Since(cr.cellStart).Seconds()
	return cr.r.w.Append(*s)
}
