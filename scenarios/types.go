package scenarios

import (
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Every section lists its keys in a Fields method (schema): the decoder,
// the validation, the generated scenario reference (docs/scenarios.md), the plan's
// parameters and the axes all come from these lists. A workload's keys
// (generator.NAME.*) come from its package through the workload registry.

// Scenario is a decoded and validated scenario file. Its cells come from
// Expand; the run order from Order.
type Scenario struct {
	// Name of the scenario (the built-in name, or the file's name: key).
	Name string
	// Description is one line, shown by `vnetbench list`.
	Description string
	// File is where the scenario came from: a path, or for a built-in
	// "builtin/NAME.yaml" (as its errors show it; not a file on disk).
	File string
	// Builtin is set when the scenario is a built-in (LoadBuiltin,
	// Resolve): its Name finds it again, wherever the program runs.
	Builtin bool
	// Kernels under test, the column axis of every table. Never empty.
	Kernels []Kernel
	// PerPatch asks for a column per patch of the last kernel's series
	// (per_patch:, run --per-patch): ExpandPerPatch makes them.
	PerPatch bool
	// Seed for Order from the file; 0 means "pick one at run time".
	Seed int64
	// Axes lists every axis with more than one value, in expansion order.
	Axes []Axis
	// Warnings are valid but probably unintended settings ("file:line:col:
	// msg"), for validate and plan to print.
	Warnings []string
	// Notes say which combinations of axis values resolve to the same
	// cell and run once ("queues 1 and auto: give the same cell, ...").
	Notes []string
	// Sets are the command line's overrides applied to the file (--set),
	// in order.
	Sets []Set

	perPatched bool         // ExpandPerPatch ran
	cells      []Cell       // expanded, validated; kernel left empty
	pos        []schema.Pos // per cell: YAML path -> node, for CheckHost errors
}

// Axis is one matrix axis of a scenario: a key (YAML path such as
// "backend" or "generator.pktgen.threads") and its values as written.
type Axis struct {
	Key    string
	Values []string
}

// Backends.
const (
	BackendTap   = "tap"
	BackendVhost = "tap+vhost"
)

// Cell is one atomic experiment: every axis resolved to one value, defaults
// filled. Expand returns one Cell per kernel and combination; Order returns
// one Cell per repetition (Rep set).
type Cell struct {
	// Scenario is the scenario name.
	Scenario string
	// Name is the path of the cell's axis values, e.g.
	// "tap+vhost/pktgen-t4/fq_codel/vhost-pin0". The kernel is not in it.
	Name string
	// Axes maps every axis key that applies to this cell to its canonical
	// value (also axes with a single value).
	Axes map[string]string
	// Kernel is the kernel under test for this cell.
	Kernel Kernel
	// Rep is the repetition index (0-based) in Order's result; 0 from Expand.
	Rep int

	Backend     string
	Queues      int // tap queue pairs; 0 = auto until resolved
	Qdisc       string
	TxQueueLen  int // 0 = the tap's default
	TapName     string
	Isolation   string
	Pin         Pin
	Guest       Guest
	Generator   Generator
	Perf        Perf
	DropReasons bool
	Latency     *Latency
	Repetitions int
	Warmup      time.Duration
	Timeouts    Timeouts
}

// Fields lists the cell's keys.
func (c *Cell) Fields() []schema.Field {
	return []schema.Field{
		schema.Enum(&c.Backend, "backend", BackendTap, BackendVhost).Default(BackendTap).Axis().
			Doc("host side of the guest NIC: a tap device, or a tap device with the vhost-net kernel worker (QEMU vhost=on)"),
		schema.IntOr(&c.Queues, "queues", 1, 256, "auto", 0).Default(1).Unit("queues").Axis().Short("q").
			Doc("tap and virtio-net queue pairs, independent of the generator's threads: 1 = a single-queue tap (QEMU without queues=), where every pktgen thread sends on queue 0; auto = one per pktgen thread (1 for trafgen and iperf3)"),
		schema.String(&c.Qdisc, "qdisc", "tc qdisc kind", checkQdisc).Axis().
			Doc("root qdisc put on the tap (tc kind: fq_codel, noqueue, pfifo_fast, fq, ...); unset = leave the kernel's default"),
		schema.IntOr(&c.TxQueueLen, "txqueuelen", 1, 1<<20, "default", 0).Default(0).Unit("packets").Axis().Short("txq").
			Doc("the tap's txqueuelen, set before the qdisc: the length of tun's ring below the qdisc (and pfifo_fast's limit); default = the tap's own (tun: 500)"),
		schema.String(&c.TapName, "tap_name", "interface name", checkIfname).Default("vnbt0").
			Doc("name of the tap device (inside the scenario's network namespace); at most 15 bytes of letters, digits, '-', '_', '.'"),
		schema.Enum(&c.Isolation, "isolation", "netns", "none").Default("netns").
			Doc("netns = tap, QEMU and generators live in a network namespace the run creates and deletes; none = the caller's namespace (dedicated lab machines only)"),
		schema.Section("pin", &c.Pin).Doc("CPU pinning of the threads that move packets"),
		schema.Section("guest", &c.Guest).Doc("the QEMU guest that receives the traffic"),
		c.Generator.field(),
		schema.Section("perf", &c.Perf).Doc("perf profiling during the measurement window"),
		schema.Bool(&c.DropReasons, "drop_reasons").Default(false).
			Doc("count the kernel's packet drops by reason and by the function that dropped them, over the same interval as Lost (an eBPF program in the kernel under test: a kprobe on its drop function where it has kprobes, else the skb:kfree_skb tracepoint; docs/lab.md): rows under Lost"),
		schema.Optional(&c.Latency, "latency").Doc("latency probe through the tap while the load runs (docs/latency.md): UDP requests from the host's run namespace to a reflector in the guest, kernel timestamps split each round trip into time in the qdisc and below it; unset = no probe"),
		schema.Int(&c.Repetitions, "repetitions", 1, 1000).Default(5).Unit("count").
			Doc("repetitions of every cell (each one sample)"),
		schema.Duration(&c.Warmup, "warmup").Default(0).Doc("traffic before the measurement window opens; discarded"),
		schema.Section("timeouts", &c.Timeouts).Doc("per-phase deadlines; a phase that overruns fails the cell with the phase named"),
	}
}

// Kernel is a kernel under test (or a guest kernel). Empty Image, Debian
// and Tree mean the running kernel.
type Kernel struct {
	Label   string `json:"label"`
	Image   string `json:"image,omitempty"`
	Modules string `json:"modules,omitempty"`
	Debian  string `json:"debian,omitempty"`
	// Tree is a kernel source tree to build (runner/kbuild) and boot in a
	// lab VM, at Ref, with Patches on top and the Config fragment.
	Tree string `json:"tree,omitempty"`
	// Source is a source tree the harness fetches instead of Tree:
	// "debian:6.1" is Debian's linux-source-6.1 package.
	Source  string   `json:"source,omitempty"`
	Ref     string   `json:"ref,omitempty"`
	Patches []string `json:"patches,omitempty"`
	Config  string   `json:"config,omitempty"`
	// Build chooses how a source: kernel is built: "" or "auto" (only the
	// modules its series touches when they qualify, else the whole
	// kernel), "full" or "modules" (fail when the series does not
	// qualify).
	Build string `json:"build,omitempty"`
}

// Build modes of a kernel built from source (Kernel.Build).
const (
	BuildAuto    = "auto"
	BuildFull    = "full"
	BuildModules = "modules"
)

// Fields lists a kernel under test's keys (kernels[]).
func (k *Kernel) Fields() []schema.Field {
	return []schema.Field{
		schema.String(&k.Label, "label", "", checkLabel).
			Doc("column label in every table, e.g. stock, patched; letters, digits, '-', '_', '.'"),
		schema.Path(&k.Image, "image").Doc("kernel image (bzImage/vmlinuz) to boot in a lab VM; unset = the running kernel"),
		schema.Path(&k.Modules, "modules").Doc("modules directory (lib/modules/RELEASE) for image; unset = modules built into the image only"),
		schema.String(&k.Debian, "debian", "version", checkDebian).
			Doc(`Debian kernel version to fetch and boot in a lab VM instead of image: a series ("6.12", "6.1": its newest package) or an ABI ("6.12.117+deb12", "6.1.0-47")`),
		schema.Path(&k.Tree, "tree").
			Doc("Linux source tree to build and boot in a lab VM instead of image: a git repository (built at ref in a git worktree) or a plain directory (built in a copy); builds are cached"),
		schema.String(&k.Source, "source", "debian:VERSION", checkSource).
			Doc("Linux source to fetch into the harness cache and build instead of tree: debian:6.1 is Debian's linux-source-6.1 package (apt-get download); patches and config apply as for tree"),
		schema.String(&k.Ref, "ref", "git ref", checkRef).
			Doc("git branch, tag or commit of tree to build; unset = HEAD (uncommitted changes are not built)"),
		schema.Strings(&k.Patches, "patches", "list of paths or globs", checkPatchPath).
			Doc("patch files or mboxes (git format-patch) applied to tree or source in order with git apply, e.g. [~/series/v7/*.patch]; series:NAME is a series shipped with vnetbench (series:tun-backpressure)"),
		schema.Path(&k.Config, "config").
			Doc("kernel config fragment (.config lines) applied after the harness's base config; every option in it must survive make olddefconfig"),
		schema.Enum(&k.Build, "build", "", BuildAuto, BuildFull, BuildModules).
			Doc("how a source: kernel with patches (and the source's other kernels) is built: auto = only the modules its series touches, rebuilt for Debian's packaged kernel of the same version, when every file it touches feeds modules of that kernel (docs/series.md says which series qualify), else the whole tree with the harness's config; full = always the whole tree; modules = the module build or exit 2 with the reason; unset = auto"),
	}
}

// guestFields lists the guest kernel's keys (guest.kernel): label is
// decoded only to be refused (the guest kernel is no column).
func (k *Kernel) guestFields() []schema.Field {
	return []schema.Field{
		schema.String(&k.Label, "label", "", checkLabel).Hidden(),
		schema.Path(&k.Image, "image").Doc("guest kernel image; unset = the default guest image's kernel"),
		schema.Path(&k.Modules, "modules").Doc("modules directory for the guest image; unset = the default image's modules"),
		schema.String(&k.Debian, "debian", "version", checkDebian).
			Doc(`Debian kernel for the guest instead of image (the cloud flavour): a series ("6.12", "6.1": its newest package) or an ABI ("6.12.117+deb12", "6.1.0-47")`),
	}
}

// Running reports whether k is the running kernel (no image, no Debian
// version, no tree).
func (k Kernel) Running() bool { return k.Image == "" && k.Debian == "" && !k.Builds() }

// Builds reports whether the harness builds the kernel from source (tree:
// or source:).
func (k Kernel) Builds() bool { return k.Tree != "" || k.Source != "" }

// Pin lists CPU sets for the threads of a cell. nil = unpinned.
type Pin struct {
	Vhost     []int
	VCPU      []int
	Generator []int
}

func (p *Pin) Fields() []schema.Field {
	return []schema.Field{
		schema.CPUs(&p.Vhost, "vhost").Default(nil).Axis().Pin("vhost").
			Doc("CPUs for the vhost-net worker thread (tap+vhost only; ignored in tap cells)"),
		schema.CPUs(&p.VCPU, "vcpu").Default(nil).Axis().Pin("vcpu").
			Doc("CPUs for QEMU's vCPU threads; with exactly guest.vcpus CPUs, vCPU i goes to the i-th"),
		schema.CPUs(&p.Generator, "generator").Default(nil).Axis().Pin("gen").
			Doc("CPUs for trafgen or iperf3 (pktgen threads are per-CPU kernel threads: use generator.pktgen.first_cpu)"),
	}
}

// Guest is the QEMU guest.
type Guest struct {
	VCPUs     int
	MemoryMiB int
	Sink      string
	Accel     string
	// Cmdline is the guest kernel's tuning parameters; "auto" = chosen by
	// the accelerator (the runner's GuestTuning).
	Cmdline string
	Kernel  Kernel
}

func (g *Guest) Fields() []schema.Field {
	return []schema.Field{
		schema.Int(&g.VCPUs, "vcpus", 1, 64).Default(1).Unit("count").Axis().Short("vcpus").Doc("virtual CPUs"),
		schema.SizeMiB(&g.MemoryMiB, "memory").Default(1024).Unit("bytes (KiB, MiB, GiB)").Axis().Short("mem").
			Doc("guest memory, e.g. 512MiB or 1GiB"),
		schema.Enum(&g.Sink, "sink", "stack", "xdp-drop", "flow-count").Default("stack").Axis().Bare().
			Doc("what the guest does with packets: stack = kernel stack (UDP to a closed port is dropped there), xdp-drop = XDP program drops at the driver, flow-count = XDP program counts per flow and drops"),
		schema.Enum(&g.Accel, "accel", "auto", "kvm", "tcg").Default("auto").
			Doc("QEMU accelerator; auto = KVM when it really works (a test vCPU runs), else TCG with a warning (numbers then measure the emulator); kvm where KVM does not work is refused before anything boots"),
		schema.String(&g.Cmdline, "cmdline", "kernel parameters", checkCmdline).Default("auto").
			Doc("guest kernel parameters besides the console, panic and vnb.* ones the harness sets; auto = by accelerator: under TCG `mitigations=off tsc=reliable no_timer_check` and boot-time skips (`cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp audit=0`), under KVM only `cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp`, so the guest kernel runs as on a real host; recorded in env.json (guest_cmdline)"),
		schema.SectionFunc("kernel", g.Kernel.guestFields).
			Doc("guest kernel (label unused); unset = the default guest image's kernel (Debian 6.1)"),
	}
}

// Generator is the traffic generator of a cell: the workload Kind (a
// registered workload's name) and its resolved section.
type Generator struct {
	Kind   string
	Config workload.Config
}

// field is the generator: key, one variant per registered workload.
func (g *Generator) field() schema.Field {
	var vs []schema.Variant
	for _, w := range workload.All() {
		vs = append(vs, schema.Variant{Name: w.Name(), Doc: w.Doc(), New: func() schema.Fielder { return w.New() }})
	}
	get := func() (string, schema.Fielder) {
		if g.Config == nil {
			return g.Kind, nil
		}
		return g.Kind, g.Config
	}
	set := func(name string, f schema.Fielder) { g.Kind, g.Config = name, f.(workload.Config) }
	return schema.OneOf("generator", vs, get, set).
		Doc("traffic generator; give one or more of " + strings.Join(workload.Names(), ", ") + " (several = an axis)").
		Example("generator: {iperf3: {duration: 10s}}")
}

// Workload returns the cell's registered workload.
func (g Generator) Workload() workload.Workload {
	w, _ := workload.Lookup(g.Kind)
	return w
}

// Perf configures perf during the measurement window. nil parts are off.
type Perf struct {
	Stat   *PerfStat
	Record *PerfRecord
}

func (p *Perf) Fields() []schema.Field {
	return []schema.Field{
		schema.Optional(&p.Stat, "stat").Doc("perf stat counters per target thread group"),
		schema.Optional(&p.Record, "record").Doc("perf record sampling, reported as the top symbols"),
	}
}

// Perf target names of the harness's own threads; a workload's threads
// are the target workload.Target names (and "generator" is the cell's).
const (
	TargetGenerator = "generator"
	TargetVhost     = "vhost"
	TargetVCPU      = "vcpu"
	TargetQEMU      = "qemu"
)

// perfTargets are the allowed perf targets: the harness's, then every
// workload's.
func perfTargets() []string {
	out := []string{TargetGenerator, TargetVhost, TargetVCPU, TargetQEMU}
	for _, w := range workload.All() {
		out = append(out, workload.Target(w))
	}
	return out
}

func targetsDoc() string {
	var ws []string
	for _, w := range workload.All() {
		ws = append(ws, workload.Target(w))
	}
	return "threads to count: vhost, vcpu, qemu (whole process), " + strings.Join(ws, ", ") +
		" (a workload's threads), generator (= the cell's generator); targets absent from a cell are skipped there"
}

// PerfStat is perf stat on targets.
type PerfStat struct {
	Targets []string
	Events  []string
}

func (p *PerfStat) Fields() []schema.Field {
	return []schema.Field{
		schema.EnumList(&p.Targets, "targets", perfTargets()...).Default([]string{TargetGenerator, TargetVhost, TargetVCPU}).
			Doc(targetsDoc()),
		schema.Strings(&p.Events, "events", "list of perf events", checkEvent).
			Default([]string{"task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles", "stalled-cycles-frontend", "instructions", "branches", "branch-misses"}).
			Doc("perf event names (unsupported ones, such as hardware events without a PMU, are reported as such); the default is perf stat's own list"),
	}
}

// PerfRecord is perf record on targets.
type PerfRecord struct {
	Targets   []string
	CallGraph bool
	Top       int
	FreqHz    int
}

func (p *PerfRecord) Fields() []schema.Field {
	return []schema.Field{
		schema.EnumList(&p.Targets, "targets", perfTargets()...).Default([]string{TargetGenerator, TargetVhost}).
			Doc("threads to sample (as for stat)"),
		schema.Bool(&p.CallGraph, "call_graph").Default(false).Doc("record call graphs (-g)"),
		schema.Int(&p.Top, "top", 1, 10000).Default(40).Unit("symbols").Doc("symbols kept from perf report"),
		schema.Int(&p.FreqHz, "freq", 1, 100000).Default(999).Unit("Hz").Doc("sampling frequency (-F)"),
	}
}

// Timeouts are per-phase deadlines. Load fills every field.
type Timeouts struct {
	Boot     time.Duration
	Setup    time.Duration
	Traffic  time.Duration
	Cell     time.Duration
	Teardown time.Duration
}

func (t *Timeouts) Fields() []schema.Field {
	return []schema.Field{
		schema.Duration(&t.Boot, "boot").Default(3 * time.Minute).Doc("QEMU start until the guest agent is ready"),
		schema.Duration(&t.Setup, "setup").Default(time.Minute).Doc("host setup: netns, tap, qdisc, pinning, module checks"),
		schema.Duration(&t.Traffic, "traffic").Auto("warmup + generator duration + 1m, or 10m for count-bounded pktgen").
			Doc("generator start until it has finished"),
		schema.Duration(&t.Cell, "cell").Auto("boot + setup + traffic + teardown").Doc("one repetition of one cell, all phases"),
		schema.Duration(&t.Teardown, "teardown").Default(30 * time.Second).Doc("undo everything (runs even after a failure or SIGINT)"),
	}
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
