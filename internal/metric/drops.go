package metric

import "strings"

// DropPrefix starts the keys of the kernel's drops by reason and function
// (internal/dropmon): drop_pps.FULL_RING@tun_net_xmit is the packets per
// second tun_net_xmit dropped with reason FULL_RING, over the same
// interval as lost_pps; drop_pps.qdisc is the tap's root qdisc's drops
// over that interval.
const DropPrefix = "drop_pps."

// Drop is the key of the drops named name: REASON@FUNCTION, or DropQdisc.
func Drop(name string) Key { return Key(DropPrefix + name) }

// CPUPerPktPrefix starts the keys of CPU time per packet by perf target:
// cpu_per_pkt.vhost, cpu_per_pkt.afxdp, ...
const CPUPerPktPrefix = "cpu_per_pkt."

// CPUPerPkt is the key of the CPU time per packet of perf target t.
func CPUPerPkt(target string) Key { return Key(CPUPerPktPrefix + target) }

// DropQdisc is the key (after DropPrefix) of the root qdisc's drops.
const DropQdisc = "qdisc"

// TapXmitFunc is the tap driver's transmit function: the drops counted
// there are the ones its tx_dropped (lost_pps) counts.
const TapXmitFunc = "tun_net_xmit"

// DropKey splits a drop metric key: "drop_pps.FULL_RING@tun_net_xmit"
// is ("FULL_RING", "tun_net_xmit", true); "drop_pps.qdisc" is ("qdisc",
// "", true).
func DropKey(key Key) (reason, fn string, ok bool) {
	rest, ok := strings.CutPrefix(string(key), DropPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	reason, fn, _ = strings.Cut(rest, "@")
	return reason, fn, true
}
