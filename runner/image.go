package runner

import (
	"context"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// GuestTuning is the guest kernel's tuning for accel when guest.cmdline is
// auto (vmimages.Tuning).
func GuestTuning(accel qemu.Accel) string { return vmimages.Tuning(accel != qemu.KVM) }

// GuestFirmware is the firmware a guest boots with under accel:
// qemu.TCGFirmware (qboot: a nested guest was up ~18 s sooner on average,
// see qemu.Qboot) under TCG, QEMU's default under KVM. The guest
// kernel sees the same devices and ACPI tables either way; only the
// firmware that hands it over differs.
func GuestFirmware(accel qemu.Accel) string {
	if accel == qemu.KVM {
		return ""
	}
	return qemu.TCGFirmware()
}

// GuestCmdline is the guest kernel's command line for c under accel
// before its devices' pieces (the NICs' vnb.* parameters: guestNIC.device):
// vmimages.GuestCmdline with the tuning (guest.cmdline, or GuestTuning
// when auto) and the image's extra parameters.
func GuestCmdline(c *scenarios.Cell, accel qemu.Accel, imageExtra string) string {
	tuning := c.Guest.Cmdline
	if tuning == "" || tuning == "auto" {
		tuning = GuestTuning(accel)
	}
	return vmimages.GuestCmdline(tuning, imageExtra).String()
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
