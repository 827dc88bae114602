package metric

import "strings"

// Key is a metric's key: Metric.Key and the key of a sample's Metrics
// ("tx_pps", "perf.cycles@vhost", or a unit of another tool's benchfmt
// file). A defined type, so a key is not mixed up with a cell, a column
// or an axis; it encodes in JSON as the plain string.
type Key string

// The keys more than one package writes or reads. Code outside tests
// names them by these constants, never by a string literal, so a misspelt
// key does not compile; a workload's key that only it and its metric
// definition use may stay with the workload.
const (
	// Packet generators (pktgen, trafgen, AF_XDP Tx, testpmd).
	TxPPS         Key = "tx_pps"
	TxPPSThread   Key = "tx_pps_thread"
	LostPPS       Key = "lost_pps"
	LostPPSThread Key = "lost_pps_thread"
	TxRunS        Key = "tx_run_s"
	PktgenErrors  Key = "pktgen_errors"

	// The harness's counters of the tap, its qdisc and the guest.
	RxPPS        Key = "rx_pps"
	TapTxPPS     Key = "tap_tx_pps"
	TxPackets    Key = "tx_packets"
	QdiscDropPPS Key = "qdisc_drop_pps"
	QdiscDrops   Key = "qdisc_drops"

	// Receivers (iperf3, vsock).
	ThroughputBPS Key = "throughput_bps"
	Retransmits   Key = "retransmits"

	// The harness's self-measurements.
	HarnessCPUFrac    Key = "harness_cpu_frac"
	CellOverheadS     Key = "cell_overhead_s"
	GeneratorBusyFrac Key = "generator_busy_frac"

	// The latency probe.
	RTTP50S       Key = "rtt_p50_s"
	RTTP99S       Key = "rtt_p99_s"
	RTTP999S      Key = "rtt_p999_s"
	RTTMaxS       Key = "rtt_max_s"
	RTTIdleP50S   Key = "rtt_idle_p50_s"
	RTTInflationS Key = "rtt_inflation_s"

	// The latency probe's readings of the tap's qdisc, and the probe's
	// own losses and share of the load.
	QdiscWaitP99S   Key = "qdisc_wait_p99_s"
	QdiscBacklogMax Key = "qdisc_backlog_max"
	QdiscBacklogP50 Key = "qdisc_backlog_p50"
	ProbeLossFrac   Key = "probe_loss_frac"
	ProbeShareFrac  Key = "probe_share_frac"

	// Workloads' keys the latency table reads too.
	XDPTxPPS    Key = "xdp_tx_pps"
	XDPLostPPS  Key = "xdp_lost_pps"
	RRBulkBPS   Key = "rr_bulk_bps"
	Iperf3SRTTS Key = "iperf3_srtt_s"
	// A UDP test's receiver: its jitter and the share of the datagrams
	// it lost.
	Iperf3JitterS  Key = "iperf3_jitter_s"
	Iperf3LostFrac Key = "iperf3_lost_frac"
)

// Join joins keys with sep, as strings.Join joins strings.
func Join(keys []Key, sep string) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = string(k)
	}
	return strings.Join(s, sep)
}

// Keys converts names (a user's --metric list, say) to keys.
func Keys(names []string) []Key {
	if names == nil {
		return nil
	}
	out := make([]Key, len(names))
	for i, n := range names {
		out[i] = Key(n)
	}
	return out
}
