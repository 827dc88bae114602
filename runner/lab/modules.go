package lab

import (
	"github.com/vnetbench/vnetbench/vmimages"
)

// LabModules are the modules a lab VM loads (missing ones that are built
// in are fine): the 9p stack to mount the host root, then what the
// experiment needs on the lab's side (tun/tap, vhost-net, pktgen,
// vhost-vsock for a nested guest's AF_VSOCK: /dev/vhost-vsock) and what a
// nested guest's NIC needs.
var LabModules = []string{
	"virtio_pci", "virtio_console", "9pnet_virtio", "9p",
	"tun", "tap", "vhost_iotlb", "vhost", "vhost_net", "pktgen",
	"vhost_vsock",
	"virtio_net",
}

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
