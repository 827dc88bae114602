// Package afxdp is the AF_XDP Tx workload: runner/afxdp's generator, in
// the harness's own process, sending UDP frames into the tap from one
// AF_XDP socket and one thread per tap queue, bound in copy or zero-copy
// mode. It is the experiment of the netdev series "tun: AF_XDP Tx
// zero-copy support": its table (SeriesTable, shared with the testpmd
// workload, the series' own generator) has the UDP sizes as rows and
// copy, zero-copy and the speedup as columns, one table per kernel.
//
// A zero-copy bind the kernel refuses (every stock tun: EOPNOTSUPP) is
// the cell's result, "n/a" with the kernel's reason, not a failure. The
// host needs AF_XDP sockets (the "AF_XDP" feature: doctor and preflight
// bind a copy and a zero-copy socket to a throwaway tap, afxdp.Probe).
package afxdp

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
	xdp "github.com/vnetbench/vnetbench/runner/afxdp"
)

// Workload is the AF_XDP Tx generator.
type Workload struct{}

func (Workload) Name() string { return "afxdp" }
func (Workload) Doc() string {
	return "AF_XDP Tx generator (in the harness's process): UDP frames into the tap from one AF_XDP socket and thread per tap queue, bound in copy or zero-copy mode"
}
func (Workload) New() workload.Config { return &Config{} }

// The bind modes (the mode key's values).
const (
	ModeCopy     = string(xdp.Copy)
	ModeZeroCopy = string(xdp.ZeroCopy)
)

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
		FrameSize(&c.PktSize, "pkt_size"),
		ModeKey(&c.Mode, "mode"),
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

// FrameSize is the pkt_size key of the AF_XDP series' workloads: a frame
// length from Ethernet+IPv4+UDP headers (42 bytes) up to one UMEM chunk,
// an axis, default 64.
func FrameSize(p *int, key string) *schema.Leaf[int] {
	return schema.Value(p, key, frameSizeKind).Default(64).Unit("bytes").Axis().Short("pkt").
		Doc("frame length without FCS: Ethernet + IPv4 + UDP headers (42 bytes) + payload, as testpmd's --txpkts; the series' \"UDP\" sizes are 64, 512, 1024")
}

var frameSizeKind = schema.Kind[int]{
	Type: "integer",
	Parse: func(n *yaml.Node, c *schema.Ctx) (int, string) {
		x, msg := schema.ParseInt(n, c, "")
		switch {
		case msg != "":
			return 0, msg
		case x < xdp.HeaderLen:
			return 0, fmt.Sprintf("%s: %d bytes is below the Ethernet (14) + IPv4 (20) + UDP (8) headers; use %d or more", c.Path, x, xdp.HeaderLen)
		case x > xdp.MaxFrameSize:
			return 0, fmt.Sprintf("%s: %d bytes is above one AF_XDP UMEM chunk; use %d or less", c.Path, x, xdp.MaxFrameSize)
		}
		return int(x), ""
	},
	Format: strconv.Itoa,
}

// ModeKey is the mode key of the AF_XDP series' workloads: copy or
// zerocopy, an axis, default copy.
func ModeKey(p *string, key string) *schema.Leaf[string] {
	return schema.Enum(p, key, ModeCopy, ModeZeroCopy).Default(ModeCopy).Axis().Bare().
		Doc("AF_XDP bind mode: copy (XDP_COPY: the kernel copies each frame into an skb) or zerocopy (XDP_ZEROCOPY: the driver sends from the UMEM; stock tun refuses it, the cell is then n/a)")
}

// Resolve: a bound on the run, and the tap has the queues.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration == 0 && c.Count == 0 {
		return r.Errorf("duration", "generator.afxdp: duration and count are both 0; set one (the generator sends until it reaches it)")
	}
	return CheckQueues(r, c.FirstQueue, c.Threads)
}

// CheckQueues refuses threads on tap queues the cell's tap does not have
// (queues defaults to 1; queues: auto gives it first_queue + threads).
func CheckQueues(r *workload.Resolver, first, threads int) error {
	q := r.Cell.Queues
	if q == 0 || first+threads <= q {
		return nil
	}
	key := "threads"
	if first > 0 {
		key = "first_queue"
	}
	have := "queue 0 only"
	if q > 1 {
		have = fmt.Sprintf("queues 0-%d", q-1)
	}
	return r.Errorf(key, "%s: threads %d from first_queue %d send on tap queue %d, but queues is %d (the tap has %s; one AF_XDP socket per queue); set queues: %d or queues: auto",
		r.Key(key), threads, first, first+threads-1, q, have, first+threads)
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
	return CheckThreadCPUs(h, "afxdp", c.Threads)
}

// CheckThreadCPUs refuses more threads than CPUs for the series'
// workloads, whose threads each keep a CPU busy: name is the workload
// (its section generator.NAME).
func CheckThreadCPUs(h *workload.HostCheck, name string, threads int) error {
	if threads > h.NumCPU {
		return h.Errorf("threads", "generator.%s.threads %d is more than the machine has: %s; use threads: %d or fewer", name, threads, h.Have, h.NumCPU)
	}
	return nil
}

// Metrics: Transmitted, per thread, over the generator's own run time.
func (Workload) Metrics() []workload.Metric {
	return []workload.Metric{workload.TxPPS, workload.TxPPSThread}
}

// Table: the series' table.
func (Workload) Table() workload.Table {
	return SeriesTable("afxdp",
		"Transmitted = AF_XDP completions (frames the kernel took from the Tx rings and finished with) / the generator's run time, from its first submit to its last completion")
}
