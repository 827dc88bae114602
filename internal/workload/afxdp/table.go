package afxdp

import (
	"errors"
	"fmt"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
)

func (Workload) Features() []workload.Feature {
	return []workload.Feature{{Name: series.Feature, Probe: probeFeature}}
}

func probeFeature() workload.Probe {
	c, err := xdp.HostCapability.Get()
	switch {
	case err != nil:
		return workload.Probe{Detail: "not probed: " + err.Error(), Fix: "run doctor as root",
			Why: "cannot probe AF_XDP on a tap: " + err.Error()}
	case c.Copy:
		return workload.Probe{OK: true, Detail: c.String()}
	case errors.Is(c.CopyErr, xdp.ErrNoAFXDP):
		rel, err := hostnet.KernelRelease()
		if err != nil {
			rel = "?"
		}
		return workload.Probe{Detail: "not available: no AF_XDP sockets (CONFIG_XDP_SOCKETS)",
			Why: fmt.Sprintf("kernel %s has no AF_XDP sockets (CONFIG_XDP_SOCKETS); the afxdp and testpmd workloads need them", rel)}
	}
	return workload.Probe{Detail: c.String(), Why: "AF_XDP Tx on a tap does not work on this kernel: " + c.String()}
}
