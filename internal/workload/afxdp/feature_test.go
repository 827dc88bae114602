package afxdp

import (
	"context"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
)

// withCapability makes the probe report c (and resets the cache).
func withCapability(t *testing.T, c xdp.Capability) {
	t.Helper()
	hc := xdp.HostCapability
	old := hc.Probe
	hc.Probe = func(context.Context) (xdp.Capability, error) { return c, nil }
	hc.Reset()
	t.Cleanup(func() { hc.Probe = old; hc.Reset() })
}

// A kernel without AF_XDP: doctor's line says so (and preflight stops a
// run: runner's TestAFXDPPreflightWithoutAFXDP).
func TestKernelWithoutAFXDP(t *testing.T) {
	withCapability(t, xdp.Capability{CopyErr: xdp.ErrNoAFXDP, ZeroCopyErr: xdp.ErrNoAFXDP})
	p := probeFeature()
	if p.OK || !strings.Contains(p.Detail, "no AF_XDP sockets (CONFIG_XDP_SOCKETS)") {
		t.Errorf("probe %+v", p)
	}
}

// The capability line, as doctor prints it, for a kernel with zero-copy
// on tun (a patched one) and for the stock refusal.
func TestCapabilityLines(t *testing.T) {
	withCapability(t, xdp.Capability{Copy: true, ZeroCopy: true})
	if p := probeFeature(); !p.OK || p.Detail != "copy ok, zerocopy ok" {
		t.Errorf("patched: %+v", p)
	}
	withCapability(t, xdp.Capability{Copy: true, ZeroCopyErr: workload.Unsupported("unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)")})
	if p := probeFeature(); !p.OK || p.Detail != "copy ok, zerocopy unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)" {
		t.Errorf("stock: %+v", p)
	}
}
