package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Check is one line of `vnetbench doctor`.
type Check struct {
	Name   string
	OK     bool
	Detail string
	Fix    string // what to do when not OK
	// Warn marks a shortcoming that does not stop runs (TCG instead of
	// KVM, no hardware PMU, a power-saving governor).
	Warn bool
}

// Doctor is what this host can run.
type Doctor struct {
	Checks []Check
	// Facts the scenario verdicts use. VhostVsock: /dev/vhost-vsock
	// (module vhost_vsock), AF_VSOCK between host and guest.
	Root, Tun, VhostNet, VhostVsock bool
	// Features maps each workload feature (pktgen) to its probe here.
	Features   map[string]workload.Probe
	Accel      qemu.Accel
	Tools      map[string]string // name -> version ("" = missing)
	Qdiscs     map[string]bool
	PerfEvents map[string]bool // event -> supported
	// Lab is what lab mode has here (QEMU, accelerator, nested KVM,
	// apt-get): cells for other kernels need only this on the host, the
	// rest (pktgen, vhost-net, qdiscs) is in the lab VM's kernel.
	Lab labvm.Capabilities
	// LabKernel resolves a lab kernel to its image and modules without
	// downloading anything (nil: labvm.LocalKernel on vmimages.CacheDir()).
	LabKernel func(ctx context.Context, k scenarios.Kernel) (*vmimages.Kernel, error)
	// Look finds what doctor does not probe itself: the guest programs
	// and the lab kernels' fetch and build tools (nil: LookHost).
	Look func(Needs) Facts
}

// DoctorQdiscs are the qdisc kinds doctor tries.
var DoctorQdiscs = []string{"pfifo_fast", "noqueue", "fq_codel", "fq", "sfq"}

// DoctorEvents are the perf events doctor tries.
var DoctorEvents = []string{"task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles", "instructions", "branches", "branch-misses"}

// RunDoctor probes the host. It changes nothing outside a throwaway
// network namespace (deleted again).
func RunDoctor(ctx context.Context, ex proc.Executor) *Doctor {
	d := &Doctor{Tools: map[string]string{}, Qdiscs: map[string]bool{}, PerfEvents: map[string]bool{}}
	rel, _ := hostnet.KernelRelease()
	d.add(Check{Name: "kernel", OK: true, Detail: rel})
	d.Root = os.Geteuid() == 0
	d.add(Check{Name: "root", OK: d.Root, Detail: yesNo(d.Root), Fix: "run needs root: use sudo"})
	d.checkDevices()
	d.checkFeatures()
	for _, c := range guestFeatureChecks(HostBootImage()) {
		d.add(c)
	}
	d.checkTools(ctx, ex)
	d.add(d.qdiscsCheck())
	if d.Tools["perf"] != "" {
		d.add(d.perfEventsCheck(ctx, ex))
	}
	d.Lab = labvm.Probe()
	d.add(labCheck(d.Lab))
	d.add(kbuildCheck())
	gov := Governor()
	d.add(Check{Name: "cpus", OK: true, Detail: fmt.Sprintf("%d (%s)", runtime.NumCPU(), orStr(cpuModel(), "unknown model"))})
	d.add(Check{Name: "governor", OK: gov == "" || gov == "performance", Warn: true, Detail: orStr(gov, "none (no cpufreq)"),
		Fix: "set the performance governor for stable numbers (cpupower frequency-set -g performance)"})
	d.add(Check{Name: "mitigations", OK: true, Detail: summarizeMitigations(Mitigations())})
	return d
}

func (d *Doctor) add(c Check) { d.Checks = append(d.Checks, c) }

// checkDevices probes KVM and the devices guests need: vhost-net,
// vhost-vsock and tun.
func (d *Doctor) checkDevices() {
	kst := qemu.ProbeKVM()
	d.Accel = kst.Accel()
	d.add(kvmCheck(kst))
	f := LookHost(Needs{}) // the devices as run's preflight sees them
	d.VhostNet, d.VhostVsock, d.Tun = f.VhostNet, f.VhostVsock, f.Tun
	d.add(Check{Name: "vhost-net", OK: d.VhostNet, Detail: present(qemu.VhostNetPath, d.VhostNet),
		Fix: "load vhost_net (modprobe vhost_net), or run tap+vhost cells in " + LabHint})
	d.add(Check{Name: "vhost-vsock", OK: d.VhostVsock, Warn: true, Detail: present(qemu.VhostVsockPath, d.VhostVsock),
		Fix: "vsock to a guest needs it: load vhost_vsock (modprobe vhost_vsock), or run vsock cells in " + LabHint})
	d.add(Check{Name: "tun", OK: d.Tun, Detail: present("/dev/net/tun", d.Tun), Fix: "the kernel needs CONFIG_TUN, or use " + LabHint})
}

// checkFeatures probes the workloads' host features (pktgen, ...).
func (d *Doctor) checkFeatures() {
	d.Features = map[string]workload.Probe{}
	for _, f := range workload.AllFeatures() {
		p := f.Probe()
		d.Features[f.Name] = p
		c := Check{Name: f.Name, OK: p.OK, Detail: p.Detail, Fix: p.Fix}
		if !p.OK && c.Fix == "" {
			c.Fix = f.Name + " cells need " + LabHint
		}
		d.add(c)
	}
}

// checkTools looks up the tools runs use and their versions.
func (d *Doctor) checkTools(ctx context.Context, ex proc.Executor) {
	for _, t := range AllTools() {
		v := ""
		if _, err := proc.LookPath(t.Name); err == nil {
			v = ToolVersion(ctx, ex, t)
			if v == "" {
				v = "installed"
			}
		}
		d.Tools[t.Name] = v
		d.add(Check{Name: t.Name, OK: v != "", Detail: orStr(v, "missing"), Fix: "apt-get install " + t.Package + " (make deps)"})
	}
}

// qdiscsCheck probes DoctorQdiscs (with root and tun) into d.Qdiscs.
func (d *Doctor) qdiscsCheck() Check {
	if !d.Root || !d.Tun {
		return Check{Name: "qdiscs", OK: false, Detail: "not probed (needs root and /dev/net/tun)"}
	}
	res, err := ProbeQdiscs(DoctorQdiscs)
	if err != nil {
		return Check{Name: "qdiscs", OK: false, Detail: err.Error()}
	}
	var have, miss []string
	for _, q := range DoctorQdiscs {
		d.Qdiscs[q] = res[q] == nil
		if res[q] == nil {
			have = append(have, q)
		} else {
			miss = append(miss, q)
		}
	}
	c := Check{Name: "qdiscs", OK: len(miss) == 0, Detail: "available: " + strings.Join(have, " ")}
	if len(miss) > 0 {
		c.Detail += "; missing: " + strings.Join(miss, " ")
		c.Fix = "use noqueue/pfifo_fast, or " + LabHint
	}
	return c
}

// perfEventsCheck probes DoctorEvents with perf into d.PerfEvents.
func (d *Doctor) perfEventsCheck(ctx context.Context, ex proc.Executor) Check {
	sup, unsup, err := probePerfEvents(ctx, ex)
	if err != nil {
		return Check{Name: "perf events", OK: false, Detail: err.Error(), Fix: "check /proc/sys/kernel/perf_event_paranoid"}
	}
	for _, e := range sup {
		d.PerfEvents[e] = true
	}
	c := Check{Name: "perf events", OK: len(unsup) == 0, Warn: true, Detail: "supported: " + strings.Join(sup, " ")}
	if len(unsup) > 0 {
		c.Detail += "; not supported: " + strings.Join(unsup, " ")
		c.Fix = "no hardware PMU here (typical in VMs): hardware counters read <not supported>"
	}
	return c
}

func probePerfEvents(ctx context.Context, ex proc.Executor) (sup, unsup []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	f, err := os.CreateTemp("", "vnb-perf-*.csv")
	if err != nil {
		return nil, nil, err
	}
	f.Close()
	defer os.Remove(f.Name())
	argv := []string{"perf", "stat", "-x,", "-e", strings.Join(DoctorEvents, ","), "-o", f.Name(), "--", "true"}
	if _, err := ex.Run(ctx, proc.Cmd{Argv: argv}); err != nil {
		return nil, nil, fmt.Errorf("perf stat: %w", err)
	}
	b, _ := os.ReadFile(f.Name())
	st, err := perfparse.ParsePerfStat(bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	for _, r := range st.Rows {
		if r.Supported {
			sup = append(sup, r.Event)
		} else {
			unsup = append(unsup, r.Event)
		}
	}
	return sup, unsup, nil
}

func summarizeMitigations(m map[string]string) string {
	if len(m) == 0 {
		return "unknown"
	}
	counts := map[string]int{}
	for _, v := range m {
		switch {
		case strings.HasPrefix(v, "Not affected"):
			counts["not affected"]++
		case strings.HasPrefix(v, "Vulnerable"):
			counts["vulnerable"]++
		default:
			counts["mitigated"]++
		}
	}
	var parts []string
	for _, k := range sortedKeys(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ") + " (see env.json for each)"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func present(path string, ok bool) string {
	if ok {
		return path + " present"
	}
	return path + " missing"
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// kvmCheck is the host section's "kvm" line: what the probe found (a
// test vCPU run, the vendor module and its nested parameter).
func kvmCheck(st qemu.KVMStatus) Check {
	if !st.Usable {
		return Check{Name: "kvm", OK: false, Warn: true, Detail: "not usable: " + st.Why,
			Fix: "guests run under TCG (emulation): numbers measure the emulator"}
	}
	nested := st.Nested
	if nested == "" {
		nested = "unknown"
	}
	return Check{Name: "kvm", OK: true, Detail: fmt.Sprintf("usable (a test vCPU ran; %s, nested=%s)", st.Vendor, nested)}
}

// labCheck is the host section's "lab mode" line.
func labCheck(c labvm.Capabilities) Check {
	detail := fmt.Sprintf("accel %s, nested KVM %s, apt-get %s", c.Accel, yesNo(c.NestedKVM), yesNo(c.APTGet))
	if !c.QEMU {
		return Check{Name: "lab mode", OK: false, Detail: "unavailable: no " + qemu.DefaultBinary + "; " + detail,
			Fix: "apt-get install qemu-system-x86 (make deps)"}
	}
	ch := Check{Name: "lab mode", OK: true, Detail: "available: " + detail}
	if c.Accel != qemu.KVM {
		ch.OK, ch.Warn = false, true
		ch.Fix = "lab VMs and their nested guests run under TCG: each boot takes minutes"
	} else if !c.NestedKVM {
		ch.OK, ch.Warn = false, true
		vendor := c.Vendor
		if vendor == "" {
			vendor = "kvm_intel or kvm_amd"
		}
		ch.Fix = fmt.Sprintf("nested guests inside lab VMs run under TCG (%s nested=%s): enable nesting for speed (modprobe -r %s; modprobe %s nested=1)",
			vendor, orStr(c.KVM.Nested, "unknown"), vendor, vendor)
	}
	return ch
}

// kbuildCheck is the "kernel build" line: what building kernels from
// source (kernels: tree) needs here.
func kbuildCheck() Check {
	req, opt := kbuild.MissingDeps()
	switch {
	case len(req) > 0:
		var names []string
		for _, d := range req {
			names = append(names, d.Name)
		}
		return Check{Name: "kernel build", OK: false, Detail: "missing: " + strings.Join(names, ", "),
			Fix: "kernels: tree needs them: apt-get install " + strings.Join(kbuild.Packages(req), " ") + " (make deps)"}
	case len(opt) > 0:
		return Check{Name: "kernel build", OK: false, Warn: true, Detail: "tools present; no ccache",
			Fix: "apt-get install ccache (make deps): rebuilds in new work trees reuse compiled files"}
	}
	return Check{Name: "kernel build", OK: true, Detail: "gcc, make, flex, bison, bc, libelf, libssl, ccache present (kernels: tree)"}
}

// LabMode describes how cells for other kernels run here, e.g.
// "TCG: nested guest boots take minutes"; doctor prints it after
// "runs in lab mode". "KVM with nested KVM" needs a test vCPU to have run
// here and the vendor module's nested=Y/1 (labvm.FromKVM); LabKVM adds
// whether each lab kernel ships the modules lab init loads.
func (d *Doctor) LabMode() string {
	switch {
	case d.Lab.Accel != qemu.KVM:
		return "TCG: nested guest boots take minutes"
	case !d.Lab.NestedKVM:
		return "KVM, no nested KVM: the inner guests run under TCG"
	default:
		return "KVM with nested KVM"
	}
}

// LabKVM checks, when a lab VM here would give its nested guests KVM (KVM
// with nested KVM on a CPU with vmx or svm), that each lab kernel of cells
// ships kvm and this CPU's vendor module (as modules or built in): lab init
// loads them itself, so without them /dev/kvm never appears in the lab VM
// and its nested guests run under TCG. It returns one note per kernel label
// that lacks them or cannot be checked yet (a Debian package not fetched:
// nothing is downloaded here); none when all is in place or nested KVM is
// off anyway (LabMode says so).
func (d *Doctor) LabKVM(ctx context.Context, cells []scenarios.Cell) []string {
	if d.Lab.Accel != qemu.KVM || !d.Lab.NestedKVM || d.Lab.Vendor == "" {
		return nil
	}
	resolve := d.LabKernel
	if resolve == nil {
		resolve = func(ctx context.Context, k scenarios.Kernel) (*vmimages.Kernel, error) {
			return labvm.LocalKernel(ctx, labvm.Kernel{Image: k.Image, Modules: k.Modules, Debian: k.Debian}, vmimages.CacheDir())
		}
	}
	_, labCells := scenarios.SplitRunning(cells)
	seen := map[string]bool{}
	var notes []string
	for _, c := range labCells {
		if seen[c.Kernel.Label] {
			continue
		}
		seen[c.Kernel.Label] = true
		if c.Kernel.Builds() {
			continue // built at run time, KVM built in (runner/kbuild's base config)
		}
		k, err := resolve(ctx, c.Kernel)
		var missing []string
		if err == nil {
			if k.Modules == "" {
				err = errors.New("no modules directory")
			} else {
				missing, err = labvm.MissingKVMModules(k.Modules, d.Lab.Vendor)
			}
		}
		switch {
		case errors.Is(err, vmimages.ErrNotFetched):
			notes = append(notes, fmt.Sprintf("lab kernel %s not fetched yet: its kvm modules are checked when it boots", c.Kernel.Label))
		case err != nil:
			notes = append(notes, fmt.Sprintf("kvm modules of lab kernel %s unchecked: %v", c.Kernel.Label, err))
		case len(missing) > 0:
			notes = append(notes, fmt.Sprintf("lab kernel %s (%s) lacks %s: its nested guests run under TCG (build it with CONFIG_KVM and CONFIG_%s =m or =y)",
				c.Kernel.Label, k.Release, strings.Join(missing, " and "), strings.ToUpper(d.Lab.Vendor)))
		}
	}
	return notes
}

// LabHint tells users how to get lab mode.
const LabHint = `lab mode (vnetbench run SCENARIO --kernel stock=debian:6.1, or kernels: [{label: stock, debian: "6.1"}] in the scenario; each kernel then runs in a VM)`

// Missing is what run would refuse of cells on this host (RefusalsOf,
// the list plan and run --dry-run print), judged on what doctor probed:
// empty = the cells can run here. Cells for kernels other than the
// running one run in lab VMs: they need QEMU, the tools and the kernels'
// fetch and build here, while their pktgen, vhost-net and qdiscs are the
// lab kernel's.
func (d *Doctor) Missing(cells []scenarios.Cell) []Refusal {
	return RefusalsOf(cells, d.facts)
}

// facts are doctor's probes as the refusals read them: its devices,
// tools, features (those only run's preflight probes too) and qdiscs;
// what it does not probe (guest programs, the lab kernels' build tools)
// from d.Look.
func (d *Doctor) facts(n Needs) Facts {
	look := d.Look
	if look == nil {
		look = LookHost
	}
	f := look(Needs{GuestPrograms: n.GuestPrograms, LabDeps: n.LabDeps})
	if f.Missing == nil {
		f.Missing = map[string]bool{}
	}
	f.Root, f.Tun, f.VhostNet, f.VhostVsock = d.Root, d.Tun, d.VhostNet, d.VhostVsock
	for _, t := range n.Tools {
		f.Missing[t] = d.Tools[t] == ""
	}
	f.Features, f.Qdiscs = d.Features, d.Qdiscs
	return f
}
