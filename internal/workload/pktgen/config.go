// Package pktgen is the pktgen workload: the kernel's packet generator
// writing into the tap, driven through /proc/net/pktgen by internal/workload/pktgen/driver
// (the samples/pktgen recipes), or by the kernel's own sample scripts.
package pktgen

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Workload is pktgen.
type Workload struct{}

func (Workload) Name() string { return "pktgen" }
func (Workload) Doc() string {
	return "the kernel's pktgen writing into the tap (needs the pktgen module)"
}
func (Workload) New() workload.Config { return &Config{} }

// Target: pktgen's threads are the kpktgend_N kernel threads.
func (Workload) Target() string { return "kpktgend" }

// Modes follow the kernel's samples/pktgen: simple = sample01,
// multiqueue = sample02, burst_single_flow = sample03; script runs those
// scripts from a kernel source tree.
const (
	ModeAuto       = "auto"
	ModeSimple     = "simple"
	ModeMultiqueue = "multiqueue"
	ModeBurst      = "burst_single_flow"
	ModeScript     = "script"
)

// DefaultScript is the sample script of mode script for one thread on CPU
// 0 when none is named; MultiqueueScript the one for more threads.
const (
	DefaultScript    = "pktgen_sample01_simple.sh"
	MultiqueueScript = "pktgen_sample02_multiqueue.sh"
)

// Config is generator.pktgen of a cell.
type Config struct {
	Mode      string
	Threads   int
	FirstCPU  int
	Count     uint64 // packets per thread; 0 = until Duration
	Duration  time.Duration
	PktSize   int
	Burst     int // -1 = default (not written)
	CloneSkb  int
	Delay     time.Duration
	Dst       string // "" = the guest's address
	DstMAC    string // "" = the guest NIC's MAC
	UDPSrcMin int
	UDPSrcMax int
	UDPDstMin int
	UDPDstMax int
	XmitMode  string // "", start_xmit or queue_xmit
	ScriptDir string // kernel tree (mode script)
	Script    string // sample script file name (mode script)
}

func (c *Config) Fields() []schema.Field {
	return []schema.Field{
		schema.Enum(&c.Mode, "mode", ModeAuto, ModeSimple, ModeMultiqueue, ModeBurst, ModeScript).Default(ModeAuto).Axis().Bare().
			Doc("auto = simple for one thread, multiqueue for more (as the netdev thread ran them); simple = samples/pktgen sample01 (one thread), multiqueue = sample02 (threads map to tap queues by CPU), burst_single_flow = sample03, script = run the kernel's own sample script from script_dir"),
		schema.Int(&c.Threads, "threads", 1, 1024).Default(1).Unit("threads").Axis().Short("t").
			Doc("pktgen kernel threads (kpktgend_N on CPU N)"),
		schema.Int(&c.FirstCPU, "first_cpu", 0, 4095).Default(0).Unit("CPU index").Axis().Short("cpu").
			Doc("first pktgen thread/CPU; threads use CPUs first_cpu .. first_cpu+threads-1 (sample scripts' -f)"),
		schema.Int(&c.Count, "count", 0, schema.NoMax).Auto("100000 (the samples' default), or 0 = unbounded when duration is set").Unit("packets per thread").
			Doc("packets each thread sends; 0 = until duration"),
		schema.Duration(&c.Duration, "duration").Default(0).Doc("stop after this long (0 = run until count)"),
		schema.Int(&c.PktSize, "pkt_size", 42, 9216).Default(60).Unit("bytes").Axis().Short("pkt").
			Doc("frame size without FCS"),
		schema.Value(&c.Burst, "burst", burstKind).Default(-1).Unit("packets").Axis().Short("burst").
			Doc("packets per xmit, written as given (burst 0 too, which the kernel takes as 1; mode script passes -b); default = not written (the kernel's default, 1); tap rejects > 1 (errno 524)"),
		schema.Int(&c.CloneSkb, "clone_skb", 0, 1000000).Default(0).Unit("count").Axis().Short("clone").
			Doc("reuse each skb this many times; tap rejects > 0 (errno 524)"),
		schema.Duration(&c.Delay, "delay").Default(0).Axis().Short("delay").
			Doc("gap between packets (pktgen delay, ns resolution)"),
		schema.String(&c.Dst, "dst", "IP address", checkIP).Doc("destination IPv4/IPv6 address; unset = the guest's address"),
		schema.String(&c.DstMAC, "dst_mac", "MAC address", checkMAC).Doc("destination MAC; unset = the guest NIC's MAC"),
		schema.Int(&c.UDPSrcMin, "udp_src_min", 0, 65535).Default(0).Unit("port").Doc("UDP source port range start (0 = pktgen's default 9)"),
		schema.Int(&c.UDPSrcMax, "udp_src_max", 0, 65535).Default(0).Unit("port").Doc("UDP source port range end (0 = same as min)"),
		schema.Int(&c.UDPDstMin, "udp_dst_min", 0, 65535).Default(0).Unit("port").Doc("UDP destination port range start (0 = pktgen's default 9)"),
		schema.Int(&c.UDPDstMax, "udp_dst_max", 0, 65535).Default(0).Unit("port").Doc("UDP destination port range end (0 = same as min)"),
		schema.Enum(&c.XmitMode, "xmit_mode", "", "start_xmit", "queue_xmit").Axis().Short("xmit").
			Doc("unset/start_xmit = straight to the driver (bypasses the qdisc); queue_xmit = through the qdisc"),
		schema.Path(&c.ScriptDir, "script_dir").Doc("kernel source tree holding samples/pktgen (mode script only)"),
		schema.String(&c.Script, "script", "file name", checkScript).Auto(DefaultScript + " in mode script for one thread on CPU 0, else " + MultiqueueScript).
			Doc("sample script to run in mode script, from samples/pktgen"),
	}
}

// burstKind is an integer or "default" (-1: burst is not written).
var burstKind = schema.Kind[int]{
	Type: "integer or `default`",
	Parse: func(n *yaml.Node, c *schema.Ctx) (int, string) {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == "default" {
			return -1, ""
		}
		x, msg := schema.ParseInt(n, c, " or default")
		switch {
		case msg != "":
			return 0, msg
		case x < 0:
			return 0, fmt.Sprintf("%s: must not be negative, got %d; use 0, 1 or default", c.Path, x)
		case x > 1<<16:
			return 0, fmt.Sprintf("%s: %d is too large (pktgen allows at most 65536)", c.Path, x)
		}
		return int(x), ""
	},
	Format: func(v int) string {
		if v < 0 {
			return "default"
		}
		return strconv.Itoa(v)
	},
}

// What the kernel's sample scripts do with -b: sample03 and sample05
// write burst 32 without it; sample04 and the queue_xmit bench refuse it.
var (
	scriptBurst32 = map[string]bool{"pktgen_sample03_burst_single_flow.sh": true, "pktgen_sample05_flow_per_thread.sh": true}
	scriptNoBurst = map[string]bool{"pktgen_sample04_many_flows.sh": true, "pktgen_bench_xmit_mode_queue_xmit.sh": true}
)

var scriptRE = lazyre.New(`^[A-Za-z0-9_.-]+\.sh$`)

func checkScript(s string) string {
	if !scriptRE().MatchString(s) {
		return fmt.Sprintf("bad script %q; give a file name in samples/pktgen such as pktgen_sample02_multiqueue.sh", s)
	}
	return ""
}

func checkIP(s string) string {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return fmt.Sprintf("bad IP address %q; use e.g. 10.0.0.2 (or leave dst unset for the guest's address)", s)
	}
	if a.Zone() != "" {
		return fmt.Sprintf("IP address %q has a zone; pktgen takes none: give the address without %%%s", s, a.Zone())
	}
	return ""
}

func checkMAC(s string) string {
	if hw, err := net.ParseMAC(s); err != nil || len(hw) != 6 {
		return fmt.Sprintf("bad MAC address %q; use six hex pairs such as 52:54:00:12:34:56 (or leave it unset)", s)
	}
	return ""
}

// Resolve fills count and script and checks what a tap and the sample
// scripts refuse.
func (p *Config) Resolve(r *workload.Resolver) error {
	c := r.Cell
	if p.Mode == ModeAuto {
		// The thread's recipe: sample01 for one thread, sample02 for more.
		p.Mode = ModeSimple
		if p.Threads > 1 {
			p.Mode = ModeMultiqueue
		}
	}
	if p.Mode != ModeScript && contains(r.AxisValues("mode"), ModeScript) {
		// mode: [simple, script]: script_dir and script belong to the
		// script cells only.
		p.ScriptDir, p.Script = "", ""
		r.Forget("script_dir")
		r.Forget("script")
	}
	p.ScriptDir = r.Path(p.ScriptDir)
	if !r.Given("count") {
		if p.Duration == 0 {
			p.Count = 100000
		}
	} else if p.Count == 0 && p.Duration == 0 {
		return r.Errorf("count", "generator.pktgen: count 0 without a duration never stops; set count (packets per thread) or duration")
	}
	if p.Burst > 1 {
		return r.Errorf("burst", "generator.pktgen.burst %d is not supported on a %s backend: the kernel rejects burst > 1 on tap devices with errno 524 (ENOTSUPP, \"Unknown error 524\"); use burst: 0", p.Burst, c.Backend)
	}
	if p.CloneSkb > 0 {
		return r.Errorf("clone_skb", "generator.pktgen.clone_skb %d is not supported on a %s backend: the kernel rejects clone_skb > 0 on tap devices with errno 524 (ENOTSUPP); use clone_skb: 0 (and burst: 0)", p.CloneSkb, c.Backend)
	}
	if p.Mode == ModeSimple && p.Threads > 1 {
		return r.Errorf("threads", "generator.pktgen: mode simple (sample01) runs one thread, got threads %d; use mode: multiqueue for several threads", p.Threads)
	}
	if p.Mode == ModeScript && p.ScriptDir == "" {
		return r.Errorf("mode", "generator.pktgen: mode script runs the kernel's samples/pktgen scripts and needs script_dir: the kernel source tree (e.g. script_dir: ~/linux)")
	}
	if p.Mode != ModeScript && p.ScriptDir != "" {
		return r.Errorf("script_dir", "generator.pktgen.script_dir is only used with mode: script; remove it or set mode: script")
	}
	if p.Mode == ModeScript && p.Script == "" {
		p.Script = DefaultScript
		if p.Threads > 1 || p.FirstCPU != 0 {
			p.Script = MultiqueueScript // sample01 sends from thread 0 only
		}
	}
	if r.Given("script") && p.Mode != ModeScript {
		return r.Errorf("script", "generator.pktgen.script is only used with mode: script; remove it or set mode: script")
	}
	if p.Mode == ModeScript {
		// The sample scripts take -i -m -d -n -t -f -b -s -c -w -p and
		// choose the rest themselves.
		if p.XmitMode == "queue_xmit" {
			return r.Errorf("xmit_mode", "generator.pktgen.xmit_mode is not passed to the sample scripts (they send with start_xmit; pktgen_bench_xmit_mode_queue_xmit.sh chooses queue_xmit itself); remove xmit_mode or use mode simple, multiqueue or burst_single_flow")
		}
		if p.UDPSrcMin != 0 || p.UDPSrcMax != 0 {
			return r.Errorf("udp_src_min", "generator.pktgen.udp_src_min/max are not passed to the sample scripts (they choose the source ports); remove them or use a native mode")
		}
		if scriptBurst32[p.Script] && p.Burst < 0 {
			return r.Errorf("burst", "generator.pktgen: %s writes burst 32 unless given -b, and the kernel rejects burst > 1 on tap devices (errno 524); set burst: 0 (passed as -b 0: the script then leaves burst unwritten)", p.Script)
		}
		if scriptNoBurst[p.Script] && p.Burst >= 0 {
			return r.Errorf("burst", "generator.pktgen: %s refuses -b (\"Bursting not supported for this mode\"), even -b 0; remove burst (or set burst: default)", p.Script)
		}
		if p.Script == DefaultScript && p.Threads > 1 {
			return r.Errorf("threads", "generator.pktgen: pktgen_sample01_simple.sh sends from one thread (it ignores -t), got threads %d; use script: pktgen_sample02_multiqueue.sh", p.Threads)
		}
		if p.Script == DefaultScript && p.FirstCPU != 0 {
			return r.Errorf("first_cpu", "generator.pktgen: pktgen_sample01_simple.sh always uses thread 0 (it ignores -f), got first_cpu %d; use script: pktgen_sample02_multiqueue.sh", p.FirstCPU)
		}
	}
	if p.UDPSrcMax != 0 && p.UDPSrcMax < p.UDPSrcMin {
		return r.Errorf("udp_src_max", "generator.pktgen: udp_src_max %d is below udp_src_min %d", p.UDPSrcMax, p.UDPSrcMin)
	}
	if p.UDPDstMax != 0 && p.UDPDstMax < p.UDPDstMin {
		return r.Errorf("udp_dst_max", "generator.pktgen: udp_dst_max %d is below udp_dst_min %d", p.UDPDstMax, p.UDPDstMin)
	}
	if c.PinGenerator != nil {
		return r.CellErrorf("pin.generator", "pin.generator: pktgen threads are per-CPU kernel threads (kpktgend_N runs on CPU N); remove pin.generator and set generator.pktgen.first_cpu")
	}
	if c.Qdisc != "" && p.XmitMode == "" && p.Mode != ModeScript {
		r.CellWarnf("qdisc", "qdisc %s is attached but pktgen's default xmit mode (start_xmit) sends past it; set generator.pktgen.xmit_mode: queue_xmit to send through it, or xmit_mode: start_xmit to say that is meant", c.Qdisc)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Length is the duration, unknown when the threads run until a count.
func (p *Config) Length() (time.Duration, bool) {
	if p.Count > 0 && p.Duration == 0 {
		return 0, false
	}
	return p.Duration, true
}

var _ workload.Counter = (*Config)(nil)

// Packets: count per thread times threads (0 with a duration: the
// window ends at whichever comes first, and Length knows the duration).
func (p *Config) Packets() uint64 { return p.Count * uint64(max(p.Threads, 1)) }

// Within sets duration: pktgen stops at the count or after the duration,
// whichever comes first.
func (p *Config) Within(d time.Duration) []workload.Setting {
	return []workload.Setting{{Key: "duration", Value: schema.FormatDuration(d)}}
}

// NamePart is "pktgen-tN".
func (p *Config) NamePart() (string, []string) {
	return "pktgen-t" + strconv.Itoa(p.Threads), []string{"threads"}
}

// AutoQueues: one tap queue per pktgen thread (queues: auto). Any other
// queue count is fine too: with QUEUE_MAP_CPU (sample02) thread N sends
// on queue N % queues, so 4 threads on a single-queue tap all share queue
// 0, the contention the netdev thread measured.
func (p *Config) AutoQueues() int { return max(p.Threads, 1) }

// SendQueues is how many of a tap's tapQueues queues the threads send
// on. With QUEUE_MAP_CPU (every native mode but simple, and sample02)
// kpktgend_N on CPU N sends on queue N % tapQueues: the threads' CPUs
// are consecutive, so min(threads, tapQueues). Simple mode and sample01
// send on queue 0, and queue_xmit on the queue tun picks by flow: one.
func (p *Config) SendQueues(tapQueues int) int {
	mapped := p.Mode != ModeSimple && (p.Mode != ModeScript || p.Script == MultiqueueScript)
	if !mapped || p.XmitMode == "queue_xmit" {
		return 1
	}
	return max(min(p.Threads, tapQueues), 1)
}

// CPUsNeeded: kpktgend_N runs on CPU N.
func (p *Config) CPUsNeeded() int { return p.FirstCPU + p.Threads }

// HostThreads: kpktgend_N, bound to CPU N.
func (p *Config) HostThreads() []workload.HostThread {
	var out []workload.HostThread
	for t := p.FirstCPU; t < p.FirstCPU+p.Threads; t++ {
		out = append(out, workload.HostThread{Name: "kpktgend_" + strconv.Itoa(t), CPU: t})
	}
	return out
}

// CheckCPUs refuses threads on CPUs this machine lacks.
func (p *Config) CheckCPUs(h *workload.HostCheck) error {
	if p.FirstCPU+p.Threads <= h.NumCPU {
		return nil
	}
	key := "threads"
	if p.FirstCPU > 0 {
		key = "first_cpu"
	}
	return h.Errorf(key, "generator.pktgen: %d threads from first_cpu %d need CPUs %d-%d (kpktgend_N runs on CPU N) but %s; use at most %d threads", p.Threads, p.FirstCPU, p.FirstCPU, p.FirstCPU+p.Threads-1, h.Have, max(h.NumCPU-p.FirstCPU, 1))
}

// Metrics: the packet generators' tx_pps (the sum of the threads'
// Result pps), per thread with its loss, and pktgen's errors.
func (Workload) Metrics() []metric.Metric {
	return []metric.Metric{workload.TxPPS, workload.TxPPSThread, workload.LostPPSThread, workload.TxRunS,
		{Key: metric.PktgenErrors, Unit: "count", Better: metric.LowerIsBetter, Description: "pktgen errors (retries while the tap ring was full)"}}
}

// Table: Transmitted and Lost, per thread when there are several.
func (Workload) Table() workload.Table { return workload.PacketTable }

// Path: pktgen's start_xmit (its default) calls netdev_start_xmit and
// never enters the qdisc; queue_xmit goes through dev_queue_xmit.
func (p *Config) Path() string {
	if p.XmitMode == "queue_xmit" {
		return "pktgen queue_xmit, through the qdisc"
	}
	return "pktgen start_xmit, past the qdisc"
}
