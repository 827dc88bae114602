package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
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
	// restored is the key of the saved state the guest started from
	// instead of booting ("" = booted).
	restored     string
	restoreSteps string // what the start took, step by step
	undo         *undo.Stack
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
	life := g.life // the one now: a guest whose start from a saved state failed gets another
	stop := context.AfterFunc(life, func() { cancel(context.Cause(life)) })
	return c, func() { stop(); cancel(nil) }
}

// dead returns why g is known dead, or nil: its kernel reported a fault
// on its console (QEMU may still run, but nothing in the guest answers)
// or its QEMU exited.
func (g *guest) dead() error {
	if fe := faultOf(g.life); fe != nil {
		return fe
	}
	if g.vm == nil {
		return nil
	}
	select {
	case <-g.vm.Done():
		return fmt.Errorf("its QEMU exited: %s", g.vm.ExitState())
	default:
		return nil
	}
}

// liveAgent is g's agent as the workloads of its cells see it: a request
// to a guest known dead (dead) fails at once instead of waiting out its
// deadline; a failed cell's generator stops its guest side that way.
type liveAgent struct{ g *guest }

func (a liveAgent) Do(ctx context.Context, op, action string, args ...string) (string, error) {
	if err := a.g.dead(); err != nil {
		return "", fmt.Errorf("agent %s %s: not asked, the guest is dead: %w", op, action, err)
	}
	return a.g.agent.Do(ctx, op, action, args...)
}

// workloadAgent is liveAgent of g, nil for a guest without an agent.
func (g *guest) workloadAgent() workload.Agent {
	if g.agent == nil {
		return nil
	}
	return liveAgent{g}
}

// faultOf returns the guest kernel fault that ended ctx, if one did.
func faultOf(ctx context.Context) *qemu.FaultError {
	var fe *qemu.FaultError
	if ctx != nil && errors.As(context.Cause(ctx), &fe) {
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
	if fe := consoleFault(g.vm); fe != nil {
		return fe
	}
	path := g.vm.Config.ConsoleLog
	return &GuestGoneError{Err: err, QEMU: g.vm.ExitState(), Console: path, Tail: qemu.FileTail(path, 20)}
}

// consoleFault is the first kernel fault on vm's console, read after the
// fact (aged from the VM's launch), or nil.
func consoleFault(vm *qemu.VM) *qemu.FaultError {
	path := vm.Config.ConsoleLog
	w := vm.Console()
	w.Poll()
	w.Close()
	if w.Fault == "" {
		return nil
	}
	return &qemu.FaultError{VM: "guest", Line: w.Fault, Console: path, Tail: qemu.FaultTail(path, w.Fault, 40)}
}

// crashedAtBoot is the kernel crash that ended vm's QEMU during its boot,
// or nil: a panic (panic=-1, -no-reboot) ends QEMU before the console
// watch's grace, so the boot's wait sees QEMU exit first. Only a crash
// counts, an oops, BUG or lockup before the panic (under TCG most likely
// the emulator's, and retried as a fault: tcgFaultAgain); a kernel that
// chose to panic with nothing before it (no init, no root file system)
// does so on every boot and stays a boot error, which ends the run.
func crashedAtBoot(vm *qemu.VM) *qemu.FaultError {
	select {
	case <-vm.Done():
	default:
		return nil
	}
	fe := consoleFault(vm)
	if fe == nil || strings.Contains(fe.Line, "Kernel panic") {
		return nil
	}
	return fe
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

// tapArgv is the iproute2 equivalent of what CreateTap does over netlink
// (for reproduce.sh).
func tapArgv(t hostnet.Tap) []string {
	a := []string{"ip", "tuntap", "add", "dev", t.Name, "mode", "tap", "vnet_hdr"}
	if t.Queues > 1 {
		a = append(a, "multi_queue")
	}
	return a
}
