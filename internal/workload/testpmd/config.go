// Package testpmd is the testpmd workload: DPDK's dpdk-testpmd in txonly
// forwarding mode on the AF_XDP PMD (net_af_xdp), sending into the tap,
// the generator of the netdev series "tun: AF_XDP Tx zero-copy support".
// One --vdev (an AF_XDP socket on one tap queue) and one forwarding
// lcore per thread; no hugepages (--no-huge -m 512); interactive mode
// driven over stdin: Prepare runs it to its prompt, perf attaches, and
// the traffic starts with `start` (Start) and ends with `stop` at the
// window's end (a workload.Preparer).
//
// testpmd's PMD cannot force zero-copy: without force_copy=1 the kernel
// tries zero-copy and falls back to copy without a word. A zerocopy cell
// therefore asks the kernel first (xdp.HostCapability, a bind on a
// throwaway tap) and is "n/a" with the kernel's reason where zero-copy
// binds are refused; copy cells pass force_copy=1. Its table is the AF_XDP
// workload's (series.Table).
package testpmd

import (
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
)

// Workload is dpdk-testpmd.
type Workload struct{}

func (Workload) Name() string { return "testpmd" }
func (Workload) Doc() string {
	return "DPDK dpdk-testpmd txonly on the AF_XDP PMD (net_af_xdp) into the tap, no hugepages (needs dpdk-dev and librte-net-af-xdp23)"
}
func (Workload) New() workload.Config { return &Config{} }

// Config is generator.testpmd of a cell.
type Config struct {
	PktSize    int
	Mode       string
	Threads    int
	FirstQueue int
	Duration   time.Duration
	// pin is pin.generator (nil = the lcores float over every CPU).
	pin []int
}

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		series.FrameSize(&c.PktSize, "pkt_size"),
		series.ModeKey(&c.Mode, "mode"),
		schema.Int(&c.Threads, "threads", 1, 64).Default(1).Unit("threads").Axis().Short("t").
			Doc("forwarding lcores, each with its own net_af_xdp port (--vdev) on one tap queue (first_queue + i); more than one needs queues: auto or a queue count"),
		schema.Int(&c.FirstQueue, "first_queue", 0, 255).Default(0).Unit("queue index").
			Doc("tap queue of the first port (its start_queue); the ports use queues first_queue .. first_queue+threads-1"),
		schema.Duration(&c.Duration, "duration").Default(10 * time.Second).
			Doc("how long testpmd forwards: from `start` to `stop`"),
	}
}

// Resolve: testpmd runs until stopped, and the tap has the queues.
func (c *Config) Resolve(r *workload.Resolver) error {
	if c.Duration <= 0 {
		return r.Errorf("duration", "generator.testpmd.duration must be above 0 (testpmd forwards until stopped)")
	}
	c.pin = r.Cell.PinGenerator
	return series.CheckQueues(r, c.FirstQueue, c.Threads)
}

func (c *Config) Length() (time.Duration, bool) { return c.Duration, true }

func (c *Config) NamePart() (string, []string) {
	return "testpmd-t" + strconv.Itoa(c.Threads), []string{"threads"}
}

// AutoQueues: one tap queue per port, from first_queue.
func (c *Config) AutoQueues() int { return c.FirstQueue + c.Threads }

// CPUsNeeded: one CPU per forwarding lcore.
func (c *Config) CPUsNeeded() int { return c.Threads }

// CheckCPUs refuses more forwarding lcores than CPUs.
func (c *Config) CheckCPUs(h *workload.HostCheck) error {
	return series.CheckThreadCPUs(h, "testpmd", c.Threads)
}

// Metrics: Transmitted, per thread (port), over its forwarding time.
func (Workload) Metrics() []metric.Metric {
	return []metric.Metric{workload.TxPPS, workload.TxPPSThread}
}

// Table: the series' table.
func (Workload) Table() workload.Table {
	return series.Table("testpmd",
		"Transmitted = testpmd's TX-packets (Forward statistics, all ports) / its forwarding time, from writing `start` to writing `stop`")
}

// CPUSet is the CPUs testpmd's lcores run on: pin.generator, else every
// CPU of this machine.
func (c *Config) CPUSet() string {
	cpus := c.pin
	if cpus == nil {
		for i := range runtime.NumCPU() {
			cpus = append(cpus, i)
		}
	}
	return schema.FormatCPUs(cpus)
}

// Memory is testpmd's -m (MiB, from malloc: --no-huge) and Mbufs its
// --total-num-mbufs: enough for the ports' rings, small enough for 2 CPUs.
const (
	Memory = 512
	Mbufs  = 16384
)

// Args is testpmd's argv for dev, sending from the tap's ports to the
// guest (peerMAC, src -> dst), with EAL runtime files under prefix and
// the lcores floating over cpuset (a CPU list such as "0-1"; see
// CPUSet).
func Args(c Config, dev, peerMAC, src, dst, prefix, cpuset string) []string {
	a := []string{"dpdk-testpmd", "--no-huge", "-m", strconv.Itoa(Memory), "--no-pci", "--no-shconf", "--file-prefix", prefix,
		// the main lcore (idle at the prompt) and one forwarding lcore
		// per port, on the CPUs given
		"--lcores", fmt.Sprintf("(0-%d)@(%s)", c.Threads, cpuset)}
	for i := range c.Threads {
		v := fmt.Sprintf("net_af_xdp%d,iface=%s,start_queue=%d,queue_count=1", i, dev, c.FirstQueue+i)
		if c.Mode != series.ModeZeroCopy {
			v += ",force_copy=1"
		}
		a = append(a, "--vdev", v)
	}
	a = append(a, "--", "-i", "--forward-mode=txonly", "--txpkts="+strconv.Itoa(c.PktSize),
		"--port-topology=loop", "--nb-cores="+strconv.Itoa(c.Threads), "--total-num-mbufs="+strconv.Itoa(Mbufs))
	if src != "" && dst != "" {
		a = append(a, "--tx-ip="+src+","+dst)
	}
	if peerMAC != "" {
		for i := range c.Threads {
			a = append(a, fmt.Sprintf("--eth-peer=%d,%s", i, peerMAC))
		}
	}
	return a
}
