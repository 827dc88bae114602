// Package xsk is an AF_XDP socket driver, below the afxdp and testpmd
// workloads (what those two share besides it, their keys and table, is
// internal/xsk/series): an AF_XDP transmit generator: UDP frames sent through
// a device (a tap) from AF_XDP sockets, bound in copy mode (XDP_COPY: the
// kernel copies each frame into an skb and hands it to the driver, which
// is what a tap does on every stock kernel) or zero-copy mode
// (XDP_ZEROCOPY: the driver sends from the UMEM; stock tun refuses it
// with EOPNOTSUPP, see UnsupportedError). It also probes a kernel's
// AF_XDP capability on a throwaway tap (Probe).
//
// # How it sends
//
// One socket per queue, each with its own UMEM and one locked OS thread.
// Per-socket UMEMs share nothing between threads (no free list or cache
// line crosses queues); a shared UMEM (XDP_SHARED_UMEM) would only save
// memory, and buys zero copies only when Rx and Tx sockets forward
// between each other, which a Tx-only generator never does.
//
// The frames (Ethernet + IPv4 + UDP, correct checksums, built with
// gopacket; see Frame) are written into every UMEM chunk once. Sending is
// then ring work: reap the completion ring onto a stack of free chunks
// (the chunk that completed last is sent next, so copy mode, whose
// completions come back within the kick, keeps reusing a few cache-hot
// chunks), put up to Batch (address, length) descriptors on the Tx ring
// (with SrcPorts > 1, also writing each frame's UDP source port and
// checksum, round robin over the ports), and kick with sendto
// when the kernel set XDP_RING_NEED_WAKEUP on the Tx ring (copy mode
// always does: its transmit runs inside that sendto, up to the socket's
// XDP_MAX_TX_SKB_BUDGET frames per call, which the generator raises to
// Batch on 6.17+). The rings are mapped at the offsets XDP_MMAP_OFFSETS
// reports. The Tx ring has RingSize entries; the completion ring and the
// UMEM twice as many.
//
// # Running
//
// Open creates and binds the sockets. Run sends and returns the Result;
// it is Start (one locked OS thread per queue, their ids in Threads,
// nothing sent yet), Go (the threads send) and Wait, so a harness can
// attach perf stat to the threads and pin them before the first frame.
// Stop ends a run early.
//
// # What it reports
//
// Packets are completions: frames the kernel took and finished with.
// For a tap in copy mode a frame completes inside the sendto that sent
// it, as the tap queues it for its reader (tun orphans the skb) or drops
// it (the tap's tx_dropped, the run's loss): completions never wait for
// the reader. Duration runs from the first submit to the last completion,
// so PPS is the generator's own rate over its own run time. Per queue:
// kicks, EAGAIN and EBUSY kick results, stalls (Tx ring full; all frames
// in flight), invalid descriptors and the thread's user and system CPU
// time.
//
// # Errors
//
// ErrInvalid: a configuration that cannot work (frame size below
// HeaderLen or above MaxFrameSize, a queue the tap does not have, a tap
// nothing reads). ErrNoAFXDP: a kernel without AF_XDP. An
// *UnsupportedError: the bind mode is refused; its reason is what a report
// prints for the cell (workload.IsUnsupported knows it by its
// NotSupported method: the driver names no workload).
//
// Sockets belong to the network namespace they are created in: Open
// creates them through Config.InNetns; Run works from any thread.
// This package starts no processes.
package xsk
