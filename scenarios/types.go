package scenarios

import (
	"time"
)

// Struct tags drive the decoder, the validation and the generated scenario
// reference (README):
//
//	yaml:    key in the YAML file ("-": not in the file)
//	doc:     one-line description
//	unit:    unit of the value
//	default: default, decoded like a value from the file when the key is absent
//	auto:    documentation of a default computed from other fields
//	axis:    "1" when a YAML list means "one cell per value" (a matrix axis)
//	enum:    allowed values, comma separated
//	kind:    special value syntax (duration, memory, cpus, ifname, qdisc, ip, mac, ...)
//	min/max: integer range

// Scenario is a decoded and validated scenario file. Its cells come from
// Expand; the run order from Order.
type Scenario struct {
	// Name of the scenario (the built-in name, or the file's name: key).
	Name string
	// Description is one line, shown by `vnetbench list`.
	Description string
	// File is where the scenario came from: a path, or "builtin:NAME.yaml".
	File string
	// Kernels under test, the column axis of every table. Never empty.
	Kernels []Kernel
	// Seed for Order from the file; 0 means "pick one at run time".
	Seed int64
	// Axes lists every axis with more than one value, in expansion order.
	Axes []Axis
	// Warnings are valid but probably unintended settings ("file:line:col:
	// msg"), for validate and plan to print.
	Warnings []string

	cells []Cell   // expanded, validated; kernel left empty
	pos   []posMap // per cell: YAML path -> node, for CheckHost errors
}

// Axis is one matrix axis of a scenario: a key (YAML path such as
// "backend" or "generator.pktgen.threads") and its values as written.
type Axis struct {
	Key    string
	Values []string
}

// Cell is one atomic experiment: every axis resolved to one value, defaults
// filled. Expand returns one Cell per kernel and combination; Order returns
// one Cell per repetition (Rep set).
type Cell struct {
	// Scenario is the scenario name.
	Scenario string `yaml:"-"`
	// Name is the path of the cell's axis values, e.g.
	// "tap+vhost/pktgen-t4/fq_codel/vhost-pin0". The kernel is not in it.
	Name string `yaml:"-"`
	// Axes maps every axis key that applies to this cell to its canonical
	// value (also axes with a single value).
	Axes map[string]string `yaml:"-"`
	// Kernel is the kernel under test for this cell.
	Kernel Kernel `yaml:"-"`
	// Rep is the repetition index (0-based) in Order's result; 0 from Expand.
	Rep int `yaml:"-"`

	Backend     string        `yaml:"backend" axis:"1" enum:"tap,tap+vhost" default:"tap" doc:"host side of the guest NIC: a tap device, or a tap device with the vhost-net kernel worker (QEMU vhost=on)"`
	Queues      int           `yaml:"queues" axis:"1" kind:"queues" min:"0" max:"256" default:"auto" unit:"queues" doc:"tap and virtio-net queue pairs; auto = the pktgen thread count (1 for trafgen and iperf3)"`
	Qdisc       string        `yaml:"qdisc" axis:"1" kind:"qdisc" doc:"root qdisc put on the tap (tc kind: fq_codel, noqueue, pfifo_fast, fq, ...); unset = leave the kernel's default"`
	TapName     string        `yaml:"tap_name" kind:"ifname" default:"vnbt0" doc:"name of the tap device (inside the scenario's network namespace); at most 15 bytes of letters, digits, '-', '_', '.'"`
	Isolation   string        `yaml:"isolation" enum:"netns,none" default:"netns" doc:"netns = tap, QEMU and generators live in a network namespace the run creates and deletes; none = the caller's namespace (dedicated lab machines only)"`
	Pin         Pin           `yaml:"pin" doc:"CPU pinning of the threads that move packets"`
	Guest       Guest         `yaml:"guest" doc:"the QEMU guest that receives the traffic"`
	Generator   Generator     `yaml:"generator" required:"1" doc:"traffic generator; give one or more of pktgen, trafgen, iperf3 (several = an axis)"`
	Perf        Perf          `yaml:"perf" doc:"perf profiling during the measurement window"`
	Repetitions int           `yaml:"repetitions" min:"1" max:"1000" default:"5" unit:"count" doc:"repetitions of every cell (each one sample)"`
	Warmup      time.Duration `yaml:"warmup" default:"0s" unit:"duration" doc:"traffic before the measurement window opens; discarded"`
	Timeouts    Timeouts      `yaml:"timeouts" doc:"per-phase deadlines; a phase that overruns fails the cell with the phase named"`
}

// Kernel is a kernel under test (or a guest kernel). Empty Image and Debian
// mean the running kernel.
type Kernel struct {
	Label   string `json:"label" yaml:"label" kind:"label" doc:"column label in every table, e.g. stock, patched; letters, digits, '-', '_', '.'"`
	Image   string `json:"image,omitempty" yaml:"image" kind:"path" doc:"kernel image (bzImage/vmlinuz) to boot in a lab VM; unset = the running kernel"`
	Modules string `json:"modules,omitempty" yaml:"modules" kind:"path" doc:"modules directory (lib/modules/RELEASE) for image; unset = modules built into the image only"`
	Debian  string `json:"debian,omitempty" yaml:"debian" kind:"debian" doc:"Debian kernel version to fetch and boot in a lab VM instead of image, e.g. \"6.1\" or \"6.1.0-47\""`
}

// Running reports whether k is the running kernel (no image, no Debian
// version).
func (k Kernel) Running() bool { return k.Image == "" && k.Debian == "" }

// Pin lists CPU sets for the threads of a cell. nil = unpinned.
type Pin struct {
	Vhost     []int `yaml:"vhost" axis:"1" kind:"cpus" default:"none" doc:"CPUs for the vhost-net worker thread (tap+vhost only; ignored in tap cells)"`
	VCPU      []int `yaml:"vcpu" axis:"1" kind:"cpus" default:"none" doc:"CPUs for QEMU's vCPU threads; with exactly guest.vcpus CPUs, vCPU i goes to the i-th"`
	Generator []int `yaml:"generator" axis:"1" kind:"cpus" default:"none" doc:"CPUs for trafgen or iperf3 (pktgen threads are per-CPU kernel threads: use generator.pktgen.first_cpu)"`
}

// Guest is the QEMU guest.
type Guest struct {
	VCPUs     int    `yaml:"vcpus" axis:"1" min:"1" max:"64" default:"1" unit:"count" doc:"virtual CPUs"`
	MemoryMiB int    `yaml:"memory" axis:"1" kind:"memory" default:"1GiB" unit:"bytes (KiB, MiB, GiB)" doc:"guest memory, e.g. 512MiB or 1GiB"`
	Sink      string `yaml:"sink" axis:"1" enum:"stack,xdp-drop,flow-count" default:"stack" doc:"what the guest does with packets: stack = kernel stack (UDP to a closed port is dropped there), xdp-drop = XDP program drops at the driver, flow-count = XDP program counts per flow and drops"`
	Accel     string `yaml:"accel" enum:"auto,kvm,tcg" default:"auto" doc:"QEMU accelerator; auto = KVM when it really works, else TCG (numbers then measure the emulator)"`
	Kernel    Kernel `yaml:"kernel" doc:"guest kernel (label unused); unset = the default guest image's kernel (Debian 6.1)"`
}

// Generator is the traffic generator of a cell: exactly one of Pktgen,
// Trafgen, Iperf3 is set in a cell, named by Kind.
type Generator struct {
	Kind    string   `yaml:"-"`
	Pktgen  *Pktgen  `yaml:"pktgen" doc:"the kernel's pktgen writing into the tap (needs the pktgen module)"`
	Trafgen *Trafgen `yaml:"trafgen" doc:"netsniff-ng trafgen writing into the tap through a packet socket"`
	Iperf3  *Iperf3  `yaml:"iperf3" doc:"iperf3 from the host namespace to an iperf3 server in the guest"`
}

// Pktgen configures the kernel's pktgen. Modes follow the kernel's
// samples/pktgen: simple = sample01, multiqueue = sample02,
// burst_single_flow = sample03; script runs those scripts from a kernel
// source tree.
type Pktgen struct {
	Mode      string        `yaml:"mode" axis:"1" enum:"simple,multiqueue,burst_single_flow,script" default:"simple" doc:"simple = samples/pktgen sample01 (one thread), multiqueue = sample02 (one thread per tap queue), burst_single_flow = sample03, script = run the kernel's own sample script from script_dir"`
	Threads   int           `yaml:"threads" axis:"1" min:"1" max:"1024" default:"1" unit:"threads" doc:"pktgen kernel threads (kpktgend_N on CPU N)"`
	FirstCPU  int           `yaml:"first_cpu" axis:"1" min:"0" max:"4095" default:"0" unit:"CPU index" doc:"first pktgen thread/CPU; threads use CPUs first_cpu .. first_cpu+threads-1 (sample scripts' -f)"`
	Count     uint64        `yaml:"count" min:"0" auto:"100000 (the samples' default), or 0 = unbounded when duration is set" unit:"packets per thread" doc:"packets each thread sends; 0 = until duration"`
	Duration  time.Duration `yaml:"duration" default:"0s" unit:"duration" doc:"stop after this long (0 = run until count)"`
	PktSize   int           `yaml:"pkt_size" axis:"1" min:"42" max:"9216" default:"60" unit:"bytes" doc:"frame size without FCS"`
	Burst     int           `yaml:"burst" axis:"1" kind:"burst" default:"default" unit:"packets" doc:"packets per xmit; default = not written (kernel default 1); tap rejects > 1 (errno 524)"`
	CloneSkb  int           `yaml:"clone_skb" axis:"1" min:"0" max:"1000000" default:"0" unit:"count" doc:"reuse each skb this many times; tap rejects > 0 (errno 524)"`
	Delay     time.Duration `yaml:"delay" axis:"1" default:"0s" unit:"duration" doc:"gap between packets (pktgen delay, ns resolution)"`
	Dst       string        `yaml:"dst" kind:"ip" doc:"destination IPv4/IPv6 address; unset = the guest's address"`
	DstMAC    string        `yaml:"dst_mac" kind:"mac" doc:"destination MAC; unset = the guest NIC's MAC"`
	UDPSrcMin int           `yaml:"udp_src_min" min:"0" max:"65535" default:"0" unit:"port" doc:"UDP source port range start (0 = pktgen's default 9)"`
	UDPSrcMax int           `yaml:"udp_src_max" min:"0" max:"65535" default:"0" unit:"port" doc:"UDP source port range end (0 = same as min)"`
	UDPDstMin int           `yaml:"udp_dst_min" min:"0" max:"65535" default:"0" unit:"port" doc:"UDP destination port range start (0 = pktgen's default 9)"`
	UDPDstMax int           `yaml:"udp_dst_max" min:"0" max:"65535" default:"0" unit:"port" doc:"UDP destination port range end (0 = same as min)"`
	XmitMode  string        `yaml:"xmit_mode" axis:"1" enum:",start_xmit,queue_xmit" doc:"unset/start_xmit = straight to the driver (bypasses the qdisc); queue_xmit = through the qdisc"`
	ScriptDir string        `yaml:"script_dir" kind:"path" doc:"kernel source tree holding samples/pktgen (mode script only)"`
	Script    string        `yaml:"script" kind:"script" auto:"pktgen_sample01_simple.sh in mode script" doc:"sample script to run in mode script, from samples/pktgen"`
}

// Trafgen configures netsniff-ng trafgen (UDP frames into the tap).
type Trafgen struct {
	Duration time.Duration `yaml:"duration" default:"10s" unit:"duration" doc:"how long trafgen sends"`
	PktSize  int           `yaml:"pkt_size" axis:"1" min:"42" max:"9216" default:"60" unit:"bytes" doc:"frame size without FCS"`
	CPUs     int           `yaml:"cpus" axis:"1" min:"1" max:"1024" default:"1" unit:"count" doc:"trafgen worker processes (--cpus)"`
	Rate     string        `yaml:"rate" axis:"1" kind:"rate" doc:"send rate, e.g. 10kpps or 100Mbit (trafgen --rate); unset = as fast as possible"`
}

// Iperf3 configures an iperf3 client on the host side sending to the guest.
type Iperf3 struct {
	Duration time.Duration `yaml:"duration" default:"10s" unit:"duration" doc:"test length (-t)"`
	Parallel int           `yaml:"parallel" axis:"1" min:"1" max:"128" default:"1" unit:"streams" doc:"parallel streams (-P)"`
	Reverse  bool          `yaml:"reverse" axis:"1" default:"false" doc:"guest sends to host (-R)"`
	Omit     time.Duration `yaml:"omit" default:"0s" unit:"duration" doc:"seconds at the start iperf3 leaves out of its result (-O)"`
	Protocol string        `yaml:"protocol" axis:"1" enum:"tcp,udp" default:"tcp" doc:"transport"`
	Bitrate  string        `yaml:"bitrate" axis:"1" kind:"bitrate" doc:"target bitrate (-b), e.g. 1G or 500M; unset = iperf3's default (unlimited TCP, 1M UDP)"`
}

// Perf configures perf during the measurement window. nil parts are off.
type Perf struct {
	Stat   *PerfStat   `yaml:"stat" doc:"perf stat counters per target thread group"`
	Record *PerfRecord `yaml:"record" doc:"perf record sampling, reported as the top symbols"`
}

// PerfStat is perf stat on targets.
type PerfStat struct {
	Targets []string `yaml:"targets" enum:"generator,kpktgend,vhost,vcpu,qemu,trafgen,iperf3" default:"[generator, vhost, vcpu]" doc:"threads to count: kpktgend, vhost, vcpu, qemu (whole process), trafgen, iperf3, generator (= the cell's generator); targets absent from a cell are skipped there"`
	Events  []string `yaml:"events" kind:"event" default:"[task-clock, context-switches, cpu-migrations, page-faults, cycles, instructions, branches, branch-misses]" doc:"perf event names (unsupported ones are reported as such)"`
}

// PerfRecord is perf record on targets.
type PerfRecord struct {
	Targets   []string `yaml:"targets" enum:"generator,kpktgend,vhost,vcpu,qemu,trafgen,iperf3" default:"[generator, vhost]" doc:"threads to sample (as for stat)"`
	CallGraph bool     `yaml:"call_graph" default:"false" doc:"record call graphs (-g)"`
	Top       int      `yaml:"top" min:"1" max:"10000" default:"40" unit:"symbols" doc:"symbols kept from perf report"`
	FreqHz    int      `yaml:"freq" min:"1" max:"100000" default:"999" unit:"Hz" doc:"sampling frequency (-F)"`
}

// Timeouts are per-phase deadlines. Load fills every field.
type Timeouts struct {
	Boot     time.Duration `yaml:"boot" default:"3m" unit:"duration" doc:"QEMU start until the guest agent is ready"`
	Setup    time.Duration `yaml:"setup" default:"1m" unit:"duration" doc:"host setup: netns, tap, qdisc, pinning, module checks"`
	Traffic  time.Duration `yaml:"traffic" unit:"duration" auto:"warmup + generator duration + 1m, or 10m for count-bounded pktgen" doc:"generator start until it has finished"`
	Cell     time.Duration `yaml:"cell" unit:"duration" auto:"boot + setup + traffic + teardown" doc:"one repetition of one cell, all phases"`
	Teardown time.Duration `yaml:"teardown" default:"30s" unit:"duration" doc:"undo everything (runs even after a failure or SIGINT)"`
}

// Host carries the facts about the machine that cmd passes to CheckHost;
// this package never probes the host itself.
type Host struct {
	NumCPU int
}

// BuiltinInfo names a built-in scenario.
type BuiltinInfo struct {
	Name        string
	Description string
}
