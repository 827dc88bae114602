package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/perfparse"
)

// Runner is the run side of a Config: the runner asks it what the host
// needs, what it would run (plan) and for a Generator per window.
type Runner interface {
	// Needs is what this cell's workload needs on the host that runs it.
	Needs() Needs
	// Commands returns the commands and /proc writes one window of this
	// cell runs, one line each, shell-quoted (proc.Cmd.String), for plan
	// and run --dry-run. Values known only at run time are placeholders
	// from p.
	Commands(p PlanEnv) []string
	// Generator returns a generator for one window (or one warmup).
	Generator() Generator
}

// Generator drives one window of traffic. It is used once: Start, then
// Wait. The runner starts perf on Threads right after Start returns and
// stops it when Wait returns, so the window is the generator's run. Wait
// is also called on the error paths after a successful Start: it stops
// the traffic (at once when ctx is done) and releases what Start took
// (processes, pktgen state, servers in the guest).
type Generator interface {
	// Start starts the traffic and returns once it runs.
	Start(ctx context.Context, w *Window) error
	// Threads returns the generator's host threads (for perf and
	// pinning); whole is true when they are process ids to be followed
	// with all their threads (perf -p).
	Threads() (tids []int, whole bool)
	// Wait waits for the end of the traffic (duration or count, bounded
	// by ctx) and returns what the generator measured.
	Wait(ctx context.Context) (*Result, error)
}

// Preparer is a Generator whose threads exist before its traffic starts
// (pktgen's kpktgend threads). Prepare checks and plans without sending;
// Threads is valid after it. The runner then starts perf on those threads
// before Start and stops it after Wait: perf never attaches to or detaches
// from a thread that is sending, and its counts cover the whole window.
type Preparer interface {
	Prepare(ctx context.Context, w *Window) error
}

// Releaser is a Preparer whose Prepare takes resources (sockets and
// threads, a started process that waits for its start command): Release
// frees them when the window fails between Prepare and Start (perf or
// pinning failed). A Prepare error, or a Start error after Prepare,
// leaves nothing to release; a Prepare error that is an
// UnsupportedError makes the cell n/a like Start's.
type Releaser interface {
	Release()
}

// Window is what a generator knows of the cell it drives.
type Window struct {
	Exec  proc.Executor
	Netns string // network namespace of the tap ("" = the harness's)
	// NetnsProc is the /proc/PID directory of a process inside Netns
	// (QEMU), for the namespace's views: NetnsProc/net/pktgen,
	// NetnsProc/root/sys/class/net; "" = the harness's namespace
	// (/proc/net, /sys/class/net).
	NetnsProc string
	Dev       string // the tap
	DevMAC    string // the tap's MAC
	Src       string // the tap's (host end's) IP
	Dst       string // the guest's IP
	DstMAC    string // the guest's MAC
	// Artifacts is the directory for raw outputs (absolute), new for
	// this window; RelDir the same relative to the run directory
	// (Result.Artifacts are relative). Out is that directory as a
	// safefs.Dir: the generator writes its files with WriteArtifact, and
	// programs it starts get paths under Artifacts.
	Artifacts string
	Out       *safefs.Dir
	RelDir    string
	// Duration overrides the configured duration (warmup); 0 = as
	// configured.
	Duration time.Duration
	// Agent is the guest agent (nil when there is none, as in tests).
	Agent Agent
	// InNetns runs fn on a thread inside Netns (pktgen's pgctrl acts on
	// the writer's namespace); nil = the harness's namespace.
	InNetns func(fn func() error) error
	// Note adds a line to reproduce.sh for actions that are not commands
	// run through Exec (those are recorded already), e.g. /proc writes.
	Note func(line string)
	// Proc is the /proc the generator reads threads and CPU time from
	// (the zero value: this machine's).
	Proc proc.FS
	// KernelThreads returns the pids of the kernel threads named name
	// that belong to Netns (per-namespace kernel threads such as pktgen's
	// kpktgend_N exist once per namespace under one name) and a warning
	// when that was ambiguous; nil = every kernel thread of that name.
	KernelThreads func(name string) (pids []int, warning string)
	// DropCounts, when set, reads the kernel's drop counters now (drop
	// reasons: see Result.Drops); a generator that reads the tap's
	// tx_dropped itself (pktgen) reads these at the same moments.
	DropCounts func() (map[string]uint64, error)
}

// Agent is the guest agent as a workload sees it.
type Agent interface {
	// Do asks the agent for op with action and args and waits for its
	// reply: the agent protocol's ops (vmimages.Op*) and the workloads'
	// GuestOps (iperf3's server, vsock's sender, ...). detail is the op's reply text (a GuestOp's detail). An op
	// that reports this guest's kernel cannot do it (a GuestOp returning
	// an *UnsupportedError) is an *UnsupportedError here too, so the cell
	// reads n/a.
	Do(ctx context.Context, op, action string, args ...string) (detail string, err error)
}

// GuestOp is a workload's op run inside the guest by the agent (the
// guest's /init is this binary, so a workload's own code runs there): the
// host's Agent.Do(ctx, op, action, args...) reaches it. It returns
// promptly, with a detail for the reply (Agent.Do returns it);
// long-running work (a sender, a redirector) goes on in the background
// until a stop action. An error that is an *UnsupportedError (Unsupported)
// says the guest's kernel cannot do what was asked: the host's Agent.Do
// returns an *UnsupportedError with the same reason.
type GuestOp func(action string, args []string) (detail string, err error)

// GuestOper is a Workload with guest-side ops, by op name. Names are
// unique across workloads and differ from the agent's own (stats, sink,
// poweroff, ping).
type GuestOper interface {
	GuestOps() map[string]GuestOp
}

// GuestOps returns the guest ops of every registered workload; the agent
// serves them. It panics on a name two workloads use (a programming error
// any test finds).
func GuestOps() map[string]GuestOp {
	out := map[string]GuestOp{}
	for _, w := range All() {
		g, ok := w.(GuestOper)
		if !ok {
			continue
		}
		for name, op := range g.GuestOps() {
			if _, dup := out[name]; dup {
				panic(fmt.Sprintf("workload: guest op %q registered twice", name))
			}
			out[name] = op
		}
	}
	return out
}

// Result is what a generator measured in its window.
type Result struct {
	// Metrics are the workload's own metrics in base units (tx_pps,
	// throughput_bps, ...): keys of its Metrics.
	Metrics map[metric.Key]float64
	// Threads are per generator thread (pktgen).
	Threads []Thread
	// Elapsed is the traffic time as the generator saw it.
	Elapsed time.Duration
	// Packets is how many packets the generator transmitted (0 =
	// unknown): the runner checks it against the tap's tx_packets and
	// divides the perf targets' CPU time by it (cpu_per_pkt.<target>).
	Packets uint64
	// BusyFrac is the share of the window the generator's threads were
	// on a CPU, per thread (1 = always); 0 or less = unknown.
	BusyFrac float64
	// InHarnessCPU is the CPU time the generator spent in the harness's
	// own process (an in-process generator's threads): the harness's
	// own CPU use (harness_cpu_frac) leaves it out.
	InHarnessCPU time.Duration
	// CountsDrops says the generator's count (tx_pps) includes the
	// frames the tap dropped (AF_XDP completions: tun drops inside the
	// transmit); the runner then checks it against the tap's tx_packets
	// + tx_dropped.
	CountsDrops bool
	// Drops is the growth of Window.DropCounts over the generator's own
	// interval of its Lost (pktgen: from just before its start to its
	// end), set by a generator that read them (DropsOK); the runner reads
	// them over the window for the others. Its metrics are drop_pps.KEY
	// over the same time as lost_pps.
	Drops   map[string]uint64
	DropsOK bool
	// Artifacts are raw outputs, relative to the run directory.
	Artifacts []string
	Warnings  []string
}

// Thread is one generator thread's share of a window.
type Thread struct {
	I       int
	TxPPS   float64
	Errors  uint64
	LostPPS *float64 // nil = unknown
}

// Needs is what one cell's workload needs on the host that runs it.
type Needs struct {
	// Tools are programs it runs on the host (names of Workload.Tools).
	Tools []string
	// Features are kernel capabilities it needs on the host (names of
	// Workload.Features).
	Features []string
	// GuestPrograms are host programs the guest image must carry (with
	// their shared libraries, as /usr/bin/NAME), e.g. "iperf3" for the
	// guest's server.
	GuestPrograms []string
	// GuestModules are kernel modules the guest loads at boot (besides
	// those of its NIC), e.g. "vmw_vsock_virtio_transport".
	GuestModules []string
	// QEMUArgs are extra QEMU arguments for the cell's guest, e.g.
	// ["-device", "virtio-rng-pci"]; cells whose QEMUArgs differ boot
	// different guests.
	QEMUArgs []string
	// VsockCID, when not 0, gives the cell's guest a vhost-vsock-pci
	// device with this context ID (AF_VSOCK between the guest and the host
	// at CID 2). The host must have /dev/vhost-vsock (module vhost_vsock)
	// and the CID free: preflight checks both (a CID in use or reserved is
	// bad input). Cells whose VsockCID differs boot different guests.
	VsockCID uint32
	// GuestFeatures are what the cell needs from its guest's kernel
	// (vsock sockmap). The guest finds out at run time (the cell is n/a
	// with the feature's Why when its kernel lacks it); doctor tells from
	// the guest kernel's release ahead of a run.
	GuestFeatures []KernelFeature
	// Check runs before anything is set up (pktgen script mode: the
	// script exists); its error is shown as it is. nil = nothing.
	Check func() error
	// Shares are host directories a lab VM must see (the kernel tree of
	// pktgen script mode).
	Shares []string
}

// KernelFeature is a capability of a kernel that a workload's guest side
// needs, such as vsock sockmap.
type KernelFeature struct {
	Name string // doctor's word for it: "vsock sockmap"
	// Since is the first Linux release that has it ("6.4"): doctor
	// compares a guest kernel's release with it (a backport is found only
	// at run time).
	Since string
	// Why is the n/a reason of a cell whose guest kernel lacks it: "this
	// kernel has no vsock sockmap support (Linux 6.4+)".
	Why string
}

// GuestFeaturer is a Workload whose cells may need KernelFeatures of
// their guest's kernel (vsock sockmap): doctor lists them.
type GuestFeaturer interface {
	GuestFeatures() []KernelFeature
}

// AllGuestFeatures lists the guest-kernel features of every registered
// workload, once per name.
func AllGuestFeatures() []KernelFeature {
	var out []KernelFeature
	seen := map[string]bool{}
	for _, w := range All() {
		if g, ok := w.(GuestFeaturer); ok {
			for _, f := range g.GuestFeatures() {
				if !seen[f.Name] {
					seen[f.Name] = true
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// Tool is a program a workload runs on the host.
type Tool struct {
	Name    string   // looked up in PATH
	Package string   // Debian package that provides it
	Version []string // argv printing its version (nil = not recorded)
}

// Feature is a kernel capability a workload needs (pktgen).
type Feature struct {
	Name string // doctor's line, e.g. "pktgen"
	// Module is the kernel module a lab VM loads for it ("" = none).
	Module string
	// Probe looks at this host.
	Probe func() Probe
	// Cheap: Probe only reads files (no socket, device or namespace), so
	// plan and run --dry-run call it to say what run would refuse.
	Cheap bool
}

// Probe is what a Feature's probe found.
type Probe struct {
	OK     bool
	Detail string // doctor's detail, e.g. "loaded (/proc/net/pktgen)"
	Fix    string // what to do when not OK (doctor)
	// Why is preflight's message when not OK, e.g. "pktgen is not
	// available in kernel X (...); use trafgen or iperf3" (the runner adds
	// how lab mode gets it).
	Why string
}

// Tooler is a Workload that runs programs on the host.
type Tooler interface {
	Tools() []Tool
}

// Featurer is a Workload that needs kernel capabilities.
type Featurer interface {
	Features() []Feature
}

// WriteArtifact writes a raw output of the window, name in its artifact
// directory (through Out: no link followed), and returns its path
// relative to the run directory, for Result.Artifacts.
func (w *Window) WriteArtifact(name string, data []byte) (string, error) {
	out := w.Out
	if out == nil { // a window made without one (tests)
		if w.Artifacts == "" {
			return "", errors.New("no artifact directory")
		}
		d, err := safefs.Open(w.Artifacts)
		if err != nil {
			return "", err
		}
		defer d.Close()
		out = d
	}
	if err := out.WriteFile(name, data, 0o644); err != nil {
		return "", err
	}
	return filepath.Join(w.RelDir, name), nil
}

// AddJSONArtifact writes v, indented JSON, as the window's artifact name
// (WriteArtifact) and lists it in r.Artifacts: the counts behind a
// generator's metrics. A window without an artifact directory (tests)
// keeps none; a write that fails is a warning of r, not an error: the
// metrics stand without it.
func (w *Window) AddJSONArtifact(r *Result, name string, v any) {
	if w.Artifacts == "" && w.Out == nil {
		return
	}
	b, err := json.MarshalIndent(v, "", "  ")
	var rel string
	if err == nil {
		rel, err = w.WriteArtifact(name, append(b, '\n'))
	}
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("artifact %s not written: %v", name, err))
		return
	}
	r.Artifacts = append(r.Artifacts, rel)
}

// CreateArtifact makes name, a new file in the window's artifact
// directory (through Out), for a program's output; it returns the file
// and its absolute path.
func (w *Window) CreateArtifact(name string) (*os.File, string, error) {
	if w.Out == nil {
		d, err := safefs.Open(w.Artifacts)
		if err != nil {
			return nil, "", err
		}
		defer d.Close()
		f, err := d.Create(name, 0o644)
		return f, d.Join(name), err
	}
	f, err := w.Out.Create(name, 0o644)
	return f, w.Out.Join(name), err
}

// PlanEnv is where a cell's commands run, as plan shows them: names and
// placeholders for values known only at run time.
type PlanEnv struct {
	Netns     string // e.g. "vnb-RUNID"
	Dev       string // the tap
	DevMAC    string // "TAP_MAC"
	Src, Dst  string // the tap's and the guest's IP
	DstMAC    string
	Artifacts string // e.g. "RUN_DIR/artifacts/CELL/KERNEL/REP"
	Queues    int    // the tap's queue pairs (0 = unknown)
}

// UnsupportedError says this kernel or device cannot run the cell's
// configuration (AF_XDP zero-copy refused, say): the cell is "n/a" with
// the reason, not a failed run.
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return "not supported: " + e.Reason }

// NotSupported returns the reason: the guest agent, which names no
// workload type, recognizes a GuestOp's *UnsupportedError by this method.
func (e *UnsupportedError) NotSupported() string { return e.Reason }

// Unsupported returns an *UnsupportedError.
func Unsupported(format string, a ...any) error {
	return &UnsupportedError{Reason: fmt.Sprintf(format, a...)}
}

// IsUnsupported reports whether err says the configuration is not
// supported here, and why: an *UnsupportedError, or any error with a
// NotSupported() string method, by which a driver below the registry
// (internal/xsk) says so without importing it.
func IsUnsupported(err error) (string, bool) {
	var u interface{ NotSupported() string }
	if errors.As(err, &u) {
		return u.NotSupported(), true
	}
	return "", false
}

// AllTools lists the tools of every registered workload, in registration
// order, once each.
func AllTools() []Tool {
	var out []Tool
	seen := map[string]bool{}
	for _, w := range All() {
		if t, ok := w.(Tooler); ok {
			for _, tool := range t.Tools() {
				if !seen[tool.Name] {
					seen[tool.Name] = true
					out = append(out, tool)
				}
			}
		}
	}
	return out
}

// LabModuler is a Workload whose cells need kernel modules on the host
// that none of its Features name (vsock: vhost_vsock, behind its guest's
// vhost-vsock-pci device): a lab VM loads them.
type LabModuler interface {
	LabModules() []string
}

// LabModules lists the kernel modules a lab VM loads for the registered
// workloads (their Features' modules and their LabModules), once each, in
// registration order.
func LabModules() []string {
	var out []string
	add := func(m string) {
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	for _, w := range All() {
		if f, ok := w.(Featurer); ok {
			for _, x := range f.Features() {
				add(x.Module)
			}
		}
		if l, ok := w.(LabModuler); ok {
			for _, m := range l.LabModules() {
				add(m)
			}
		}
	}
	return out
}

// Parser is a Workload whose tools' outputs `vnetbench parse` reads: it
// declares their kinds (perfparse defines the formats; PktgenKind, ...).
type Parser interface {
	ParseKinds() []perfparse.Kind
}

// ParseKinds lists the parse kinds of every registered workload, in
// registration order: the order in which auto detection asks them.
func ParseKinds() []perfparse.Kind {
	var out []perfparse.Kind
	for _, w := range All() {
		if p, ok := w.(Parser); ok {
			out = append(out, p.ParseKinds()...)
		}
	}
	return out
}

// AllFeatures lists the features of every registered workload.
func AllFeatures() []Feature {
	var out []Feature
	for _, w := range All() {
		if f, ok := w.(Featurer); ok {
			out = append(out, f.Features()...)
		}
	}
	return out
}
