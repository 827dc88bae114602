// Package iperf3 is the iperf3 workload: an iperf3 client in the run's
// network namespace against an iperf3 server the guest agent starts.
package iperf3

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Workload is iperf3.
type Workload struct{}

func (Workload) Name() string { return "iperf3" }
func (Workload) Doc() string {
	return "iperf3 from the host namespace to an iperf3 server in the guest"
}
func (Workload) New() workload.Config { return &Config{} }

// Config is generator.iperf3 of a cell.
type Config struct {
	Duration time.Duration
	Parallel int
	Reverse  bool
	Omit     time.Duration
	Protocol string // tcp or udp
	Bitrate  string // -b; "" = iperf3's default
	// Clients is how the Parallel streams are sent: ClientsOne (one
	// iperf3 -c -P N) or ClientsPerStream (N iperf3 clients with one
	// stream each, to N servers in the guest).
	Clients string
}

// The ways the streams are sent (generator.iperf3.clients).
const (
	ClientsOne       = "one"
	ClientsPerStream = "per-stream"
	// maxPerStream bounds the guest's servers (ports 5201 on).
	maxPerStream = 32
)

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		schema.Duration(&c.Duration, "duration").Default(10 * time.Second).Doc("test length (-t)"),
		schema.Int(&c.Parallel, "parallel", 1, 128).Default(1).Unit("streams").Axis().Short("p").
			Doc("parallel streams (-P)"),
		schema.Bool(&c.Reverse, "reverse").Default(false).Axis().Name(func(v string) string {
			if v == "true" {
				return "reverse"
			}
			return "forward"
		}).Doc("guest sends to host (-R)"),
		schema.Duration(&c.Omit, "omit").Default(0).Doc("seconds at the start iperf3 leaves out of its result (-O)"),
		schema.Enum(&c.Protocol, "protocol", "tcp", "udp").Default("tcp").Axis().Bare().Doc("transport"),
		schema.Enum(&c.Clients, "clients", ClientsOne, ClientsPerStream).Default(ClientsOne).Axis().Name(func(v string) string {
			return "clients-" + v
		}).Doc("one: a single `iperf3 -c -P N` (iperf3 before 3.16, Debian 12's 3.12 among them, sends all N streams from one thread); " +
			"per-stream: N iperf3 clients with one stream each, to N guest servers on ports 5201 on: N sending threads with any iperf3 (the netdev thread's \"4 iperf3 client threads\")"),
		schema.String(&c.Bitrate, "bitrate", "bitrate (`500M`, `1G`)", checkBitrate).Axis().Short("bitrate").
			Doc("target bitrate (-b), e.g. 1G or 500M; unset = iperf3's default (unlimited TCP, 1M UDP)"),
	}
}

var bitrateRE = lazyre.New(`^[0-9]+(\.[0-9]+)?[KMGTkmgt]?$`)

func checkBitrate(s string) string {
	if !bitrateRE().MatchString(s) {
		return fmt.Sprintf("bad iperf3 bitrate %q; use a number with an optional K, M, G or T suffix such as 500M", s)
	}
	return ""
}

// Resolve: iperf3 takes whole seconds.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration == 0 {
		return r.Errorf("duration", "generator.iperf3.duration must be above 0, e.g. 10s")
	}
	if c.Duration%time.Second != 0 || c.Omit%time.Second != 0 {
		key := "duration"
		if c.Duration%time.Second == 0 {
			key = "omit"
		}
		return r.Errorf(key, "%s: iperf3 takes whole seconds; use e.g. 10s", r.Key(key))
	}
	if c.Clients == ClientsPerStream && c.Parallel > maxPerStream {
		return r.Errorf("parallel", "%s: %d streams with clients: per-stream start %d iperf3 servers in the guest; use at most %d, or clients: one", r.Key("parallel"), c.Parallel, c.Parallel, maxPerStream)
	}
	if c.Protocol == "udp" && c.Bitrate == "" {
		r.Warnf("protocol", "iperf3 UDP without bitrate sends at iperf3's default 1 Mbit/s; set generator.iperf3.bitrate (e.g. 10G)")
	}
	return nil
}

func (c *Config) Length() (time.Duration, bool) { return c.Duration + c.Omit, true }

// NamePart is "iperf3-pN".
func (c *Config) NamePart() (string, []string) {
	return "iperf3-p" + strconv.Itoa(c.Parallel), []string{"parallel"}
}

// processes is how many iperf3 clients the cell runs.
func (c *Config) processes() int {
	if c.Clients == ClientsPerStream {
		return max(1, c.Parallel)
	}
	return 1
}

// HostThreads: one iperf3 client per process (iperf3 before 3.16 runs a
// client's streams in one thread; the version is not known at plan time).
func (c *Config) HostThreads() []workload.HostThread {
	out := make([]workload.HostThread, c.processes())
	for i := range out {
		out[i] = workload.HostThread{Name: "iperf3 client " + strconv.Itoa(i), CPU: -1}
	}
	if len(out) == 1 {
		out[0].Name = "generator"
	}
	return out
}

// Metrics: the receiver's throughput, the sender's retransmits and its
// CPU, and a UDP receiver's jitter and loss.
func (Workload) Metrics() []metric.Metric {
	return []metric.Metric{
		workload.ThroughputBPS,
		{Key: metric.Retransmits, Unit: "count", Better: metric.LowerIsBetter, Description: "iperf3 sender TCP retransmits"},
		{Key: metric.Iperf3SRTTS, Unit: "s", Better: metric.LowerIsBetter, Description: "median over iperf3's intervals and streams of the TCP sender's smoothed RTT (the -J intervals' rtt, the kernel's srtt of the load's own flow): a second view beside the latency probe"},
		{Key: metric.Iperf3JitterS, Unit: "s", Better: metric.LowerIsBetter, Description: jitterDef},
		{Key: metric.Iperf3LostFrac, Unit: "fraction", Better: metric.LowerIsBetter, Description: lostDef},
		{Key: "iperf3_host_cpu_frac", Unit: "fraction", Better: metric.LowerIsBetter, Description: "iperf3 client (sender) CPU time over the test, as a fraction of one CPU (iperf3 host_total)", Diagnostic: true,
			Header: "iperf3 CPU", HeaderNote: "(the iperf3 client's CPU time over its test, % of one CPU)"},
	}
}

// What iperf3_jitter_s and iperf3_lost_frac count, for their metrics and
// the table's footnote.
const (
	jitterDef = "the UDP receiver's jitter (iperf3's sum_received jitter_ms; the receiver is the guest's server, with reverse the host's client): " +
		"RFC 3550's interarrival jitter, a running estimate J += (|D| - J)/16 over every datagram received, D the change in transit time " +
		"from the sender's timestamp (microseconds) to arrival; the estimate at the end of the test, not a mean over it; " +
		"the mean over streams and clients; UDP only"
	lostDef = "UDP datagrams the receiver counted lost (gaps in the sequence numbers it saw, less those that arrived out of order; " +
		"datagrams after the last one it received are not counted) over the datagrams the sender sent, over iperf3's test time " +
		"(iperf3's lost_percent / 100), the total over all streams and clients; UDP only"
)

// Table: Throughput and, where measured, Retransmits (TCP) or Jitter and
// Datagrams lost (UDP), and Lost where the tap dropped packets, by
// streams.
func (Workload) Table() workload.Table {
	return workload.Table{Headline: metric.ThroughputBPS, ThreadsKey: "parallel", ThreadsNoun: "streams",
		// The header says how the streams were sent: iperf3 before 3.16
		// sends a client's streams from one thread.
		Context: []workload.ContextKey{{Key: "clients", Format: func(v string) string {
			if v == ClientsPerStream {
				return "one iperf3 client process per stream"
			}
			return ""
		}}},
		// Lost where the tap dropped some (a UDP stream faster than the
		// guest reads: 60 Kpps lost beside 19 Kpps received under TCG),
		// which only the latency table showed before.
		Rows: func(_ int, seen workload.Seen) []workload.TableRow {
			rows := []workload.TableRow{{Key: metric.ThroughputBPS, Label: "Throughput"}}
			if seen.Measured(metric.Retransmits) { // TCP: UDP has none
				rows = append(rows, workload.TableRow{Key: metric.Retransmits, Label: "Retransmits"})
			}
			if seen.Measured(metric.Iperf3JitterS) { // UDP: TCP has none
				rows = append(rows, workload.TableRow{Key: metric.Iperf3JitterS, Label: "Jitter", Scale: units.Latency})
			}
			if seen.Measured(metric.Iperf3LostFrac) {
				rows = append(rows, workload.TableRow{Key: metric.Iperf3LostFrac, Label: "Datagrams lost", Scale: units.Percent})
			}
			if seen.Positive(metric.LostPPS) {
				rows = append(rows, workload.TableRow{Key: metric.LostPPS, Label: "Lost"})
			}
			return rows
		},
		// What each row counts, over which interval, and that both are
		// totals over the streams (Run adds the clients up).
		Notes: func(_ int, seen workload.Seen) []string {
			note := "Throughput = bits/s the receiver counted over iperf3's test time (its end sum_received), the total over all streams and clients"
			if seen.Measured(metric.Retransmits) {
				note = "Throughput = bits/s the receiver counted over iperf3's test time (its end sum_received), Retransmits = the sender's TCP retransmits over the whole test, a count per run (not per second); both the total over all streams and clients"
			}
			notes := []string{note}
			if n := udpNote(seen); n != "" {
				notes = append(notes, n)
			}
			if seen.Positive(metric.LostPPS) {
				notes = append(notes, "Lost = packets dropped (the tap's tx_dropped) per second of the measurement window")
			}
			return notes
		}}
}

// udpNote defines the UDP rows the table shows, or is "".
func udpNote(seen workload.Seen) string {
	var defs []string
	if seen.Measured(metric.Iperf3JitterS) && seen.Shows(metric.Iperf3JitterS) {
		defs = append(defs, "Jitter = the receiver's RFC 3550 interarrival jitter as iperf3 reports it at the end of its test "+
			"(a running estimate, J += (|D| - J)/16 per datagram, D = the change in transit time), the mean over streams and clients")
	}
	if seen.Measured(metric.Iperf3LostFrac) && seen.Shows(metric.Iperf3LostFrac) {
		defs = append(defs, "Datagrams lost = datagrams the receiver never saw (gaps in their sequence numbers, late ones subtracted) "+
			"as a share of the datagrams sent over iperf3's test time, the total over all streams and clients")
	}
	if len(defs) == 0 {
		return ""
	}
	return strings.Join(defs, "; ") + "; the receiver is the guest's iperf3 server, with reverse the host's client"
}

// Path: iperf3's TCP or UDP socket sends through the tap's qdisc.
func (c *Config) Path() string { return c.Protocol + " socket, through the qdisc" }
