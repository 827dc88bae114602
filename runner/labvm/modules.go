package labvm

import (
	"slices"

	"github.com/vnetbench/vnetbench/vmimages"
)

// LabModules are the modules every lab VM loads (missing ones that are
// built in are fine): the 9p stack to mount the host root, tun/tap and
// vhost-net for the experiment's tap, and what a nested guest's NIC
// needs. A run adds its workloads' modules (workload.LabModules: pktgen,
// vhost_vsock, ...) through Config.Modules.
var LabModules = []string{
	"virtio_pci", "virtio_console", "9pnet_virtio", "9p",
	"tun", "tap", "vhost_iotlb", "vhost", "vhost_net",
	"virtio_net",
}

// ownModules are what the lab's own commands need besides LabModules,
// loaded when Config.Modules is nil: pktgen for lab-selftest and
// perf-stress (they drive internal/workload/pktgen/driver themselves), vhost_vsock so that
// doctor inside a bare lab VM sees /dev/vhost-vsock.
var ownModules = []string{"pktgen", "vhost_vsock"}

// DefaultModules are the modules a lab VM loads when Config.Modules is
// nil: LabModules and what the lab's own commands need.
func DefaultModules() []string { return append(slices.Clone(LabModules), ownModules...) }

// GuestModules are the modules a nested guest loads to bring up its NIC.
var GuestModules = []string{"virtio_pci", "virtio_net"}

// resolveModules returns the modules of dir (a /lib/modules/<release>
// directory) to load for names, dependencies first, and the names that are
// neither modules nor built in. The index and the order are vmimages'
// (modules.dep when present, else each module's .modinfo "depends=").
func resolveModules(dir string, names []string) (*vmimages.ModuleIndex, []vmimages.Module, []string, error) {
	ix, err := vmimages.OpenModules(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	// A kernel with everything built in has a modules directory with only
	// modules.builtin: nothing to load.
	if ix.Len() == 0 && ix.BuiltinLen() == 0 {
		return nil, nil, nil, inputErrorf("no kernel modules under %s (no .ko files, no modules.builtin); pass the kernel's /lib/modules/<release> directory as modules:", dir)
	}
	order, missing, err := ix.ResolveAvailable(names)
	if err != nil {
		return nil, nil, nil, err
	}
	return ix, order, missing, nil
}
