// Package runner runs scenario cells on a real host: network namespace,
// tap, qdisc, QEMU guest, traffic generator, perf, pinning, and a LIFO
// teardown. It is the only package that starts processes or touches
// devices.
//
// Run takes cells in run order (scenarios.Order) and, per sample: boots
// (or reuses) the guest, applies the host-side knobs (qdisc, vCPU/vhost
// pinning, guest sink), runs a warmup, opens the measurement window
// (counters before, generator start, perf stat/record on the chosen
// threads), closes it (generator end, perf stopped, counters after),
// undoes the knobs and appends one results.Sample to results.jsonl. A guest
// is reused across cells that differ only in host-side knobs; it reboots
// when the VM configuration (backend, queues, vCPUs, memory, kernel)
// changes. Everything lives in one network namespace per run (vnb-<id>),
// created and deleted by the harness; nothing is created in the caller's
// namespace. Capability problems (missing tools, /dev/net/tun, vhost-net,
// a workload's kernel feature such as pktgen, a qdisc, a kernel needing
// lab mode) are found by Preflight
// before anything is set up and are errors of class fault.ErrCapability. A host
// lock (flock on /run/vnetbench.lock) keeps two runs from measuring at
// once. Teardown runs on success, failure and cancellation (SIGINT);
// finished samples are kept and --resume skips them.
//
// The traffic is the cell's workload's (internal/workload): the runner
// asks the cell's workload.Config what the host needs (Preflight, doctor,
// lab shares, guest image programs), for its commands (Commands, for plan
// and --dry-run) and for a workload.Generator per window: Start (traffic
// runs), Threads (host thread ids for perf and pinning), Wait (end of the
// traffic, bounded by ctx). A workload.Preparer's Prepare error that is
// an UnsupportedError makes the cell n/a too; a workload.Releaser frees
// what Prepare took when perf or pinning fails before Start. AddResult turns the generator's Result into sample metrics
// (a workload's own lost_pps, over its own run time, replaces the
// window's); with the xdp-drop sink rx_pps is what the guest's XDP
// program counted; CPUPerPacket adds cpu_per_pkt.<target> (perf stat
// task-clock / packets transmitted). A workload.Unsupported error makes
// the cell's sample an
// "n/a" with the reason instead of failing the run. The runner names no
// workload. Options.NewGenerator replaces the factory (tests).
//
// Subpackages: proc (executor, recording fake), undo (teardown stack),
// qemu (argv builder, QMP, VM lifecycle), hostnet (netns, tap, qdisc,
// counters via netlink), pktgen and lab (pktgen driver, lab VM mode).
//
// runner does not parse tool output itself beyond trivial summaries
// (perfparse does), does not compute statistics or render tables (report
// does), and does not build guest images (vmimages does; VMImagesBuilder
// adapts it).
package runner
