package runner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The runner's side of workload plug-ins: what it plans and checks for a
// workload's cells. (A plug-in's own tests import no runner: nothing
// below the runner does, tests included.)

// afxdp's plan: the generator runs inside the harness; its line says what
// it will do, and the host needs AF_XDP.
func TestAFXDPPlan(t *testing.T) {
	s, err := scenarios.Load("x.yaml", []byte("name: x\nbackend: tap\ngenerator:\n  afxdp: {pkt_size: [64, 1024], mode: [copy, zerocopy], duration: 2s}\nrepetitions: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Expand()[0]
	cmds := strings.Join(runner.Commands(&c, qemu.TCG), "\n")
	if !strings.Contains(cmds, "\n# afxdp (in the vnetbench process): 1 AF_XDP socket and thread on vnbt0 in netns vnb-RUNID queue 0, bind ") ||
		!strings.Contains(cmds, ", batch 64, for 2s") {
		t.Errorf("commands:\n%s", cmds)
	}
	if n := runner.NeedsOf(s.Expand()); !slices.Contains(n.Features, series.Feature) {
		t.Errorf("needs %+v", n)
	}
}

// A kernel without AF_XDP: a run of an AF_XDP scenario stops in
// preflight with one line and exit 2.
func TestAFXDPPreflightWithoutAFXDP(t *testing.T) {
	hc := xdp.HostCapability
	old := hc.Probe
	hc.Probe = func(context.Context) (xdp.Capability, error) {
		return xdp.Capability{CopyErr: xdp.ErrNoAFXDP, ZeroCopyErr: xdp.ErrNoAFXDP}, nil
	}
	hc.Reset()
	t.Cleanup(func() { hc.Probe = old; hc.Reset() })
	testenv.NeedRoot(t, "preflight checks root before the kernel's features")
	testenv.NeedFile(t, "/dev/net/tun", "preflight checks tun before the kernel's features")
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

// vsock's plan says what runs where: the server, the redirector (socat's
// exact command line), the sender, the agent op; the guest gets its
// vhost-vsock-pci device.
func TestVsockPlanCommands(t *testing.T) {
	s, err := scenarios.Load("series.yaml", []byte(`
name: series
guest: {vcpus: 2, kernel: {debian: "6.12"}}
generator:
  vsock: {redirector: [socat, sockmap], payload: 65536, threads: 1, duration: 5s}
repetitions: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range s.Expand() {
		b.WriteString("== " + c.Name + "\n")
		for _, l := range runner.Commands(&c, qemu.TCG) {
			if strings.HasPrefix(l, "ip ") && !strings.Contains(l, "qemu-system") {
				continue
			}
			b.WriteString(l + "\n")
		}
	}
	golden.Check(t, "vsock-plan.golden", b.String())
	if !strings.Contains(b.String(), " -device vhost-vsock-pci,guest-cid=3") {
		t.Error("no vhost-vsock-pci device in the plan")
	}
}
