// Package tcprr is the TCP request/response workload, measured the way
// netperf's TCP_RR is used on netdev: one TCP connection from the host's
// run namespace to the guest, one transaction in flight (a request of
// size bytes, the guest echoes it, the host reads the whole response),
// back to back for the window. It reports transactions per second and the
// round trips' percentiles, first alone and then (bulk: tcp) with a bulk
// TCP stream to the guest beside it, so one sample holds the latency of
// small requests both idle and under load.
//
// Its guest side is the agent op "tcp_rr" (GuestOps): an echo server and
// a discard server for the bulk stream, on blocking sockets and threads
// of their own. Its host side is the Generator: the client and the bulk
// senders, on locked OS threads with blocking system calls (no Go
// poller between a read and its reply), their sockets created inside the
// run's namespace. A round trip is timed in user space (CLOCK_MONOTONIC
// before the write, after the last read), as netperf and sockperf time
// theirs; TestAgreesWithSockperf checks it against sockperf ping-pong.
package tcprr

import (
	"fmt"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Bulk loads.
const (
	BulkNone = "none"
	BulkTCP  = "tcp"
)

// Ramp is how long the bulk stream runs before the loaded phase starts:
// TCP's slow start and the first queues filling are left out.
const Ramp = time.Second

// Workload is tcp_rr.
type Workload struct{}

func (Workload) Name() string { return "tcp_rr" }
func (Workload) Doc() string {
	return "TCP request/response (netperf TCP_RR style, in the harness's process): one connection to the guest agent's echo server, one transaction in flight; transactions/s and RTT percentiles alone and beside a bulk TCP stream"
}
func (Workload) New() workload.Config { return &Config{} }

// Config is generator.tcp_rr of a cell.
type Config struct {
	Duration    time.Duration // per phase
	Size        int           // request and response bytes
	Bulk        string
	BulkStreams int
	Port        int // the echo server's; the discard server's is Port+1
}

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		schema.Duration(&c.Duration, "duration").Default(5 * time.Second).
			Doc("how long each phase runs: the transactions alone, then (bulk: tcp) the transactions beside the bulk stream"),
		schema.Int(&c.Size, "size", 1, 65536).Default(1).Unit("bytes").Axis().Short("s").
			Doc("request and response size (netperf TCP_RR's -r N,N; its default is 1)"),
		schema.Enum(&c.Bulk, "bulk", BulkTCP, BulkNone).Default(BulkTCP).Axis().
			Doc("tcp = after the phase alone, a second phase with bulk TCP streams from the same namespace to the guest beside the transactions (their first second left out); none = the phase alone only"),
		schema.Int(&c.BulkStreams, "bulk_streams", 1, 16).Default(1).Unit("streams").
			Doc("bulk TCP connections, one sending thread each"),
		schema.Int(&c.Port, "port", 1024, 65534).Default(7010).Unit("port").
			Doc("the guest's echo server's TCP port; its discard server (the bulk streams') listens on port+1"),
	}
}

// Resolve: a phase needs a length.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration <= 0 {
		return r.Errorf("duration", "generator.tcp_rr.duration must be positive, got %v; use e.g. duration: 5s", c.Duration)
	}
	if r.Given("bulk_streams") && c.Bulk == BulkNone && len(r.AxisValues("bulk")) == 0 {
		r.Warnf("bulk_streams", "generator.tcp_rr.bulk_streams %d has no effect with bulk: none", c.BulkStreams)
	}
	return nil
}

// phases is 1 (alone) or 2 (alone, then beside the bulk stream).
func (c *Config) phases() int {
	if c.Bulk == BulkTCP {
		return 2
	}
	return 1
}

// Length: the phases and the bulk stream's ramp.
func (c *Config) Length() (time.Duration, bool) {
	d := time.Duration(c.phases()) * c.Duration
	if c.Bulk == BulkTCP {
		d += Ramp
	}
	return d, true
}

// NamePart is "tcp_rr-s1" (the size); the bulk axis adds its value.
func (c *Config) NamePart() (string, []string) {
	return "tcp_rr-s" + strconv.Itoa(c.Size), []string{"size"}
}

// HostThreads: the client's thread and the bulk senders', unbound.
func (c *Config) HostThreads() []workload.HostThread {
	out := []workload.HostThread{{Name: "tcp_rr client", CPU: -1}}
	if c.Bulk == BulkTCP {
		for i := range c.BulkStreams {
			out = append(out, workload.HostThread{Name: "tcp_rr bulk " + strconv.Itoa(i), CPU: -1})
		}
	}
	return out
}

// Path: the transactions and the bulk streams are TCP sockets, through
// the tap's qdisc.
func (c *Config) Path() string { return "tcp sockets, through the qdisc" }

// Target: the client's and bulk senders' threads, in the harness.
func (Workload) Target() string { return "tcp_rr" }

// The workload's metrics: the phase alone, the phase beside the bulk
// stream, the stream's rate.
var (
	TPS = metric.Metric{Key: "rr_tps", Unit: "tps", Better: metric.HigherIsBetter, Rate: true,
		Description: "TCP request/response transactions per second, one in flight, without a bulk load: round trips completed / the phase's length"}
	LoadTPS = metric.Metric{Key: "rr_load_tps", Unit: "tps", Better: metric.HigherIsBetter, Rate: true,
		Description: "TCP request/response transactions per second beside the bulk TCP stream (bulk: tcp)"}
	BulkBPS = metric.Metric{Key: metric.RRBulkBPS, Unit: "bit/s", Better: metric.HigherIsBetter, Rate: true,
		Description: "the bulk TCP streams' rate during the loaded phase: bytes the guest's discard server received x 8 / the time between the two readings"}
)

// percentiles are the RTT percentiles of each phase: key suffix, q,
// label.
var percentiles = []struct {
	suffix string
	q      float64
	label  string
}{{"p50", 0.50, "p50"}, {"p99", 0.99, "p99"}, {"p999", 0.999, "p99.9"}}

func rttKey(loaded bool, suffix string) metric.Key {
	if loaded {
		return metric.Key("rr_load_" + suffix + "_s")
	}
	return metric.Key("rr_" + suffix + "_s")
}

// Metrics: transactions/s and RTT percentiles per phase, and the bulk
// stream's rate.
func (Workload) Metrics() []metric.Metric {
	out := []metric.Metric{TPS}
	for _, loaded := range []bool{false, true} {
		if loaded {
			out = append(out, LoadTPS)
		}
		for _, p := range percentiles {
			phase := "without a bulk load"
			if loaded {
				phase = "beside the bulk TCP stream"
			}
			out = append(out, metric.Metric{Key: rttKey(loaded, p.suffix), Unit: "s", Better: metric.LowerIsBetter,
				Description: fmt.Sprintf("%s of the TCP request/response round trips %s (from before the request's write to the end of the response's read; the order statistic, no interpolation)", p.label, phase)})
		}
	}
	return append(out, BulkBPS)
}

// Table: one row block per backend: the phase alone, then under the bulk
// stream where the cells have it.
func (Workload) Table() workload.Table {
	return workload.Table{Headline: TPS.Key, ThreadsKey: "bulk_streams", ThreadsNoun: "bulk streams",
		Rows: func(_ int, seen workload.Seen) []workload.TableRow {
			rows := []workload.TableRow{{Key: TPS.Key, Label: "Transactions/s"}}
			for _, p := range percentiles {
				rows = append(rows, workload.TableRow{Key: rttKey(false, p.suffix), Label: "RTT " + p.label, Scale: units.Latency})
			}
			if !seen.Positive(LoadTPS.Key) {
				return rows
			}
			rows = append(rows, workload.TableRow{Key: LoadTPS.Key, Label: "Transactions/s, bulk"})
			for _, p := range percentiles {
				rows = append(rows, workload.TableRow{Key: rttKey(true, p.suffix), Label: "RTT " + p.label + ", bulk", Scale: units.Latency})
			}
			return append(rows, workload.TableRow{Key: BulkBPS.Key, Label: "Bulk throughput"})
		},
		Notes: func(_ int, seen workload.Seen) []string {
			note := "Transactions/s = TCP request/response round trips of one connection, one in flight, / the phase's length; RTT = each round trip from before the request's write to the end of the response's read (user space, as netperf TCP_RR and sockperf ping-pong)"
			if seen.Positive(LoadTPS.Key) {
				note += fmt.Sprintf("; \", bulk\" = the same beside bulk TCP streams to the guest from the same namespace, after %v of ramp; Bulk throughput = the bytes the guest received from them x 8 / that phase", Ramp)
			}
			return []string{note}
		},
		Context: []workload.ContextKey{{Key: "size", Format: func(v string) string { return units.Bytes(v) + " requests and responses" }}},
	}
}
