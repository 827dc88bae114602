// Package trafgen is the trafgen workload: netsniff-ng's trafgen writing
// UDP frames into the tap through a packet socket, from the run's network
// namespace.
package trafgen

import (
	"fmt"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Workload is trafgen.
type Workload struct{}

func (Workload) Name() string { return "trafgen" }
func (Workload) Doc() string {
	return "netsniff-ng trafgen writing into the tap through a packet socket"
}
func (Workload) New() workload.Config { return &Config{} }

// Config is generator.trafgen of a cell.
type Config struct {
	Duration time.Duration
	PktSize  int
	CPUs     int
	Rate     string // trafgen --rate; "" = as fast as possible
}

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		schema.Duration(&c.Duration, "duration").Default(10 * time.Second).Doc("how long trafgen sends"),
		schema.Int(&c.PktSize, "pkt_size", 42, 9216).Default(60).Unit("bytes").Axis().Short("pkt").
			Doc("frame size without FCS"),
		schema.Int(&c.CPUs, "cpus", 1, 1024).Default(1).Unit("count").Axis().Short("cpus").
			Doc("trafgen worker processes (--cpus)"),
		schema.String(&c.Rate, "rate", "rate (`10kpps`, `100Mbit`)", checkRate).Axis().Short("rate").
			Doc("send rate, e.g. 10kpps or 100Mbit (trafgen --rate); unset = as fast as possible"),
	}
}

var rateRE = lazyre.New(`^[0-9]+(\.[0-9]+)?(pps|kpps|Mpps|B|kB|MB|GB|KiB|MiB|GiB|bit|kbit|Mbit|Gbit)$`)

func checkRate(s string) string {
	if !rateRE().MatchString(s) {
		return fmt.Sprintf("bad trafgen rate %q; use a number with pps, kpps, Mpps, bit, kbit, Mbit, Gbit, B, kB, MB, GB such as 10kpps", s)
	}
	return ""
}

// Resolve: trafgen runs until stopped, so it needs a duration.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration == 0 {
		return r.Errorf("duration", "generator.trafgen.duration must be above 0 (trafgen runs until stopped)")
	}
	return nil
}

func (c *Config) Length() (time.Duration, bool) { return c.Duration, true }

func (c *Config) NamePart() (string, []string) { return "trafgen", nil }

// CPUsNeeded: one CPU per worker.
func (c *Config) CPUsNeeded() int { return c.CPUs }

// HostThreads: one busy worker process per --cpus.
func (c *Config) HostThreads() []workload.HostThread {
	var out []workload.HostThread
	for i := range max(c.CPUs, 1) {
		out = append(out, workload.HostThread{Name: "trafgen worker " + strconv.Itoa(i), CPU: -1})
	}
	return out
}

// CheckCPUs refuses more workers than CPUs.
func (c *Config) CheckCPUs(h *workload.HostCheck) error {
	if c.CPUs > h.NumCPU {
		return h.Errorf("cpus", "generator.trafgen.cpus %d is more than the machine has: %s; use cpus: %d or fewer", c.CPUs, h.Have, h.NumCPU)
	}
	return nil
}

// Metrics: tx_pps is trafgen's "packets outgoing" over its run time.
func (Workload) Metrics() []metric.Metric { return []metric.Metric{workload.TxPPS} }

// Table: Transmitted and Lost, as pktgen's; Lost reads Refused (Resends).
func (Workload) Table() workload.Table { return workload.PacketTable }

// Resends: a frame the tap refuses fails trafgen's send (tun returns
// NET_XMIT_DROP, counted in tx_dropped), and the kernel sets it back to
// TP_STATUS_SEND_REQUEST in trafgen's TX ring (tpacket_snd), so the next
// send sends it again; trafgen's count, the tap's tx_packets and what the
// guest receives agree.
func (Workload) Resends() string {
	return "a frame the full tap refuses stays in trafgen's TX ring and is sent again"
}

// Path: trafgen's AF_PACKET socket sets PACKET_QDISC_BYPASS (it has no
// --qdisc-path here), so its packets go past the tap's qdisc.
func (c *Config) Path() string { return "AF_PACKET with PACKET_QDISC_BYPASS, past the qdisc" }
