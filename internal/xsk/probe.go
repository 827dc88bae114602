package xsk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
)

// Capability is what the running kernel does when an AF_XDP socket binds
// for Tx to a tap.
type Capability struct {
	// Copy and ZeroCopy say whether a bind in that mode succeeded.
	Copy, ZeroCopy bool
	// CopyErr and ZeroCopyErr say why not (nil when it succeeded): a
	// *UnsupportedError for a refused mode, ErrNoAFXDP without AF_XDP.
	CopyErr, ZeroCopyErr error
}

// String is one line for doctor, e.g. "copy ok, zerocopy unsupported
// (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)".
func (c Capability) String() string {
	part := func(m Mode, ok bool, err error) string {
		if ok {
			return string(m) + " ok"
		}
		var ns interface{ NotSupported() string } // an *UnsupportedError, or a fake's
		if errors.As(err, &ns) {
			return fmt.Sprintf("%s %s", m, ns.NotSupported())
		}
		return fmt.Sprintf("%s failed (%v)", m, err)
	}
	return part(Copy, c.Copy, c.CopyErr) + ", " + part(ZeroCopy, c.ZeroCopy, c.ZeroCopyErr)
}

var probeSeq atomic.Int32

// Probe tells whether AF_XDP Tx sockets bind to a tap in copy and in
// zero-copy mode on the running kernel. It creates a throwaway network
// namespace with a tap, binds one small socket per mode to queue 0 (a
// bind needs no reader and sends nothing), and deletes the namespace. An
// error means the probe could not run (not root, no /dev/net/tun); what
// the kernel refuses is in the Capability.
func Probe(ctx context.Context) (Capability, error) {
	var c Capability
	if err := ctx.Err(); err != nil {
		return c, err
	}
	ns, err := hostnet.CreateNetns(fmt.Sprintf("vnbprobe-%d-%d", os.Getpid(), probeSeq.Add(1)))
	if err != nil {
		return c, fmt.Errorf("afxdp probe: %w", err)
	}
	defer ns.Delete()
	const dev = "vnbprobe0"
	if err := ns.CreateTap(hostnet.Tap{Name: dev}); err != nil {
		return c, fmt.Errorf("afxdp probe: %w", err)
	}
	err = ns.Do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		d := &device{index: ifi.Index, driver: driverName(dev)}
		if d.driver == "" {
			d.driver = "tun"
		}
		// Zero-copy first: a refused bind frees the queue at once, while
		// a closed bound socket holds it for a moment (see bindBusyWait).
		c.ZeroCopy, c.ZeroCopyErr = probeBind(d, ZeroCopy)
		c.Copy, c.CopyErr = probeBind(d, Copy)
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("afxdp probe: %w", err)
	}
	return c, nil
}

// probeBind binds one small socket in mode m.
func probeBind(d *device, m Mode) (bool, error) {
	frames, err := Frame{}.Build()
	if err != nil {
		return false, err
	}
	x, err := newXSK(sockParams{frames: 64, chunk: 2048, txEntries: 64}, frames[0])
	if err != nil {
		return false, err
	}
	defer x.close()
	if err := x.bind(d.index, 0, m.bindFlags()); err != nil {
		return false, bindError(err, Config{Dev: "the probe's tap", Mode: m}, d, 0)
	}
	return true, nil
}

// CapabilityCache probes the running kernel's AF_XDP capability on a tap
// once per process (doctor, preflight and every cell ask).
type CapabilityCache struct {
	// Probe is what it asks (Probe; tests give a fake).
	Probe func(context.Context) (Capability, error)
	mu    sync.Mutex
	done  bool
	c     Capability
}

// Get returns the capability, probing on the first call (or after a
// failed one).
func (cc *CapabilityCache) Get() (Capability, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.done {
		return cc.c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cc.Probe(ctx)
	if err != nil {
		return c, err
	}
	cc.c, cc.done = c, true
	return c, nil
}

// Reset forgets a probed capability.
func (cc *CapabilityCache) Reset() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.done = false
}

// HostCapability is the running kernel's, probed with Probe.
var HostCapability = &CapabilityCache{Probe: Probe}
