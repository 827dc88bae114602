// Package dropmon counts the kernel's packet drops by reason and by the
// function that dropped them, aggregated in the kernel: an eBPF program
// (cilium/ebpf, assembled in Go, no clang) adds one to a hash map entry
// keyed by (return address, drop reason) on every drop, and user space
// reads the map only when asked (Monitor.Snapshot), so the cost per packet
// is the program's run, not an event to user space.
//
// Where the program runs decides what "a drop" is:
//
//   - a kprobe on the kernel's drop function (kfree_skb_reason on 6.1,
//     sk_skb_reason_drop from 6.11) counts every call, at the place that
//     decided to drop, with its reason: tun's full ring is FULL_RING in
//     tun_net_xmit whoever holds the packet's other references. This is
//     the mode when the kernel has kprobes (Debian's kernels, the lab's
//     source-built config).
//   - the skb:kfree_skb tracepoint (a raw tracepoint, for kernels without
//     kprobes) fires only when the last reference to a packet goes. A
//     packet pktgen (start_xmit) sends is such a case: pktgen holds its
//     own reference, so tun's FULL_RING drop is not the last one and the
//     tracepoint reports the packet later, as NOT_SPECIFIED in
//     pktgen_xmit. Probe says which mode counted.
//
// Attaching (Attach) makes the kernel patch its code (the kprobe's
// ftrace site or int3, the tracepoint's static key); under QEMU's TCG that
// is safe only while nothing else runs (see runner/perfkeys), so a lab VM's
// init attaches once, before the run inside starts, with every other CPU
// offline, and passes the map to the run (Monitor.Inherit); a host run
// attaches for its whole length.
//
// Names: drop reasons from the kernel's BTF (enum skb_drop_reason) or the
// tracepoint's format file, functions from /proc/kallsyms (Names).
package dropmon
