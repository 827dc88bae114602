package metric

// Key is a metric's key: Metric.Key and the key of a sample's Metrics. It
// is an alias, so a Key indexes the string-keyed Metrics maps (and the
// JSON of results) without a conversion.
type Key = string

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
)
