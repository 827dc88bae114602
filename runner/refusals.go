package runner

import (
	"os"

	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Refusal is one reason Preflight refuses cells on this host, and its fix.
type Refusal struct{ Why, Fix string }

// String is the line plan and run --dry-run print.
func (r Refusal) String() string { return "run would refuse: " + r.Why + "; fix: " + r.Fix }

// Err is the refusal as Preflight returns it: a capability error.
func (r Refusal) Err() error { return capErrorf("%s; %s", r.Why, r.Fix) }

// Facts are what a look at devices, PATH and files tells of this host
// about some needs (LookHost): the part of Preflight cheap enough for
// plan and run --dry-run, which must not take doctor's second or more
// (no namespace, no qdisc or AF_XDP probe, no vsock CID claimed).
type Facts struct {
	Root, Tun, VhostNet, VhostVsock bool
	// Missing are the needs' programs (tools, the guest image's, the
	// lab kernels' fetch and build tools) not on PATH and the lab
	// kernels' header files that are not there.
	Missing map[string]bool
	// Features are the probes of the needs' cheap features
	// (workload.Feature.Cheap); the others are Preflight's and doctor's.
	Features map[string]workload.Probe
	// Qdiscs are the qdisc kinds tried on a tap and whether each
	// worked: doctor's probe (a kind not tried is not refused; LookHost
	// tries none, Preflight tries them itself).
	Qdiscs map[string]bool
}

// LookHost looks at this host for what n needs.
func LookHost(n Needs) Facts {
	f := Facts{Root: os.Geteuid() == 0, Tun: exists("/dev/net/tun"), VhostNet: exists(qemu.VhostNetPath),
		VhostVsock: exists(qemu.VhostVsockPath), Missing: map[string]bool{}, Features: map[string]workload.Probe{}}
	for _, p := range append(append([]string(nil), n.Tools...), n.GuestPrograms...) {
		if _, err := proc.LookPath(p); err != nil {
			f.Missing[p] = true
		}
	}
	for _, d := range n.LabDeps {
		if !haveDep(d.Dep) {
			f.Missing[d.Name] = true
		}
	}
	for _, name := range n.Features {
		if ft, ok := feature(name); ok && ft.Cheap {
			f.Features[name] = ft.Probe()
		}
	}
	return f
}

// haveDep reports whether d, a program or a header file, is here.
func haveDep(d kbuild.Dep) bool {
	if d.Header {
		return exists(d.Name)
	}
	_, err := proc.LookPath(d.Name)
	return err == nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// RefusalsOf are the refusals of cells that look (LookHost, or a test's
// facts) predicts: the running kernel's cells' in Preflight's order,
// then the lab kernels' (LabRefusals); none when look is nil.
func RefusalsOf(cells []scenarios.Cell, look func(Needs) Facts) []Refusal {
	host, _ := scenarios.SplitRunning(cells)
	var out []Refusal
	if look != nil && len(host) > 0 {
		n := NeedsOf(host)
		out = n.Refusals(look(n))
	}
	return append(out, LabRefusals(cells, look)...)
}

// LabRefusals are what run refuses of the lab kernels' cells among cells
// before it builds or boots anything, as look predicts: the tools to fetch
// and build their kernels, QEMU and the programs the lab VMs take from
// this host; none when look is nil. Their pktgen, vhost-net and qdiscs
// are the lab kernels' to have.
func LabRefusals(cells []scenarios.Cell, look func(Needs) Facts) []Refusal {
	_, labCells := scenarios.SplitRunning(cells)
	if look == nil || len(labCells) == 0 {
		return nil
	}
	n := NeedsOf(labCells)
	return n.labRefusals(look(n))
}

// Refusals are what Preflight refuses of n on a host with facts f, one
// each, in its order.
func (n Needs) Refusals(f Facts) []Refusal {
	var out []Refusal
	add := func(why, fix string) { out = append(out, Refusal{why, fix}) }
	if n.NoNetns {
		add("isolation: none is not supported by run (traffic must stay in a namespace the harness owns)", "use isolation: netns")
	}
	if !f.Root {
		add("run needs root (network namespaces, tap devices, CPU affinity of other processes)", "run it with sudo")
	}
	if !f.Tun {
		add("/dev/net/tun is missing: the kernel has no tun/tap (CONFIG_TUN)", "run 'vnetbench doctor', or use "+LabHint)
	}
	for _, t := range n.Tools {
		if f.Missing[t] {
			add(t+" is not installed", "install the Debian package "+debPackage(t)+" (make deps)")
		}
	}
	if n.Vhost && !f.VhostNet {
		add("backend tap+vhost needs "+qemu.VhostNetPath+", which this kernel does not provide (QEMU would abort with an assertion)",
			"load vhost_net (modprobe vhost_net), use backend: tap, or run the scenario in "+LabHint)
	}
	out = append(out, n.guestRefusals(func(p string) bool { return !f.Missing[p] })...)
	if len(n.VsockCIDs) > 0 && !f.VhostVsock {
		add("vsock to the guest needs "+qemu.VhostVsockPath+", which this kernel does not provide",
			"load vhost_vsock (modprobe vhost_vsock), or run the scenario in "+LabHint+", whose lab VM loads it")
	}
	for _, name := range n.Features {
		if p, ok := f.Features[name]; ok && !p.OK {
			add(p.Why, featureFix(p))
		}
	}
	for _, q := range n.Qdiscs {
		if ok, tried := f.Qdiscs[q]; tried && !ok {
			add("qdisc "+q+" is not available in this kernel", "use a qdisc it has (noqueue, pfifo_fast), or "+LabHint)
		}
	}
	return out
}

// guestRefusals are the programs the guest image copies from this host
// (a lab VM sees the host's root) and have says it lacks: a missing
// one would fail the first boot.
func (n Needs) guestRefusals(have func(string) bool) []Refusal {
	var out []Refusal
	for _, p := range n.GuestPrograms {
		if !have(p) {
			pkg := debPackage(p)
			out = append(out, Refusal{p + " is not installed: the guest image copies it from this host", "install the Debian package " + pkg + " (apt-get install " + pkg + ")"})
		}
	}
	return out
}

// featureFix is what gets a feature the host lacks: its probe's fix
// (modprobe pktgen), or lab mode.
func featureFix(p workload.Probe) string {
	if p.Fix != "" {
		return p.Fix + ", or " + LabHint
	}
	return LabHint
}
