package pktgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	pg "github.com/vnetbench/vnetbench/internal/workload/pktgen/driver"
	"github.com/vnetbench/vnetbench/perfparse"
)

// feature is the pktgen module on the host that runs the cells.
const feature = "pktgen"

// ParseKinds: the kernel's sample scripts' output first (it contains
// device files' Params and Result), the device files, the thread files.
func (Workload) ParseKinds() []perfparse.Kind {
	return []perfparse.Kind{perfparse.PktgenScriptKind, perfparse.PktgenKind, perfparse.KpktgendKind}
}

func (Workload) Features() []workload.Feature {
	return []workload.Feature{{Name: feature, Module: "pktgen", Probe: probe, Cheap: true}}
}

// Available reports whether this kernel has pktgen loaded
// (/proc/net/pktgen). The harness cannot load modules.
func Available() bool {
	_, err := os.Stat(pg.DefaultProcDir + "/pgctrl")
	return err == nil
}

func probe() workload.Probe {
	if Available() {
		return workload.Probe{OK: true, Detail: "loaded (/proc/net/pktgen)"}
	}
	rel, _ := hostnet.KernelRelease() // "" when unknown: no module is found
	p := workload.Probe{Detail: "not available (not loaded, no loadable module)",
		Why: fmt.Sprintf("pktgen is not available in kernel %s (no /proc/net/pktgen, and modules cannot be loaded here); use trafgen or iperf3", rel)}
	if mod := findModule(rel, "pktgen"); mod != "" && modulesEnabled() {
		p.Detail, p.Fix = "not loaded; loadable from "+mod, "modprobe pktgen"
	}
	return p
}

func findModule(release, name string) string {
	var found string
	root := filepath.Join("/lib/modules", release)
	filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil || found != "" {
			return nil
		}
		if strings.HasPrefix(filepath.Base(p), name+".ko") {
			found = p
		}
		return nil
	})
	return found
}

func modulesEnabled() bool {
	b, _ := os.ReadFile("/proc/sys/kernel/modules_disabled")
	return strings.TrimSpace(string(b)) != "1"
}

func (p *Config) Needs() workload.Needs {
	n := workload.Needs{Features: []string{feature}}
	if p.Mode == ModeScript {
		sc := scriptConfig(*p, pg.Config{}, "")
		n.Tools = []string{"bash"}
		n.Check = sc.CheckScript
		if d, err := filepath.Abs(p.ScriptDir); err == nil {
			n.Shares = []string{d}
		}
	}
	return n
}

// Commands are the /proc writes (to /proc/QEMU_PID/net/pktgen: pktgen is
// per network namespace and QEMU runs in the run's) or the sample script.
func (p *Config) Commands(e workload.PlanEnv) []string {
	c := driverConfig(*p, e.Dev, e.Dst, e.DstMAC, 0)
	if p.Mode == ModeScript {
		cmd, _, err := pg.ScriptCmd(scriptConfig(*p, c, e.Netns))
		if err != nil {
			return []string{"# pktgen: " + err.Error()}
		}
		return []string{cmd.String()}
	}
	plan, err := pg.NewPlan(c)
	if err != nil {
		return []string{"# pktgen: " + err.Error()}
	}
	var out []string
	if m := queueMap(plan, e.Queues); m != "" {
		out = append(out, m)
	}
	out = append(out, clearNote)
	for _, w := range append(plan.Setup, plan.Start) {
		out = append(out, w.String())
	}
	return out
}

// clearNote is Driver.Start's first step, which writes only what the
// threads list, as a comment line of the plan.
const clearNote = `# every kpktgend_N that lists a device gets "rem_device_all" and is waited on until it lists none (not pgctrl "reset": pktgen acts on it when the thread next runs, which can be after the next start)`

// queueMap says, as a comment line, which tap queue each thread sends on
// when the threads map to queues by CPU (QUEUE_MAP_CPU: queue = CPU %
// queues); "" when they do not or the queue count is unknown.
func queueMap(plan *pg.Plan, queues int) string {
	if queues < 1 || plan.Config.Mode == ModeSimple {
		return ""
	}
	byQueue := map[int][]string{}
	var order []int
	for _, d := range plan.Devices {
		q := d.Thread % queues
		if _, ok := byQueue[q]; !ok {
			order = append(order, q)
		}
		byQueue[q] = append(byQueue[q], "kpktgend_"+strconv.Itoa(d.Thread))
	}
	var parts []string
	for _, q := range order {
		parts = append(parts, fmt.Sprintf("%s -> queue %d", strings.Join(byQueue[q], ","), q))
	}
	noun := "queues"
	if queues == 1 {
		noun = "queue"
	}
	return fmt.Sprintf("# tap with %d %s; QUEUE_MAP_CPU (queue = CPU %% %d): %s", queues, noun, queues, strings.Join(parts, "; "))
}

func (p *Config) Generator() workload.Generator { return &Generator{cfg: *p} }

// driverConfig maps the scenario's pktgen settings to the driver's.
func driverConfig(p Config, dev, dst, dstMAC string, d time.Duration) pg.Config {
	if p.Mode == ModeAuto { // Resolve does this for a scenario's cells
		p.Mode = ModeSimple
		if p.Threads > 1 {
			p.Mode = ModeMultiqueue
		}
	}
	c := pg.Config{Mode: p.Mode, Dev: dev, Threads: p.Threads, FirstThread: p.FirstCPU,
		Count: p.Count, CountSet: p.Count == 0 && p.Duration > 0, Duration: p.Duration, PktSize: p.PktSize,
		Burst: max(p.Burst, 0), BurstSet: p.Burst >= 0, CloneSkb: p.CloneSkb, Delay: p.Delay, Dst: p.Dst, DstMAC: p.DstMAC,
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

// scriptConfig is script mode's configuration: the scenario's pktgen
// settings, the script from its kernel tree, run in netns.
func scriptConfig(p Config, c pg.Config, netns string) pg.ScriptConfig {
	return pg.ScriptConfig{Config: c, KernelTree: p.ScriptDir, Script: p.Script, Netns: netns}
}

// Generator runs internal/workload/pktgen/driver's Driver (the exact /proc writes of the
// kernel's samples/pktgen) against the run's network namespace. pktgen is
// per network namespace, with a twist: thread and device files act on the
// namespace of the /proc file, but pgctrl (start, stop, reset) acts on the
// namespace of the writing task. So the Driver's files are
// /proc/<QEMU pid>/net/pktgen/* (QEMU lives in the run's netns) and every
// write goes through Window.InNetns. The tap's carrier is read through
// QEMU's view of /sys (ip netns exec mounts the namespace's sysfs).
type Generator struct {
	cfg Config

	w      *workload.Window
	drv    *pg.Driver
	sess   *pg.Session
	script *pg.ScriptRun // script mode
	cpu0   map[int]uint64
	tids   []int
	// Set by Prepare.
	procDir  string
	warnings []string // from the thread lookup
	conf     pg.Config
	sc       pg.ScriptConfig
	plan     *pg.Plan
}

// NewGenerator returns a generator for cfg.
func NewGenerator(cfg Config) *Generator { return &Generator{cfg: cfg} }

// Prepare checks pktgen and the device and plans the window without
// writing anything. The kpktgend_N threads exist from module load on, so
// Threads is valid after it, before the traffic starts
// (workload.Preparer): the runner attaches perf to them before the start
// write and stops it after pktgen is reset.
func (g *Generator) Prepare(ctx context.Context, w *workload.Window) error {
	g.w = w
	procDir, sysNet := pg.DefaultProcDir, pg.DefaultSysNet
	if w.NetnsProc != "" {
		procDir = filepath.Join(w.NetnsProc, "net", "pktgen")
		sysNet = filepath.Join(w.NetnsProc, "root", "sys", "class", "net")
	}
	g.procDir = procDir
	g.conf = driverConfig(g.cfg, w.Dev, w.Dst, w.DstMAC, w.Duration)
	g.drv = &pg.Driver{ProcDir: procDir, SysNet: sysNet, InNetns: w.InNetns, Counters: w.DropCounts}
	var plan *pg.Plan
	var err error
	if g.cfg.Mode == ModeScript {
		// The kernel's own script, run in the tap's namespace: its
		// /proc/net/pktgen and pgctrl writes act on that namespace.
		g.sc = scriptConfig(g.cfg, g.conf, w.Netns)
		_, plan, err = pg.ScriptCmd(g.sc)
	} else {
		plan, err = pg.NewPlan(g.conf)
	}
	if err != nil {
		return err
	}
	if err := g.drv.Check(w.Dev); err != nil {
		return err
	}
	g.plan = plan
	g.tids, g.warnings = nil, nil
	for _, d := range plan.Devices {
		// pktgen makes kpktgend_N in every network namespace: only the
		// run's namespace's thread sends (and counts for perf and the
		// busy share).
		name := "kpktgend_" + strconv.Itoa(d.Thread)
		if w.KernelThreads != nil {
			pids, warn := w.KernelThreads(name)
			g.tids = append(g.tids, pids...)
			if warn != "" {
				g.warnings = append(g.warnings, warn)
			}
			continue
		}
		for _, k := range w.Proc.KernelThreads(func(c string) bool { return c == name }) {
			g.tids = append(g.tids, k.PID)
		}
	}
	return nil
}

func (g *Generator) Start(ctx context.Context, w *workload.Window) error {
	if g.plan == nil || g.w != w {
		if err := g.Prepare(ctx, w); err != nil {
			return err
		}
	}
	if w.Note != nil && g.cfg.Mode != ModeScript {
		w.Note(clearNote)
		for _, wr := range append(g.plan.Setup, g.plan.Start) {
			w.Note(wr.Line(g.procDir))
		}
	}
	// The kpktgend_N kernel threads exist from module load on: account
	// their CPU from before the configuration.
	g.cpu0 = w.Proc.CPUTicks(g.tids)
	var err error
	if g.cfg.Mode == ModeScript {
		// Recorded in reproduce.sh by the executor like any command.
		g.script, err = g.drv.StartScript(ctx, w.Exec, g.sc)
		return err
	}
	// Start writes the plan, resets pktgen on error, and runs the
	// blocking start write in its own goroutine.
	g.sess, err = g.drv.Start(ctx, g.conf)
	return err
}

func (g *Generator) Threads() ([]int, bool) { return g.tids, false }

func (g *Generator) Wait(ctx context.Context) (*workload.Result, error) {
	// Wait stops pktgen at the deadline or on ctx (a full tap ring keeps
	// it from reaching its count; the Results stay), reads every thread's
	// Result and resets pktgen.
	var res *pg.Result
	var err error
	if g.script != nil {
		res, err = g.script.Wait(ctx)
	} else {
		res, err = g.sess.Wait(ctx)
	}
	cpu1 := g.w.Proc.CPUTicks(g.tids)
	if res == nil {
		return nil, err
	}
	r := &workload.Result{Elapsed: res.Elapsed, BusyFrac: proc.BusyFrac(g.cpu0, cpu1, res.Elapsed, max(1, len(g.tids)))}
	if g.script != nil {
		if rel, err := g.w.WriteArtifact("pktgen-script.log", []byte(g.script.Output())); err == nil {
			r.Artifacts = append(r.Artifacts, rel)
		}
	}
	for _, tr := range res.Threads {
		name := "pktgen-" + strings.ReplaceAll(tr.Device, "@", "-") + ".txt"
		if tr.Raw == "" {
			continue
		}
		if rel, err := g.w.WriteArtifact(name, []byte(tr.Raw)); err == nil {
			r.Artifacts = append(r.Artifacts, rel)
		}
	}
	addResult(r, res)
	if res.CountersErr != nil {
		r.Warnings = append(r.Warnings, "drop reasons: "+res.CountersErr.Error())
	}
	if w := shortRunWarning(g.cfg, r); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	r.Warnings = append(r.Warnings, g.warnings...)
	return r, err
}

// minRun is the shortest pktgen run whose rates a count-bound cell
// trusts: under KVM pktgen sends Mpps, and a count of 20,000 is over in
// 20-40 ms, within the jitter of thread start-up and the tap's ring
// filling.
const minRun = time.Second

// shortRunWarning says when a count-bound run ended in less than minRun
// of pktgen's own time, with the fix (a duration).
func shortRunWarning(cfg Config, r *workload.Result) string {
	run := r.Metrics[metric.TxRunS]
	if cfg.Duration > 0 || run <= 0 || run >= minRun.Seconds() {
		return ""
	}
	return fmt.Sprintf("pktgen sent its count (%d packets per thread) in %.0f ms of its own run time: too short for stable rates at this speed (KVM); bound the run by time instead (generator.pktgen.duration: 5s, count: 0) or raise count", cfg.Count, run*1000)
}

// addResult puts pktgen's Result into r: per thread its own pps and loss
// (errors over its own run time), and the totals over one clock for
// Transmitted and Lost: pktgen's own run time (its longest thread's; the
// threads start together), for all threads' packets and for the tap's
// drops, read just before the start write and just after it returned.
func addResult(r *workload.Result, res *pg.Result) {
	var pkts, errs uint64
	var pps float64
	var silent []string // threads that sent nothing
	for _, tr := range res.Threads {
		pkts += tr.Packets
		pps += tr.PPS
		errs += tr.Errors
		th := workload.Thread{I: tr.Thread, TxPPS: tr.PPS, Errors: tr.Errors}
		if tr.OK && tr.Usec > 0 {
			// Per-thread loss: the tap has no per-queue drop counter, but
			// a packet the full tap ring refuses is a pktgen error
			// (start_xmit; with queue_xmit: one the qdisc refused).
			lost := float64(tr.Errors) / (float64(tr.Usec) / 1e6)
			th.LostPPS = &lost
		}
		r.Threads = append(r.Threads, th)
		if !tr.OK && tr.Msg != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen thread %d: %s", tr.Thread, tr.Msg))
		}
		if tr.Packets == 0 {
			silent = append(silent, strconv.Itoa(tr.Thread))
		}
	}
	// One warning per run, naming every silent thread: the report counts
	// a warning per run.
	switch len(silent) {
	case 0:
	case 1:
		r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen thread %s sent no packets", silent[0]))
	default:
		r.Warnings = append(r.Warnings, fmt.Sprintf("pktgen threads %s sent no packets", strings.Join(silent, ", ")))
	}
	r.Packets = pkts
	r.Metrics = map[metric.Key]float64{metric.PktgenErrors: float64(errs)}
	if run := res.RunTime(); run > 0 {
		r.Elapsed = run // the traffic time as pktgen saw it
		r.Metrics[metric.TxRunS] = run.Seconds()
		r.Metrics[metric.TxPPS] = float64(pkts) / run.Seconds()
		if res.TxDroppedOK {
			r.Metrics[metric.LostPPS] = float64(res.TxDropped) / run.Seconds()
		}
		addDrops(r, res, run)
		return
	}
	// No Result with a run time: pktgen's pps (0) or the packets over the
	// wall time; Lost stays the runner's (over the window).
	if pps == 0 && pkts > 0 && res.Elapsed > 0 {
		pps = float64(pkts) / res.Elapsed.Seconds()
	}
	r.Metrics[metric.TxPPS] = pps
}

// addDrops puts the kernel's drops read around the run (Driver.Counters)
// into r: Result.Drops and, per key, drop_pps.KEY over pktgen's own run
// time, as lost_pps.
func addDrops(r *workload.Result, res *pg.Result, run time.Duration) {
	if res.Counters == nil {
		return
	}
	r.Drops, r.DropsOK = res.Counters, true
	for k, n := range res.Counters {
		r.Metrics[metric.Drop(k)] = float64(n) / run.Seconds()
	}
}
