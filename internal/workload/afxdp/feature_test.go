package afxdp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/scenarios"
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

// A kernel without AF_XDP: doctor's line says so, and a run of an AF_XDP
// scenario stops in preflight with one line and exit 2.
func TestKernelWithoutAFXDP(t *testing.T) {
	withCapability(t, xdp.Capability{CopyErr: xdp.ErrNoAFXDP, ZeroCopyErr: xdp.ErrNoAFXDP})
	p := probeFeature()
	if p.OK || !strings.Contains(p.Detail, "no AF_XDP sockets (CONFIG_XDP_SOCKETS)") {
		t.Errorf("probe %+v", p)
	}
	testenv.NeedRoot(t, "preflight checks root before the kernel's features")
	testenv.NeedFile(t, "/dev/net/tun", "preflight checks tun before the kernel's features")
	// afxdp_test imports internal/workload/all: the workload is registered.
	s, err := scenarios.Load("t.yaml", []byte("generator: {afxdp: {duration: 1s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = runner.Preflight(t.Context(), s.Expand(), proc.Real{})
	// fault.ErrCapability: cmd exits 2.
	if err == nil || !errors.Is(err, fault.ErrCapability) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "has no AF_XDP sockets (CONFIG_XDP_SOCKETS)") {
		if err != nil && strings.Contains(err.Error(), "is not installed") {
			testenv.Skipf(t, "preflight stops earlier here: %v", err)
		}
		t.Errorf("preflight: %v", err)
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
