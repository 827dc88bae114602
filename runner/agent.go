package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Agent is the host side of the guest agent protocol (vmimages' Client
// satisfies it through an adapter). Tests use fakes.
type Agent interface {
	// WaitReady waits for the agent's ready event.
	WaitReady(ctx context.Context) error
	// Stats returns the guest's eth0 counters.
	Stats(ctx context.Context) (GuestStats, error)
	// Do asks for an op of a workload's guest side (the iperf3 server's
	// start and stop, a workload's GuestOps) and returns its reply's
	// detail (workload.Agent).
	Do(ctx context.Context, op, action string, args ...string) (string, error)
	// Sink attaches a sink ("stack", "xdp-drop", "flow-count").
	Sink(ctx context.Context, kind string) error
	// Poweroff asks the guest to power off.
	Poweroff(ctx context.Context) error
	// Close releases the connection.
	Close() error
}

// GuestStats are the guest's receive counters (eth0).
type GuestStats struct {
	RxPackets, RxBytes, RxDropped uint64
	// Flows counts received packets per UDP source port (sink flow-count).
	Flows map[int]uint64
	// Sink is the active sink; XDPDrops the packets the xdp-drop sink's
	// program counted and dropped.
	Sink     string
	XDPDrops uint64
	// Links are the counters of every NIC by MAC, for a guest with more
	// than one (the fields above are eth0's).
	Links map[string]GuestStats
}

// Of returns the counters of the NIC with mac: its entry in Links, or s
// itself for a single-NIC guest.
func (s GuestStats) Of(mac string) GuestStats {
	if l, ok := s.Links[mac]; ok {
		l.Sink = s.Sink // a shared guest's sink is the stack (pairedGuests)
		return l
	}
	return s
}

// AgentDialer connects to the agent of a guest VM.
type AgentDialer func(ctx context.Context, vm *qemu.VM) (Agent, error)

// DialVMImagesAgent is the AgentDialer for vmimages' agent, on the VM's
// agent port (qemu.VM.Agent).
func DialVMImagesAgent(ctx context.Context, vm *qemu.VM) (Agent, error) {
	conn, err := vm.Agent(ctx)
	if err != nil {
		return nil, err
	}
	return &vmAgent{c: vmimages.NewClient(conn)}, nil
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

// Do asks for a workload's op; the client asks again each attempt
// without an answer (vmimages.Attempt), until ctx ends.
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
