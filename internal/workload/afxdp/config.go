// Package afxdp is the AF_XDP Tx workload: internal/xsk's generator, in
// the harness's own process, sending UDP frames into the tap from one
// AF_XDP socket and one thread per tap queue, bound in copy or zero-copy
// mode. It is the experiment of the netdev series "tun: AF_XDP Tx
// zero-copy support": its table (series.Table, shared with the testpmd
// workload, the series' own generator) has the UDP sizes as rows and
// copy, zero-copy and the speedup as columns, one table per kernel.
//
// A zero-copy bind the kernel refuses (every stock tun: EOPNOTSUPP) is
// the cell's result, "n/a" with the kernel's reason, not a failure. The
// host needs AF_XDP sockets (the "AF_XDP" feature: doctor and preflight
// bind a copy and a zero-copy socket to a throwaway tap, afxdp.Probe).
package afxdp

import (
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
)

// Workload is the AF_XDP Tx generator.
type Workload struct{}

func (Workload) Name() string { return "afxdp" }
func (Workload) Doc() string {
	return "AF_XDP Tx generator (in the harness's process): UDP frames into the tap from one AF_XDP socket and thread per tap queue, bound in copy or zero-copy mode"
}
func (Workload) New() workload.Config { return &Config{} }

// Config is generator.afxdp of a cell.
type Config struct {
	PktSize    int
	Mode       string
	Threads    int
	FirstQueue int
	Duration   time.Duration
	Count      uint64 // frames per thread; 0 = until Duration
	Batch      int
}

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		series.FrameSize(&c.PktSize, "pkt_size"),
		series.ModeKey(&c.Mode, "mode"),
		schema.Int(&c.Threads, "threads", 1, 64).Default(1).Unit("threads").Axis().Short("t").
			Doc("sending threads, each with its own AF_XDP socket and UMEM on one tap queue (first_queue + i); more than one needs queues: auto or a queue count"),
		schema.Int(&c.FirstQueue, "first_queue", 0, 255).Default(0).Unit("queue index").
			Doc("tap queue of the first thread; the threads use queues first_queue .. first_queue+threads-1"),
		schema.Duration(&c.Duration, "duration").Default(10 * time.Second).
			Doc("how long each thread sends, from its first frame (0 = until count)"),
		schema.Int(&c.Count, "count", 0, schema.NoMax).Default(0).Unit("frames per thread").
			Doc("frames each thread sends; 0 = until duration"),
		schema.Int(&c.Batch, "batch", 1, 2048).Default(xdp.DefaultBatch).Unit("frames").
			Doc("descriptors put on the Tx ring per kick (sendto)"),
	}
}

// Resolve: a bound on the run, and the tap has the queues.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration == 0 && c.Count == 0 {
		return r.Errorf("duration", "generator.afxdp: duration and count are both 0; set one (the generator sends until it reaches it)")
	}
	return series.CheckQueues(r, c.FirstQueue, c.Threads)
}

func (c *Config) Length() (time.Duration, bool) {
	if c.Count > 0 {
		return c.Duration, false
	}
	return c.Duration, true
}

var _ workload.Counter = (*Config)(nil)

// Packets: frames per thread times threads.
func (c *Config) Packets() uint64 { return c.Count * uint64(max(c.Threads, 1)) }

// Within drops the count and sends for d.
func (c *Config) Within(d time.Duration) []workload.Setting {
	return []workload.Setting{{Key: "count", Value: "0"}, {Key: "duration", Value: schema.FormatDuration(d)}}
}

func (c *Config) NamePart() (string, []string) {
	return "afxdp-t" + strconv.Itoa(c.Threads), []string{"threads"}
}

// AutoQueues: one tap queue per thread, from first_queue.
func (c *Config) AutoQueues() int { return c.FirstQueue + c.Threads }

// CPUsNeeded: one CPU per sending thread.
func (c *Config) CPUsNeeded() int { return c.Threads }

// CheckCPUs refuses more sending threads than CPUs.
func (c *Config) CheckCPUs(h *workload.HostCheck) error {
	return series.CheckThreadCPUs(h, "afxdp", c.Threads)
}

// Metrics: Transmitted, per thread, over the generator's own run time.
func (Workload) Metrics() []metric.Metric {
	return []metric.Metric{workload.TxPPS, workload.TxPPSThread}
}

// Table: the series' table.
func (Workload) Table() workload.Table {
	return series.Table("afxdp",
		"Transmitted = AF_XDP completions (frames the kernel took from the Tx rings and finished with) / the generator's run time, from its first submit to its last completion")
}
