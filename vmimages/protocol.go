package vmimages

import (
	"encoding/json"
	"strings"
)

// The guest-to-host protocol: Events, one JSON object per line, on one of
// two transports.
//
//   - The agent port (guests): request/response over a virtio-serial port
//     named AgentPortName (or the serial console as a fallback). The host
//     sends Requests; the agent answers each with exactly one Event
//     carrying the request's ID: "ok", "stats" or "error". The agent sends
//     one unsolicited "ready" event (ID 0) when it has finished booting.
//     Unknown ops and malformed lines get an "error" event, never
//     silence. Besides the ops below, the agent answers the ops its
//     Server.Ops add (workloads' guest sides), with an "ok" or "error"
//     event. Lines are EncodeEvent's; ParseEvent reads them.
//   - The console (a lab VM's /init, which has no agent, and a nested
//     guest's): an event stream on the serial console, one event per line
//     behind ConsolePrefix amid the kernel's and the inner command's
//     output, in the order of a lab's life: "init", "modules", "start",
//     "alive" (a heartbeat) while the inner command runs, "turn" once
//     when the inner run is ready to measure and waits for its turn (labs
//     side by side: the answer is a file, labvm.TurnEnv), "exit"; a nested
//     guest says "ready" instead of "start"; "error" ends either. Nothing
//     goes the other way on the console. Lines are EncodeConsoleEvent's;
//     ParseConsoleEvent reads them.

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

// Event kinds: the agent's (port) and lab init's (console). "ready" and
// "error" are both's: the same word on both transports.
const (
	EvReady   = "ready"   // agent: booted, or the reply to OpPing (BootMS, InitMS, Kernel); console: a nested guest is up (Uptime)
	EvStats   = "stats"   // agent: the reply to OpStats (Eth0, Links, Flows, ...)
	EvOK      = "ok"      // agent: a request was done (Msg: optional detail)
	EvError   = "error"   // agent: a request failed (Msg, Unsupported); console: /init failed (Msg)
	EvInit    = "init"    // console: /init started (Kernel)
	EvModules = "modules" // console: modules loaded (StepMS, Loaded, Missing, KVM, NoKVM, Checked)
	EvStart   = "start"   // console: the inner command started
	EvAlive   = "alive"   // console: heartbeat while the inner command runs
	EvExit    = "exit"    // console: the inner command exited (Code)
	// EvTurn (console) is the run inside a lab saying it is ready to
	// measure: its first guest is up and its first cell set up. When
	// the host runs labs side by side it pauses the lab and, on the
	// lab's turn, creates the file the run waits for (labvm.TurnEnv),
	// then lets it go on.
	EvTurn = "turn"
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

// Event is a guest-to-host message on either transport. Each field says
// which events carry it.
type Event struct {
	Ev     string  `json:"ev"`
	ID     uint64  `json:"id,omitempty"`
	BootMS int64   `json:"boot_ms,omitempty"` // agent ready: ms since the kernel started (/proc/uptime)
	InitMS int64   `json:"init_ms,omitempty"` // agent ready: ms since the kernel started when /init began
	Kernel string  `json:"kernel,omitempty"`  // agent ready, init: uname release
	Uptime float64 `json:"uptime,omitempty"`  // console, every event: guest seconds since boot (/proc/uptime)

	StepMS  int64    `json:"ms,omitempty"`      // modules: how long loading took, in ms
	Loaded  int      `json:"loaded,omitempty"`  // modules: modules loaded
	Missing []string `json:"missing,omitempty"` // modules: modules neither found nor built in
	KVM     string   `json:"kvm,omitempty"`     // modules: the KVM vendor module loaded (kvm_intel, kvm_amd)
	NoKVM   string   `json:"no_kvm,omitempty"`  // modules: why KVM modules were asked for and not loaded
	Checked []string `json:"checked,omitempty"` // modules: replaced modules found running as built
	Code    int      `json:"code,omitempty"`    // exit: the inner command's exit status

	Eth0      *IfStats            `json:"eth0,omitempty"`       // stats
	Links     map[string]*IfStats `json:"links,omitempty"`      // stats, with vnb.nic: every configured NIC (eth0 too) by MAC
	Flows     map[string]uint64   `json:"flows,omitempty"`      // stats, flow-count sink: UDP source port -> packets
	FlowDrops uint64              `json:"flow_drops,omitempty"` // stats, flow-count sink: packets the counter's socket dropped (not in Flows)
	XDPDrops  uint64              `json:"xdp_drops,omitempty"`  // stats, xdp-drop sink: packets dropped by the program
	Sink      string              `json:"sink,omitempty"`       // stats: the active sink
	UptimeMS  int64               `json:"uptime_ms,omitempty"`  // stats: guest clock when sampled

	Msg string `json:"msg,omitempty"` // error text (and optional detail on ok)
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

// ConsolePrefix starts every event line on the console transport.
const ConsolePrefix = "VNBLAB "

// agentMark is how an event's JSON begins on the agent port (Ev is
// Event's first field): ParseEvent skips what stands before it.
const agentMark = `{"ev":`

// EncodeEvent returns ev as one line of the agent port: its JSON and a
// newline.
func EncodeEvent(ev Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// EncodeConsoleEvent returns ev as a console line: a newline first (the
// prefix then starts a line even when the kernel's output left one
// open), ConsolePrefix, the JSON and a newline.
func EncodeConsoleEvent(ev Event) ([]byte, error) {
	b, err := EncodeEvent(ev)
	if err != nil {
		return nil, err
	}
	return append([]byte("\n"+ConsolePrefix), b...), nil
}

// ParseEvent returns the event on a line of the agent port, if it holds
// one. Text before the JSON object is skipped: on the serial console
// fallback, kernel output may share the line.
func ParseEvent(line string) (Event, bool) {
	i := strings.Index(line, agentMark)
	if i < 0 {
		return Event{}, false
	}
	return decodeEvent(line[i:])
}

// ParseConsoleEvent returns the event on a console line, if it holds
// one: the JSON object after ConsolePrefix, wherever the prefix stands on
// the line (console noise before it is skipped).
func ParseConsoleEvent(line string) (Event, bool) {
	i := strings.Index(line, ConsolePrefix)
	if i < 0 {
		return Event{}, false
	}
	return decodeEvent(line[i+len(ConsolePrefix):])
}

// decodeEvent decodes one JSON object into an Event; an object without
// "ev" is no event.
func decodeEvent(s string) (Event, bool) {
	var ev Event
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &ev); err != nil || ev.Ev == "" {
		return Event{}, false
	}
	return ev, true
}
