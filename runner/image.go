package runner

import (
	"context"
	"net"
	"net/netip"
	"strconv"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// GuestBootSkips are kernel parameters that skip boot work a benchmark
// guest does not need (crypto self-tests, i8042 probing) and that stalls
// boots under TCG, more so TCG inside TCG (lab mode; measured by
// runner/labvm's FastAppend). They change nothing once the guest runs.
const GuestBootSkips = "cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp"

// GuestTuning is the guest kernel's tuning for accel when guest.cmdline is
// auto. Under TCG: vmimages.TCGCmdline (no mitigations, a reliable TSC, no
// timer check), the boot skips and audit=0 (fewer emulated instructions per
// syscall). Under KVM only the boot skips: the guest kernel then runs as it
// would on a real host, mitigations and audit included.
func GuestTuning(accel qemu.Accel) string {
	if accel == qemu.KVM {
		return GuestBootSkips
	}
	return vmimages.TCGCmdline + " " + GuestBootSkips + " audit=0"
}

// GuestCmdline is the guest kernel's command line for c under accel:
// vmimages.BaseCmdline, the tuning (guest.cmdline, or GuestTuning when
// auto), the agent's vnb.* parameters (vnb.nic for each of more: a guest's
// NICs besides eth0), then the image's extra parameters.
func GuestCmdline(c *scenarios.Cell, accel qemu.Accel, imageExtra string, more ...vmimages.NIC) string {
	tuning := c.Guest.Cmdline
	if tuning == "" || tuning == "auto" {
		tuning = GuestTuning(accel)
	}
	gc := vmimages.GuestConfig{IP: netip.MustParsePrefix(GuestIP + "/" + strconv.Itoa(PrefixLen))}
	gc.MAC, _ = net.ParseMAC(GuestMAC)
	gc.NICs = more
	s := gc.Cmdline(tuning)
	if imageExtra != "" {
		s += " " + imageExtra
	}
	return s
}

// VMImagesBuilder is the ImageFunc that builds the guest with vmimages:
// the guest's kernel (scenario guest.kernel, else vmimages' default: the
// host's, then Debian's), the agent binary as /init (agentBinary, "" = the
// running executable) and what the cells' workloads want in the guest
// (programs such as iperf3, modules). Builds are cached by content, so
// calling it per boot is cheap.
func VMImagesBuilder(agentBinary string) ImageFunc {
	return func(ctx context.Context, g scenarios.Guest, want GuestContents) (*GuestImage, error) {
		o := vmimages.BuildOptions{Agent: agentBinary, Modules: g.Kernel.Modules, Programs: want.Programs, ExtraModules: want.Modules}
		switch {
		case g.Kernel.Image != "":
			o.Kernel = g.Kernel.Image
		case g.Kernel.Debian != "":
			o.Kernel = "debian:" + g.Kernel.Debian
		}
		img, err := vmimages.Build(ctx, o)
		if err != nil {
			return nil, err
		}
		kernel := img.Kernel
		// The uncompressed kernel at its PVH entry when it has one: no
		// firmware loading, no decompression under TCG.
		if v, err := vmimages.PVHKernel(ctx, img.Kernel, ""); err == nil {
			kernel = v
		}
		return &GuestImage{Kernel: kernel, Initrd: img.Initramfs, KernelRelease: img.KernelRelease}, nil
	}
}
