package runner

import (
	"fmt"

	"github.com/vnetbench/vnetbench/runner/qemu"
)

// vhostNet picks the vhost-net workers of a tap+vhost guest among the
// vhost workers serving its QEMU and checks them against what the cell
// asked: one worker per queue pair (each vhost-net queue pair is its own
// vhost device), and a worker to pin when pin.vhost names CPUs. A
// vhost-vsock device has a worker too, named alike; QEMU creates it after
// the netdev's, so it is the newest and is left out.
//
// A cell that pins the vhost worker and finds fewer workers than queue
// pairs is an error (it would run partly or wholly unpinned); otherwise a
// mismatch is a warning for the sample.
func vhostNet(w qemu.VhostWorkers, qemuPid, queues int, vsock, pinned bool) (tids []int, warning string, err error) {
	tids = w.TIDs
	if vsock && len(tids) > 0 {
		tids = tids[:len(tids)-1]
	}
	queues = max(queues, 1)
	switch {
	case len(tids) == queues:
		return tids, "", nil
	case len(tids) == 0 && pinned:
		return nil, "", fmt.Errorf("pin.vhost: no vhost-net worker found for QEMU pid %d (neither a thread vhost-%d of QEMU, Linux 6.4+, nor a kernel thread of that name, older kernels): the cell would run unpinned", qemuPid, qemuPid)
	case len(tids) < queues && pinned:
		return nil, "", fmt.Errorf("pin.vhost: %d vhost-net workers found for QEMU pid %d, %d queue pairs: a queue's worker would run unpinned", len(tids), qemuPid, queues)
	case len(tids) == 0:
		return nil, fmt.Sprintf("no vhost-net worker found for QEMU pid %d: perf@vhost and the vhost CPU share are missing", qemuPid), nil
	}
	return tids, fmt.Sprintf("%d vhost-net workers (%s) for %d queue pairs: expected one per queue pair", len(tids), w.Kind(), queues), nil
}

// qemuTargetLabel names what perf -p QEMU (the qemu target) counts: QEMU's
// threads, and the vhost-net workers only when they are threads of its
// process (Linux 6.4+). Recorded as the sample's label qemu_target so
// perf.*@qemu is compared only where it means the same.
func qemuTargetLabel(backend string, w qemu.VhostWorkers) string {
	if backend != "tap+vhost" {
		return "qemu"
	}
	switch w.Kind() {
	case "in-process":
		return "qemu+vhost"
	case "kthread":
		return "qemu (vhost kthreads apart)"
	}
	return "qemu (no vhost worker found)"
}
