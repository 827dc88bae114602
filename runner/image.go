package runner

import (
	"context"

	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// VMImagesBuilder is the ImageFunc that builds the guest with vmimages:
// the guest's kernel (scenario guest.kernel, else vmimages' default: the
// host's, then Debian's), the agent binary as /init (agentBinary, "" = the
// running executable) and iperf3 when a cell needs it. Builds are cached
// by content, so calling it per boot is cheap.
func VMImagesBuilder(agentBinary string) ImageFunc {
	return func(ctx context.Context, g scenarios.Guest, needIperf3 bool) (*GuestImage, error) {
		o := vmimages.BuildOptions{Agent: agentBinary, Iperf3: needIperf3, Modules: g.Kernel.Modules}
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
		return &GuestImage{Kernel: img.Kernel, Initrd: img.Initramfs, KernelRelease: img.KernelRelease}, nil
	}
}
