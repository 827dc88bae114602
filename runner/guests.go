package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/runner/undo"
	"github.com/vnetbench/vnetbench/scenarios"
)

// guests is the run's guest phase: the guest that runs, and how a cell
// gets one (reused while its VM configuration stays, else booted anew).
type guests struct {
	r   *runState
	cur *guest
	// contents: what the run's workloads need in the guest (the iperf3
	// server); every guest image carries it all, so a VM is reused
	// between cells of different workloads.
	contents GuestContents
	// paired are the guests (pairedKey) whose tap and tap+vhost cells
	// share one boot: a guest with a vhost=off and a vhost=on NIC.
	paired map[string]bool
	boots  int
	// kvmBroken is why a guest asked for KVM under auto did not start with
	// it: later auto guests go straight to TCG ("" = KVM works as probed).
	kvmBroken string
	// notes are what the guests record in env.json.
	notes envNotes
	// saveOff: this run saves no more guest states (a saved guest could
	// not be resumed; the log and env.json say so).
	saveOff bool
	// unused are the saved states a guest did not start from
	// (notRestored): this run boots its guests instead.
	unused map[string]bool
}

// ready returns the guest for cell c: the running one when c can use
// it, else a new one (a guest c cannot use is stopped first); bootTime
// is the new one's boot (0 = reused).
func (gs *guests) ready(ctx context.Context, c *scenarios.Cell) (g *guest, bootTime time.Duration, err error) {
	fail := func(phase string, err error) error {
		return &CellError{Cell: c.Name, Rep: c.Rep, Phase: phase, Err: err}
	}
	if gs.cur != nil && gs.cur.key != gs.key(c) {
		gs.r.logf("cell %s needs another VM configuration: rebooting the guest", c.Name)
		if err := gs.stop(); err != nil {
			return nil, 0, fail("stop previous guest", err)
		}
	}
	if gs.cur != nil {
		return gs.cur, 0, nil
	}
	bootStart := time.Now()
	g, err = gs.boot(ctx, c)
	if errors.Is(err, qemu.ErrNotResumed) && !gs.saveOff {
		// A saved state only spares later labs a boot: this run boots
		// its guest again and saves no more.
		gs.saveOff = true
		gs.r.logf("%v: booting the guest again; this run saves no guest state", err)
		g, err = gs.boot(ctx, c)
	}
	if err != nil {
		return nil, 0, fail("boot", err)
	}
	gs.cur = g
	if g.restored != "" {
		gs.r.logf("guest started from saved state %s in %.1fs (%s: %s; its boot reached ready at %.1fs of the guest kernel's clock)",
			g.restored, g.bootTime.Seconds(), g.accel, g.restoreSteps, g.guestReady.Seconds())
	} else if g.guestReady > 0 {
		gs.r.logf("guest up in %.1fs (%s; guest kernel clock: /init at %.1fs, ready at %.1fs)", g.bootTime.Seconds(), g.accel,
			g.guestInit.Seconds(), g.guestReady.Seconds())
	} else {
		gs.r.logf("guest up in %.1fs (%s)", g.bootTime.Seconds(), g.accel)
	}
	return g, time.Since(bootStart), nil
}

// accel is the accelerator c's guest boots with: CellAccel, or TCG for
// an auto cell once KVM failed to start a guest in this run.
func (gs *guests) accel(c *scenarios.Cell) qemu.Accel {
	a, _, err := CellAccel(c, gs.r.kvm, gs.r.opts.Accel)
	if err != nil {
		return qemu.TCG // refused in Run already
	}
	if a == qemu.KVM && gs.kvmBroken != "" && c.Guest.Accel != qemu.AccelKVM && gs.r.opts.Accel == "" {
		return qemu.TCG
	}
	return a
}

// accelOf is the accelerator cell c's last attempt ran under: its guest's
// when it is still up, else (its boot failed) the one it booted with.
func (gs *guests) accelOf(c *scenarios.Cell) qemu.Accel {
	if gs.cur != nil {
		return gs.cur.accel
	}
	return gs.accel(c)
}

// stop stops the running guest, if one runs.
func (gs *guests) stop() error {
	g := gs.cur
	gs.cur = nil
	if g == nil || g.undo == nil {
		return nil
	}
	return g.undo.Run(30 * time.Second)
}

// key is the guest a cell runs on in this run: its GuestKey, or its
// pairedKey when its cells share a two-NIC guest.
func (gs *guests) key(c *scenarios.Cell) string {
	if k := pairedKey(c); gs.paired[k] {
		return "paired|" + k
	}
	return c.GuestKey()
}

// boot creates the tap in the run's namespace, starts QEMU on it (from a
// saved state when there is one) and waits for the agent. On failure
// everything it made is undone.
func (gs *guests) boot(ctx context.Context, c *scenarios.Cell) (g *guest, err error) {
	u := undo.New()
	defer u.RunOnError(&err, teardownTimeout(c))
	g = &guest{key: gs.key(c), accel: gs.accel(c)}
	img, err := gs.r.opts.Image(ctx, c.Guest, gs.contents)
	if err != nil {
		return nil, fmt.Errorf("guest image: %w", err)
	}
	g.nics = []*guestNIC{{backend: c.Backend, tap: tapName(c), hostIP: HostIP, guestIP: GuestIP, mac: GuestMAC}}
	if gs.paired[pairedKey(c)] {
		g.nics = pairNICs()
	}
	qnics, err := gs.createTaps(c, g.nics, u)
	if err != nil {
		return nil, err
	}
	cfg := gs.config(c, g, img, qnics)
	gs.boots++
	s := &guestStart{ctx: ctx, began: time.Now(), timeout: c.Timeouts.Boot}
	if s.timeout <= 0 {
		s.timeout = 3 * time.Minute
	}
	key, saved := gs.stateFor(g, cfg)
	if saved != "" {
		if gs.restored(s, g, &cfg, saved, u) {
			gs.notes.kernel(img.KernelRelease)
			g.undo = u.Release()
			return g, nil
		}
		// The boot has a whole boot timeout of its own, whatever the
		// restore took.
		s.began = time.Now()
	}
	cancel := s.live(g, u)
	defer cancel()
	vm, err := gs.start(ctx, s.bctx, c, g, img, &cfg)
	if err != nil {
		return nil, err
	}
	gs.notes.cmdline(qemu.Cmdline(cfg))
	if err := gs.adopt(s, g, vm, u); err != nil {
		return nil, err
	}
	gs.notes.kernel(img.KernelRelease)
	if err := gs.saveState(s.bctx, g, key); err != nil {
		return nil, err
	}
	g.sink = "stack"
	g.undo = u.Release()
	return g, nil
}

// guestStart is the start of one guest: from a saved state, then, when
// that fails, booted; each try within a boot timeout from its began.
type guestStart struct {
	ctx     context.Context // the run's: QEMU's lifetime
	began   time.Time
	timeout time.Duration // timeouts.boot, from began
	// agentWait bounds the try's agent wait, from its start, within the
	// timeout (0 = the timeout alone): restoreWait for a restore.
	agentWait time.Duration
	// bctx bounds the current try (live): ctx, ended by the guest's life
	// and at the deadline; kill ends that life.
	bctx context.Context
	kill context.CancelCauseFunc
}

// live gives g a new life for a try at starting its VM: u ends it, and so
// does, with the fault as its cause, a kernel fault its console watch
// (adopt) finds. It returns what releases the try's bctx.
func (s *guestStart) live(g *guest, u *undo.Stack) (cancel func()) {
	life, kill := context.WithCancelCause(context.Background())
	g.life, s.kill = life, kill
	u.Push("stop console watch", func(context.Context) error { kill(nil); return nil })
	bctx, cancelG := withGuest(s.ctx, g)
	bctx, cancelT := context.WithDeadline(bctx, s.began.Add(s.timeout))
	s.bctx = bctx
	return func() { cancelT(); cancelG() }
}

// guestFaultGrace is how long a guest's console watch reads on after a
// fault line before it ends the guest's life (qemu.FaultGrace); a
// variable for tests.
var guestFaultGrace = qemu.FaultGrace

// adopt makes vm, just started for g (booted, or loaded from a saved
// state) within the try s.live began, g's: u stops its QEMU; its console
// is watched for kernel faults from now on, so that a fault ends the
// agent's wait at once (agentBootError then reports it), as does the end
// of s.agentWait (a *silentAgentError then); the agent, once
// ready, is closed by u, and the boot's time noted.
func (gs *guests) adopt(s *guestStart, g *guest, vm *qemu.VM, u *undo.Stack) error {
	g.vm = vm
	u.Push("stop qemu", func(tctx context.Context) error { return vm.Quit(tctx, qemu.StopGrace) })
	kill := s.kill // this try's: a later try has a life of its own
	go vm.WatchConsole(g.life, "guest", consolePoll, guestFaultGrace, func(fe *qemu.FaultError) { kill(fe) })
	wctx, cancel := s.bctx, context.CancelFunc(func() {})
	if s.agentWait > 0 {
		wctx, cancel = context.WithTimeoutCause(s.bctx, s.agentWait, &silentAgentError{s.agentWait})
	}
	defer cancel()
	agent, err := gs.waitAgent(wctx, vm)
	if err != nil {
		if se := (*silentAgentError)(nil); errors.As(context.Cause(wctx), &se) && s.bctx.Err() == nil {
			err = se
		}
		return agentBootError(s.ctx, s.bctx, vm, err, s.timeout)
	}
	g.agent = agent
	u.Push("close agent", func(context.Context) error { return agent.Close() })
	g.noteBoot(agent, time.Since(s.began))
	return nil
}

// createTaps creates a multiqueue tap in the run's namespace for each of
// the guest's NICs (deleted by u) and returns QEMU's NICs on them.
func (gs *guests) createTaps(c *scenarios.Cell, nics []*guestNIC, u *undo.Stack) ([]qemu.NIC, error) {
	var qnics []qemu.NIC
	for i, n := range nics {
		tap := hostnet.Tap{Name: n.tap, Queues: c.TapQueues(), Addr: n.hostIP + "/" + strconv.Itoa(PrefixLen)}
		gs.r.repro.cmd(proc.Cmd{Argv: tapArgv(tap), Netns: gs.r.ns.Name})
		gs.r.repro.cmd(proc.Cmd{Argv: []string{"ip", "addr", "add", tap.Addr, "dev", tap.Name}, Netns: gs.r.ns.Name})
		gs.r.repro.cmd(proc.Cmd{Argv: []string{"ip", "link", "set", tap.Name, "up"}, Netns: gs.r.ns.Name})
		if err := gs.r.ns.CreateTap(tap); err != nil {
			return nil, err
		}
		tapDev := n.tap
		u.Push("delete tap "+tapDev, func(context.Context) error { return gs.r.ns.DeleteLink(tapDev) })
		if st, err := gs.r.ns.LinkMAC(n.tap); err == nil {
			n.tapMAC = st
		}
		qnics = append(qnics, n.device(i == 0, c.TapQueues()))
	}
	return qnics, nil
}

// config is the QEMU configuration of guest g of cell c: image img,
// NICs qnics, the console log of the run's next boot.
func (gs *guests) config(c *scenarios.Cell, g *guest, img *GuestImage, qnics []qemu.NIC) qemu.Config {
	cfg := qemu.Config{Name: "vnb-" + gs.r.id, Accel: g.accel, CPUs: c.Guest.VCPUs, MemoryMiB: c.Guest.MemoryMiB,
		Firmware: GuestFirmware(g.accel), Kernel: img.Kernel, Initrd: img.Initrd, Append: GuestCmdline(c, g.accel, img.Cmdline),
		QMPSocket:   filepath.Join(gs.r.sockDir, "qmp.sock"),
		AgentSocket: filepath.Join(gs.r.sockDir, "agent.sock"),
		ConsoleLog:  filepath.Join(gs.r.dir, results.ConsoleLog(gs.boots)),
		NICs:        qnics}
	workloadDevices(&cfg, c)
	if cfg.MemoryMiB == 0 {
		cfg.MemoryMiB = 512
	}
	return cfg
}

// start starts QEMU with cfg (under ctx; bctx bounds the start).
// When KVM was chosen automatically and this QEMU did not run it, it
// starts the guest again under TCG, for this and later guests, and notes
// that in cfg and g.
func (gs *guests) start(ctx, bctx context.Context, c *scenarios.Cell, g *guest, img *GuestImage, cfg *qemu.Config) (*qemu.VM, error) {
	// QEMU must outlive bctx: start it with the run's context.
	vm, err := gs.launch(ctx, bctx, *cfg)
	if err != nil && g.accel == qemu.KVM && c.Guest.Accel != qemu.AccelKVM && gs.r.opts.Accel == "" && ctx.Err() == nil && bctx.Err() == nil {
		// guest.accel auto: the probe ran a vCPU, yet this QEMU did not
		// run KVM. Fall back to TCG once, for this and later guests.
		gs.kvmBroken = err.Error()
		g.accel = qemu.TCG
		g.warnings = append(g.warnings, fmt.Sprintf("KVM did not start this guest (%v): it runs under TCG instead", err))
		gs.r.logf("warning: %s", g.warnings[len(g.warnings)-1])
		cfg.Accel, cfg.Append, cfg.Firmware = qemu.TCG, GuestCmdline(c, qemu.TCG, img.Cmdline), GuestFirmware(qemu.TCG)
		cfg.ConsoleLog = filepath.Join(gs.r.dir, results.ConsoleLog(gs.boots))
		gs.boots++
		vm, err = gs.launch(ctx, bctx, *cfg)
	}
	return vm, err
}

// agentBootError is the error of a guest whose agent did not answer
// (err) within bootTimeout: the run's cancellation, the kernel fault on
// its console, or a boot error with the console's tail.
func agentBootError(ctx, bctx context.Context, vm *qemu.VM, err error, bootTimeout time.Duration) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if fe := faultOf(bctx); fe != nil {
		return fe
	}
	if fe := crashedAtBoot(vm); fe != nil {
		return fe
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("timeout after %v (raise timeouts.boot, or check the guest kernel and image)", bootTimeout)
	}
	return vm.BootError("wait for agent", err)
}

// noteBoot records the guest's boot time (and scales the agent's
// timeouts to it) and the guest's own clock of its boot.
func (g *guest) noteBoot(agent Agent, bootTime time.Duration) {
	g.bootTime = bootTime
	if va, ok := agent.(*vmAgent); ok {
		va.scaleToBoot(g.bootTime)
	}
	if gc, ok := agent.(interface {
		GuestClock() (time.Duration, time.Duration)
	}); ok {
		g.guestInit, g.guestReady = gc.GuestClock()
	}
}

// workloadDevices adds what c's workload asks of its guest VM to cfg: its
// QEMU arguments and its vsock device.
func workloadDevices(cfg *qemu.Config, c *scenarios.Cell) {
	if c.Generator.Config == nil {
		return
	}
	n := c.Generator.Config.Needs()
	cfg.Extra = n.QEMUArgs
	cfg.VsockCID = n.VsockCID
}

// clearConsole removes the console log vnetbench's QEMU wrote at this
// name in the run directory (vnetbench's own: results.Create made it) on
// an earlier boot or attempt: QEMU opens the log itself, following
// links, and must create a new file. A link there is removed, never
// followed; one on the way is refused (safefs.RemoveOwn).
func (r *runState) clearConsole(path string) error {
	rel, err := filepath.Rel(r.dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return nil // not in the run directory (tests)
	}
	d, err := safefs.Open(r.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return safefs.RemoveOwn(d, rel)
}

// launch starts QEMU in the run's namespace and confirms over QMP that
// it runs the accelerator asked for (query-kvm); bctx bounds the start,
// ctx is QEMU's lifetime.
func (gs *guests) launch(ctx, bctx context.Context, cfg qemu.Config) (*qemu.VM, error) {
	if err := gs.r.clearConsole(cfg.ConsoleLog); err != nil {
		return nil, err
	}
	return qemu.Start(ctx, bctx, gs.r.exec, cfg, qemu.StartOptions{Netns: gs.r.ns.Name, CheckAccel: true})
}

// waitAgent dials the agent and waits for ready, failing fast when QEMU
// exits (a kernel panic with panic=-1 and -no-reboot ends QEMU).
func (gs *guests) waitAgent(ctx context.Context, vm *qemu.VM) (Agent, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-vm.Done():
			cancel(fmt.Errorf("qemu exited during boot: %v", vm.Process().Wait()))
		case <-ctx.Done():
		}
	}()
	a, err := gs.r.opts.DialAgent(ctx, vm)
	if err != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
			return nil, c
		}
		return nil, err
	}
	if err := a.WaitReady(ctx); err != nil {
		a.Close()
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
			return nil, c
		}
		// The agent's socket closing usually means QEMU is exiting
		// (a guest panic with panic=-1 and -no-reboot): say so.
		select {
		case <-vm.Done():
			return nil, fmt.Errorf("qemu exited during boot (%v): %w", vm.Process().Wait(), err)
		case <-time.After(2 * time.Second):
		}
		return nil, err
	}
	return a, nil
}
