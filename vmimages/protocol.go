package vmimages

// The agent protocol: one JSON object per line in each direction over a
// virtio-serial port named AgentPortName (or the serial console as a
// fallback). The host sends Requests; the agent answers each with exactly
// one Event carrying the request's ID: "ok", "stats" or "error". The agent
// sends one unsolicited "ready" event (ID 0) when it has finished booting.
// Unknown ops and malformed lines get an "error" event, never silence.
// Besides the ops below, the agent answers the ops its Server.Ops add
// (workloads' guest sides), with an "ok" or "error" event.

// AgentPortName is the name of the virtio-serial port the agent talks on
// (QEMU: -device virtserialport,chardev=agent,name=vnb.agent).
const AgentPortName = "vnb.agent"

// Ops the agent understands.
const (
	OpStats    = "stats"    // -> EvStats
	OpSink     = "sink"     // Kind SinkStack | SinkXDPDrop | SinkFlowCount -> EvOK
	OpPoweroff = "poweroff" // -> EvOK, then the guest powers off
	OpPing     = "ping"     // -> EvReady again (for a host that connected late)
	// OpReflect runs the latency probe's UDP reflector: Action "start"
	// with Args [PORT] (every datagram to PORT goes back to its sender
	// unchanged), "stop" (EvOK, Msg "reflected N").
	OpReflect = "reflect"
)

// Event kinds the agent sends.
const (
	EvReady = "ready"
	EvStats = "stats"
	EvOK    = "ok"
	EvError = "error"
)

// Sink kinds: what the guest does with received packets.
const (
	SinkStack     = "stack"      // the kernel stack (default)
	SinkXDPDrop   = "xdp-drop"   // an XDP program drops (and counts) everything on eth0
	SinkFlowCount = "flow-count" // an AF_PACKET socket counts IPv4 UDP packets per source port
)

// Request is a host-to-guest message.
type Request struct {
	ID     uint64 `json:"id,omitempty"`
	Op     string `json:"op"`
	Action string `json:"action,omitempty"` // a workload's op: "start" | "stop", ...
	Kind   string `json:"kind,omitempty"`   // sink kind
	// Args are the arguments of a workload's own op (agent.Server.Ops).
	Args []string `json:"args,omitempty"`
	// Retry marks a request sent again, same ID and all, because its
	// answer did not come in time: the request or its reply may have
	// been lost on the port (seen under TCG in TCG). The agent answers a
	// retry of the request it handled last with that request's reply
	// again and does not do it twice; a retry of any other request (the
	// first copy was lost) is done as the request itself.
	Retry bool `json:"retry,omitempty"`
}

// Event is a guest-to-host message.
type Event struct {
	Ev     string `json:"ev"`
	ID     uint64 `json:"id,omitempty"`
	BootMS int64  `json:"boot_ms,omitempty"` // ready: ms since the kernel started (/proc/uptime)
	InitMS int64  `json:"init_ms,omitempty"` // ready: ms since the kernel started when /init began
	Kernel string `json:"kernel,omitempty"`  // ready: uname release

	Eth0      *IfStats            `json:"eth0,omitempty"`       // stats
	Links     map[string]*IfStats `json:"links,omitempty"`      // stats, with vnb.nic: every configured NIC (eth0 too) by MAC
	Flows     map[string]uint64   `json:"flows,omitempty"`      // stats, flow-count sink: UDP source port -> packets
	FlowDrops uint64              `json:"flow_drops,omitempty"` // stats, flow-count sink: packets the counter's socket dropped (not in Flows)
	XDPDrops  uint64              `json:"xdp_drops,omitempty"`  // stats, xdp-drop sink: packets dropped by the program
	Sink      string              `json:"sink,omitempty"`       // stats: the active sink
	UptimeMS  int64               `json:"uptime_ms,omitempty"`  // stats: guest clock when sampled

	Msg string `json:"msg,omitempty"` // error (and optional detail on ok)
	// Unsupported marks an error event whose op this guest's kernel
	// cannot do (Msg is the reason, e.g. "this kernel has no vsock sockmap
	// support (Linux 6.4+)"): the host reports the cell as n/a.
	Unsupported bool `json:"unsupported,omitempty"`
}

// IfStats are a network interface's counters (/sys/class/net/IF/statistics).
type IfStats struct {
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	RxDropped uint64 `json:"rx_dropped"`
	RxErrors  uint64 `json:"rx_errors"`
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxDropped uint64 `json:"tx_dropped"`
	TxErrors  uint64 `json:"tx_errors"`
}
