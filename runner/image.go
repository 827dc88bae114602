package runner

import (
	"context"

	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// GuestFastCmdline are kernel parameters added to vmimages' base command
// line: they skip boot work a benchmark guest does not need and that
// stalls boots under TCG, more so TCG inside TCG (lab mode; measured by
// runner/lab's FastAppend).
const GuestFastCmdline = "cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp audit=0"

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
		return &GuestImage{Kernel: img.Kernel, Initrd: img.Initramfs, KernelRelease: img.KernelRelease, Cmdline: GuestFastCmdline}, nil
	}
}
