package runner

import (
	"context"
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
