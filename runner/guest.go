package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/runner/undo"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// GuestImage is a bootable guest: kernel, initramfs and extra kernel
// command line (the runner adds the console and vnb.* parameters).
type GuestImage struct {
	Kernel, Initrd string
	Cmdline        string // extra parameters ("" = none)
	KernelRelease  string
}

// ImageFunc returns the guest image for a cell's guest (built or taken
// from the cache), carrying what the run's workloads need in the guest.
type ImageFunc func(ctx context.Context, g scenarios.Guest, want GuestContents) (*GuestImage, error)

// GuestContents is what workloads need in the guest image besides the
// agent and the NIC's modules.
type GuestContents struct {
	Programs []string // host programs, copied with their shared libraries
	Modules  []string // kernel modules loaded at boot
}

// AgentDialer connects to a guest agent's socket.
type AgentDialer func(ctx context.Context, socketPath string) (Agent, error)

// DialVMImagesAgent is the AgentDialer for vmimages' agent.
func DialVMImagesAgent(ctx context.Context, socketPath string) (Agent, error) {
	c, err := vmimages.Dial(ctx, socketPath)
	if err != nil {
		return nil, err
	}
	return &vmAgent{c: c}, nil
}

type vmAgent struct {
	c     *vmimages.Client
	ready *vmimages.Event
	// attempt bounds one stats request of this guest: its least, or
	// more for a guest that booted slowly (scaleToBoot).
	attempt time.Duration
	// least is the least time per stats request (0 = statsAttempt).
	least time.Duration
}

// leastAttempt is the least time one stats request of a gets.
func (a *vmAgent) leastAttempt() time.Duration {
	if a.least > 0 {
		return a.least
	}
	return statsAttempt
}

// ErrGuestUnresponsive is a guest whose agent stopped answering: the cell
// that asked fails, and the run goes on with a fresh guest.
var ErrGuestUnresponsive = errors.New("the guest stopped answering")

// scaleToBoot makes a guest that booted slowly (a nested TCG guest on a
// loaded host: minutes instead of seconds) slow to be called unresponsive:
// one stats request may take an eighth of its boot time.
func (a *vmAgent) scaleToBoot(boot time.Duration) {
	a.attempt = max(a.leastAttempt(), boot/8)
}

func (a *vmAgent) WaitReady(ctx context.Context) (err error) {
	a.ready, err = a.c.WaitReady(ctx)
	return err
}

// GuestClock is the guest kernel's uptime when /init started and when the
// agent was ready (0 = unknown): the part of a boot the kernel saw.
func (a *vmAgent) GuestClock() (initAt, readyAt time.Duration) {
	if a.ready == nil {
		return 0, 0
	}
	return time.Duration(a.ready.InitMS) * time.Millisecond, time.Duration(a.ready.BootMS) * time.Millisecond
}

func (a *vmAgent) Do(ctx context.Context, op, action string, args ...string) (string, error) {
	ev, err := a.c.Do(ctx, vmimages.Request{Op: op, Action: action, Args: args})
	var ae *vmimages.AgentError
	if errors.As(err, &ae) && ae.Unsupported {
		return "", workload.Unsupported("%s", ae.Msg)
	}
	if err != nil {
		return "", err
	}
	return ev.Msg, nil
}
func (a *vmAgent) Sink(ctx context.Context, kind string) error { return a.c.Sink(ctx, kind) }
func (a *vmAgent) Poweroff(ctx context.Context) error          { return a.c.Poweroff(ctx) }
func (a *vmAgent) Close() error                                { return a.c.Close() }

// statsAttempt bounds one stats request: stats is idempotent, so a request
// or reply lost on the virtio-serial port (seen once under TCG in TCG
// after a packet flood) is asked again instead of waited for until ctx
// ends. A guest that answers none of statsAttempts requests has stopped
// answering: the cell fails then (within 30 s, or an eighth of its boot
// time per request for a guest that booted slowly), not at its deadline.
const (
	statsAttempt  = 15 * time.Second
	statsAttempts = 2
)

func (a *vmAgent) Stats(ctx context.Context) (GuestStats, error) {
	var ev *vmimages.Event
	var err error
	attempt := max(a.attempt, a.leastAttempt())
	for i := 0; i < statsAttempts; i++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		ev, err = a.c.Stats(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			break
		}
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("the guest agent answered none of %d stats requests in %v: %w: %w",
				statsAttempts, time.Duration(statsAttempts)*attempt, ErrGuestUnresponsive, err)
		}
		return GuestStats{}, err
	}
	var s GuestStats
	if ev.Eth0 != nil {
		s.RxPackets, s.RxBytes, s.RxDropped = ev.Eth0.RxPackets, ev.Eth0.RxBytes, ev.Eth0.RxDropped
	}
	s.Sink, s.XDPDrops = ev.Sink, ev.XDPDrops
	for mac, l := range ev.Links {
		if s.Links == nil {
			s.Links = map[string]GuestStats{}
		}
		if l != nil {
			s.Links[mac] = GuestStats{RxPackets: l.RxPackets, RxBytes: l.RxBytes, RxDropped: l.RxDropped}
		}
	}
	if len(ev.Flows) > 0 {
		s.Flows = map[int]uint64{}
		for k, v := range ev.Flows {
			if p, err := strconv.Atoi(k); err == nil {
				s.Flows[p] = v
			}
		}
	}
	return s, nil
}

// guest is a booted VM with its tap, reused across cells whose VM
// configuration is the same (scenarios.Cell.GuestKey).
type guest struct {
	key string
	// nics are the guest's NICs, one per backend it serves: one, or a
	// vhost=off and a vhost=on NIC (pairedKey).
	nics     []*guestNIC
	vm       *qemu.VM
	agent    Agent
	sink     string
	bootTime time.Duration
	// guestInit and guestReady are the guest kernel's uptime at /init and
	// at ready (0 = unknown); bootTime minus guestReady is QEMU, firmware
	// and kernel loading before the guest's clock started.
	guestInit, guestReady time.Duration
	accel                 qemu.Accel
	undo                  *undo.Stack
	// life ends, with a *qemu.FaultError as its cause, when the guest
	// kernel reports a lockup, stall, oops or panic on its console: the
	// cell then fails at once instead of at its deadline.
	life context.Context
	// warnings go into every sample measured on this guest (a fallback
	// from KVM to TCG).
	warnings []string
}

// withGuest returns ctx, cancelled also when g's kernel reports a fault
// (context.Cause is then the *qemu.FaultError; see faultOf).
func withGuest(ctx context.Context, g *guest) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(ctx)
	if g == nil || g.life == nil {
		return c, func() { cancel(nil) }
	}
	stop := context.AfterFunc(g.life, func() { cancel(context.Cause(g.life)) })
	return c, func() { stop(); cancel(nil) }
}

// faultOf returns the guest kernel fault that ended ctx, if one did.
func faultOf(ctx context.Context) *qemu.FaultError {
	var fe *qemu.FaultError
	if errors.As(context.Cause(ctx), &fe) {
		return fe
	}
	return nil
}

// consolePoll is how often a guest's console is checked for kernel faults.
const consolePoll = 500 * time.Millisecond

// GuestGoneError is a guest whose agent connection closed in the middle of
// a cell (vmimages.ErrClosed: its QEMU exited, the guest powered off, or
// its agent ended) without a kernel fault on its console: the cell fails
// with the console's last lines, which say why (the agent's last words),
// and the run goes on with a fresh guest.
type GuestGoneError struct {
	Err     error
	QEMU    string // what became of QEMU: its exit status and stderr, or still running
	Console string // the console log's path ("" = unknown)
	Tail    string // its last lines
}

func (e *GuestGoneError) Error() string {
	s := e.Err.Error()
	if e.QEMU != "" {
		s += "; " + e.QEMU
	}
	if e.Tail != "" {
		s += "\nlast guest console lines"
		if e.Console != "" {
			s += " (" + e.Console + ")"
		}
		s += ":\n" + qemu.QuoteConsole(e.Tail)
	} else {
		s += " (the guest console is empty)"
	}
	return s
}

func (e *GuestGoneError) Unwrap() error { return e.Err }

// guestGoneWait bounds how long a cell whose guest's agent connection
// closed waits for the guest's QEMU to exit and the console watcher to
// report a kernel fault (FaultGrace after the fault line).
const guestGoneWait = qemu.FaultGrace + 4*consolePoll

// guestGone turns err, g's agent connection closing (vmimages.ErrClosed),
// into the reason: the kernel fault on g's console (a *qemu.FaultError:
// an oops that killed the agent, PID 1, panics the kernel and ends QEMU),
// else a *GuestGoneError with the console's last lines. It waits up to
// guestGoneWait for QEMU to exit so the console is complete.
func guestGone(ctx context.Context, g *guest, err error) error {
	if g == nil || g.vm == nil {
		return err
	}
	t := time.NewTimer(guestGoneWait)
	defer t.Stop()
	select {
	case <-g.vm.Done():
	case <-ctx.Done():
	case <-t.C:
	}
	if fe := faultOf(ctx); fe != nil {
		return fe
	}
	path := g.vm.Config.ConsoleLog
	w := qemu.NewConsoleWatch(path)
	w.Launched = time.Time{} // read after the fact: the VM's age is unknown
	w.Poll()
	w.Close()
	if w.Fault != "" {
		return &qemu.FaultError{VM: "guest", Line: w.Fault, Console: path, Tail: qemu.FaultTail(path, w.Fault, 40)}
	}
	return &GuestGoneError{Err: err, QEMU: qemuState(g.vm), Console: path, Tail: qemu.FileTail(path, 20)}
}

// qemuState says what became of vm's QEMU: exited with status 0 (the
// guest powered off, or rebooted under -no-reboot: a kernel panic with
// panic=-1), exited otherwise (its error carries its stderr's last lines),
// or still running.
func qemuState(vm *qemu.VM) string {
	select {
	case <-vm.Done():
	default:
		return "QEMU is still running"
	}
	p := vm.Process()
	if werr := p.Wait(); werr != nil {
		return "QEMU exited: " + werr.Error()
	}
	s := "QEMU exited with status 0 (the guest powered off, or rebooted: a kernel panic)"
	if _, stderr := p.Output(); strings.TrimSpace(stderr) != "" {
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		s += "; its stderr: " + strings.Join(lines[max(len(lines)-5, 0):], " | ")
	}
	return s
}

func tapName(c *scenarios.Cell) string {
	if c.TapName != "" {
		return c.TapName
	}
	return "vnbt0"
}

// guestNIC is one NIC of a guest and the tap behind it.
type guestNIC struct {
	backend string // "tap" or "tap+vhost"
	tap     string
	tapMAC  string // read after the tap is created
	hostIP  string // the tap's address
	guestIP string
	mac     string // the guest NIC's MAC
}

// The second NIC of a paired guest (its tap+vhost NIC): its own tap and
// subnet, so each backend's traffic takes its own tap.
const (
	pairTap      = "vnbt1"
	pairHostIP   = "10.0.1.1"
	pairGuestIP  = "10.0.1.2"
	pairGuestMAC = "52:54:00:12:34:57"
)

// pairNICs are the NICs of a guest shared by tap and tap+vhost cells:
// vnbt0 as for a single guest, and a vhost=on NIC on its own tap and
// subnet.
func pairNICs() []*guestNIC {
	return []*guestNIC{{backend: "tap", tap: "vnbt0", hostIP: HostIP, guestIP: GuestIP, mac: GuestMAC},
		{backend: "tap+vhost", tap: pairTap, hostIP: pairHostIP, guestIP: pairGuestIP, mac: pairGuestMAC}}
}

// device is n as QEMU's NIC on a tap of queues queues, the guest's
// first NIC or a further one: its kernel parameters tell the agent the
// NIC's address (vnb.ip and vnb.mac for eth0, a vnb.nic for each other).
func (n *guestNIC) device(first bool, queues int) qemu.NIC {
	mac, _ := net.ParseMAC(n.mac)
	ip := netip.MustParsePrefix(n.guestIP + "/" + strconv.Itoa(PrefixLen))
	gc := vmimages.GuestConfig{IP: ip, MAC: mac}
	if !first {
		gc = vmimages.GuestConfig{NICs: []vmimages.NIC{{MAC: mac, IP: ip}}}
	}
	return qemu.NIC{Tap: n.tap, MAC: n.mac, Vhost: n.backend == "tap+vhost", Queues: queues, Kernel: strings.Fields(gc.Params())}
}

// nic returns the guest's NIC for backend (the only one of a single-NIC
// guest).
func (g *guest) nic(backend string) *guestNIC {
	for _, n := range g.nics {
		if n.backend == backend {
			return n
		}
	}
	return g.nics[0]
}

// pairedKey is c's guest with the backend left out: cells that differ
// only in backend (tap vs tap+vhost) can share one guest carrying a
// vhost=off and a vhost=on NIC, one boot instead of two.
func pairedKey(c *scenarios.Cell) string {
	cc := *c
	cc.Backend = ""
	return cc.GuestKey()
}

// pairedGuests returns the pairedKeys whose cells use both backends and
// can share a guest: the default tap name and the default sink (a sink
// program attaches to the guest's first NIC only).
func pairedGuests(cells []scenarios.Cell) map[string]bool {
	backends := map[string]map[string]bool{}
	ok := map[string]bool{}
	for i := range cells {
		c := &cells[i]
		k := pairedKey(c)
		if backends[k] == nil {
			backends[k] = map[string]bool{}
			ok[k] = true
		}
		backends[k][c.Backend] = true
		if (c.TapName != "" && c.TapName != "vnbt0") || (c.Guest.Sink != "" && c.Guest.Sink != vmimages.SinkStack) {
			ok[k] = false
		}
	}
	out := map[string]bool{}
	for k, b := range backends {
		if ok[k] && b["tap"] && b["tap+vhost"] && len(b) == 2 {
			out[k] = true
		}
	}
	return out
}

// guestKey is the guest a cell runs on in this run: its GuestKey, or its
// pairedKey when its cells share a two-NIC guest.
func (r *runState) guestKey(c *scenarios.Cell) string {
	if k := pairedKey(c); r.paired[k] {
		return "paired|" + k
	}
	return c.GuestKey()
}

// bootGuest creates the tap in the run's namespace, starts QEMU on it and
// waits for the agent. On failure everything it made is undone.
func (r *runState) bootGuest(ctx context.Context, c *scenarios.Cell) (g *guest, err error) {
	u := undo.New()
	defer u.RunOnError(&err, r.teardownTimeout(c))
	g = &guest{key: r.guestKey(c), accel: r.accelFor(c)}
	img, err := r.opts.Image(ctx, c.Guest, r.guestContents)
	if err != nil {
		return nil, fmt.Errorf("guest image: %w", err)
	}
	g.nics = []*guestNIC{{backend: c.Backend, tap: tapName(c), hostIP: HostIP, guestIP: GuestIP, mac: GuestMAC}}
	if r.paired[pairedKey(c)] {
		g.nics = pairNICs()
	}
	qnics, err := r.createTaps(c, g.nics, u)
	if err != nil {
		return nil, err
	}
	cfg := r.guestConfig(c, g, img, qnics)
	r.boots++
	start := time.Now()
	bootTimeout := c.Timeouts.Boot
	if bootTimeout <= 0 {
		bootTimeout = 3 * time.Minute
	}
	life, kill := context.WithCancelCause(context.Background())
	g.life = life
	u.Push("stop console watch", func(context.Context) error { kill(nil); return nil })
	bctx, cancel := withGuest(ctx, g)
	defer cancel()
	bctx, cancelT := context.WithTimeout(bctx, bootTimeout)
	defer cancelT()
	vm, err := r.launchGuest(ctx, bctx, c, g, img, &cfg)
	if err != nil {
		return nil, err
	}
	r.noteGuestCmdline(qemu.Cmdline(cfg))
	g.vm = vm
	u.Push("stop qemu", func(tctx context.Context) error { return vm.Quit(tctx, 5*time.Second) })
	go qemu.WatchConsole(life, "guest", cfg.ConsoleLog, consolePoll, qemu.FaultGrace, func(fe *qemu.FaultError) { kill(fe) })
	agent, err := r.waitAgent(bctx, vm, cfg.AgentSocket)
	if err != nil {
		return nil, agentBootError(ctx, bctx, vm, err, bootTimeout)
	}
	g.agent = agent
	u.Push("close agent", func(context.Context) error { return agent.Close() })
	g.noteBoot(agent, time.Since(start))
	r.noteGuestKernel(img.KernelRelease)
	g.sink = "stack"
	g.undo = u.Release()
	return g, nil
}

// createTaps creates a multiqueue tap in the run's namespace for each of
// the guest's NICs (deleted by u) and returns QEMU's NICs on them.
func (r *runState) createTaps(c *scenarios.Cell, nics []*guestNIC, u *undo.Stack) ([]qemu.NIC, error) {
	var qnics []qemu.NIC
	for i, n := range nics {
		tap := hostnet.Tap{Name: n.tap, Queues: c.TapQueues(), Addr: n.hostIP + "/" + strconv.Itoa(PrefixLen)}
		r.record(proc.Cmd{Argv: tapArgv(tap), Netns: r.ns.Name})
		r.record(proc.Cmd{Argv: []string{"ip", "addr", "add", tap.Addr, "dev", tap.Name}, Netns: r.ns.Name})
		r.record(proc.Cmd{Argv: []string{"ip", "link", "set", tap.Name, "up"}, Netns: r.ns.Name})
		if err := r.ns.CreateTap(tap); err != nil {
			return nil, err
		}
		tapDev := n.tap
		u.Push("delete tap "+tapDev, func(context.Context) error { return r.ns.DeleteLink(tapDev) })
		if st, err := r.ns.LinkMAC(n.tap); err == nil {
			n.tapMAC = st
		}
		qnics = append(qnics, n.device(i == 0, c.TapQueues()))
	}
	return qnics, nil
}

// guestConfig is the QEMU configuration of guest g of cell c: image img,
// NICs qnics, the console log of the run's next boot.
func (r *runState) guestConfig(c *scenarios.Cell, g *guest, img *GuestImage, qnics []qemu.NIC) qemu.Config {
	cfg := qemu.Config{Name: "vnb-" + r.id, Accel: g.accel, CPUs: c.Guest.VCPUs, MemoryMiB: c.Guest.MemoryMiB,
		Kernel: img.Kernel, Initrd: img.Initrd, Append: GuestCmdline(c, g.accel, img.Cmdline),
		QMPSocket:   filepath.Join(r.sockDir, "qmp.sock"),
		AgentSocket: filepath.Join(r.sockDir, "agent.sock"),
		ConsoleLog:  filepath.Join(r.dir, results.ConsoleLog(r.boots)),
		NICs:        qnics}
	workloadDevices(&cfg, c)
	if cfg.MemoryMiB == 0 {
		cfg.MemoryMiB = 512
	}
	return cfg
}

// launchGuest starts QEMU with cfg (under ctx; bctx bounds the start).
// When KVM was chosen automatically and this QEMU did not run it, it
// starts the guest again under TCG, for this and later guests, and notes
// that in cfg and g.
func (r *runState) launchGuest(ctx, bctx context.Context, c *scenarios.Cell, g *guest, img *GuestImage, cfg *qemu.Config) (*qemu.VM, error) {
	// QEMU must outlive bctx: start it with the run's context.
	vm, err := r.launch(ctx, bctx, *cfg)
	if err != nil && g.accel == qemu.KVM && c.Guest.Accel != qemu.AccelKVM && r.opts.Accel == "" && ctx.Err() == nil && bctx.Err() == nil {
		// guest.accel auto: the probe ran a vCPU, yet this QEMU did not
		// run KVM. Fall back to TCG once, for this and later guests.
		r.kvmBroken = err.Error()
		g.accel = qemu.TCG
		g.warnings = append(g.warnings, fmt.Sprintf("KVM did not start this guest (%v): it runs under TCG instead", err))
		r.logf("warning: %s", g.warnings[len(g.warnings)-1])
		cfg.Accel, cfg.Append = qemu.TCG, GuestCmdline(c, qemu.TCG, img.Cmdline)
		cfg.ConsoleLog = filepath.Join(r.dir, results.ConsoleLog(r.boots))
		r.boots++
		vm, err = r.launch(ctx, bctx, *cfg)
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

// launch starts QEMU in the run's namespace and confirms over QMP that
// it runs the accelerator asked for (query-kvm); bctx bounds the start,
// ctx is QEMU's lifetime.
func (r *runState) launch(ctx, bctx context.Context, cfg qemu.Config) (*qemu.VM, error) {
	return qemu.Start(ctx, bctx, r.exec, cfg, qemu.StartOptions{Netns: r.ns.Name, CheckAccel: true})
}

// waitAgent dials the agent and waits for ready, failing fast when QEMU
// exits (a kernel panic with panic=-1 and -no-reboot ends QEMU).
func (r *runState) waitAgent(ctx context.Context, vm *qemu.VM, sock string) (Agent, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-vm.Done():
			cancel(fmt.Errorf("qemu exited during boot: %v", vm.Process().Wait()))
		case <-ctx.Done():
		}
	}()
	a, err := r.opts.DialAgent(ctx, sock)
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

// tapArgv is the iproute2 equivalent of what CreateTap does over netlink
// (for reproduce.sh).
func tapArgv(t hostnet.Tap) []string {
	a := []string{"ip", "tuntap", "add", "dev", t.Name, "mode", "tap", "vnet_hdr"}
	if t.Queues > 1 {
		a = append(a, "multi_queue")
	}
	return a
}

// noteGuestCmdline records a guest kernel command line in env.json (each
// distinct one once, in boot order).
func (r *runState) noteGuestCmdline(cmdline string) {
	if slices.Contains(r.guestCmdlines, cmdline) {
		return
	}
	r.guestCmdlines = append(r.guestCmdlines, cmdline)
	env, err := results.ReadEnv(r.dir)
	if err != nil {
		return
	}
	env.GuestCmdline = slices.Clone(r.guestCmdlines)
	results.WriteEnv(r.dir, *env)
}

// noteGuestKernel records the guest kernel release in env.json (once).
func (r *runState) noteGuestKernel(release string) {
	if release == "" || r.guestKernel == release {
		return
	}
	r.guestKernel = release
	env, err := results.ReadEnv(r.dir)
	if err != nil {
		return
	}
	if env.Extra == nil {
		env.Extra = map[string]string{}
	}
	env.Extra["guest_kernel"] = release
	results.WriteEnv(r.dir, *env)
}
