package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Needs lists what cells require from the host.
type Needs struct {
	Tools    []string // programs
	Features []string // workload features (workload.Feature names)
	Vhost    bool
	Qdiscs   []string
	Lab      bool // a kernel other than the running one
	NoNetns  bool // isolation: none
	// GuestPrograms and GuestModules are what the guest image must carry.
	GuestPrograms, GuestModules []string
	// VsockCIDs are the guests' vsock context IDs (vhost-vsock-pci).
	VsockCIDs []uint32
	// LabDeps are what the lab kernels need here to be fetched and
	// built (labDeps).
	LabDeps []LabDep
	// checks are the workloads' own checks (pktgen script mode: the
	// kernel's sample script exists).
	checks []func() error
}

// CheckScripts runs the workloads' own checks of cells (pktgen script
// mode: the sample script exists) and finds the programs their guests
// carry on this host, before anything is set up.
func CheckScripts(cells []scenarios.Cell) error { return NeedsOf(cells).check() }

// CheckWorkload runs the workload's own check of cell c (pktgen script
// mode: its script_dir holds the sample script), as Preflight does: plan
// and run --dry-run refuse what run refuses.
func CheckWorkload(c *scenarios.Cell) error {
	if c.Generator.Config == nil {
		return nil
	}
	if check := c.Generator.Config.Needs().Check; check != nil {
		return check()
	}
	return nil
}

func (n Needs) check() error {
	onPath := func(p string) bool { _, err := proc.LookPath(p); return err == nil }
	if r := n.guestRefusals(onPath); len(r) > 0 {
		return r[0].Err()
	}
	for _, c := range n.checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// NeedsOf collects what the cells need.
func NeedsOf(cells []scenarios.Cell) Needs {
	var n Needs
	tools := map[string]bool{qemu.DefaultBinary: true}
	features := map[string]bool{}
	guest, guestMods := map[string]bool{}, map[string]bool{}
	cids := map[uint32]bool{}
	qd := map[string]bool{}
	for i := range cells {
		c := &cells[i]
		var wn workload.Needs
		if c.Generator.Config != nil {
			wn = c.Generator.Config.Needs()
		}
		for _, t := range wn.Tools {
			tools[t] = true
		}
		for _, f := range wn.Features {
			features[f] = true
		}
		for _, p := range wn.GuestPrograms {
			guest[p] = true
		}
		for _, m := range wn.GuestModules {
			guestMods[m] = true
		}
		if wn.VsockCID != 0 && !cids[wn.VsockCID] {
			cids[wn.VsockCID] = true
			n.VsockCIDs = append(n.VsockCIDs, wn.VsockCID)
		}
		if wn.Check != nil {
			n.checks = append(n.checks, wn.Check)
		}
		if c.Perf.Stat != nil || c.Perf.Record != nil {
			tools["perf"] = true
		}
		if c.Backend == scenarios.BackendVhost {
			n.Vhost = true
		}
		if c.Qdisc != "" {
			qd[c.Qdisc] = true
		}
		if !c.Kernel.Running() {
			n.Lab = true
		}
		if c.Isolation == "none" {
			n.NoNetns = true
		}
	}
	n.Tools = sortedKeys(tools)
	n.Features = sortedKeys(features)
	n.GuestPrograms = sortedKeys(guest)
	n.GuestModules = sortedKeys(guestMods)
	n.Qdiscs = sortedKeys(qd)
	n.LabDeps = labDeps(cells)
	return n
}

func debPackage(tool string) string {
	for _, t := range AllTools() {
		if t.Name == tool {
			return t.Package
		}
	}
	return tool
}

// feature returns the registered workload feature named name.
func feature(name string) (workload.Feature, bool) {
	for _, f := range workload.AllFeatures() {
		if f.Name == name {
			return f, true
		}
	}
	return workload.Feature{}, false
}

// Preflight checks, before anything is set up, that this host can run
// every cell: root, tools, /dev/net/tun, vhost-net, the programs the guest
// image copies from here, vhost-vsock and free vsock guest CIDs, the
// workloads' features (pktgen) and checks, perf stat's events, qdiscs.
// The first problem is a fault.ErrCapability error saying what to do, or
// bad input (a vsock CID in use or reserved, an event perf cannot parse:
// fault.ErrInput).
func Preflight(ctx context.Context, cells []scenarios.Cell, ex proc.Executor) error {
	n := NeedsOf(cells)
	if n.Lab {
		rel, _ := hostnet.KernelRelease()
		return capErrorf("the scenario tests a kernel other than the running one (%s): its cells run in lab VMs (vnetbench run does this; runner/lab's Run)", rel)
	}
	for i := range cells {
		if err := CheckGuestKernel(&cells[i]); err != nil {
			return err
		}
	}
	if r := n.Refusals(LookHost(n)); len(r) > 0 {
		return r[0].Err() // plan and run --dry-run predict these (RefusalsOf)
	}
	if err := n.check(); err != nil {
		return err
	}
	if err := checkPerfEvents(ctx, cells, ex); err != nil {
		return err
	}
	// A guest's vsock device: /dev/vhost-vsock here, and its CID free
	// (claimed and released at once, as QEMU will claim it).
	for _, cid := range n.VsockCIDs {
		if err := qemu.CheckVsock(qemu.Config{VsockCID: cid}); err != nil {
			return err
		}
	}
	for _, name := range n.Features {
		if f, ok := feature(name); ok && !f.Cheap { // the cheap ones: Refusals
			if p := f.Probe(); !p.OK {
				return capErrorf("%s; %s", p.Why, featureFix(p))
			}
		}
	}
	if len(n.Qdiscs) > 0 {
		res, err := ProbeQdiscs(n.Qdiscs)
		if err != nil {
			return err
		}
		for _, q := range n.Qdiscs {
			if res[q] != nil {
				return res[q]
			}
		}
	}
	return nil
}

// ProbeQdiscs tries each qdisc kind on a tap in a throwaway namespace and
// returns the error per kind (nil = available). The namespace is deleted.
func ProbeQdiscs(kinds []string) (map[string]error, error) {
	if os.Geteuid() != 0 {
		return nil, capErrorf("probing qdiscs needs root")
	}
	ns, err := hostnet.CreateNetns(probeNetns())
	if err != nil {
		return nil, err
	}
	defer ns.Delete()
	if err := ns.CreateTap(hostnet.Tap{Name: "vnbp0"}); err != nil {
		return nil, err
	}
	out := map[string]error{}
	sorted := append([]string(nil), kinds...)
	sort.Strings(sorted)
	for _, k := range sorted {
		err := ns.SetQdisc("vnbp0", k)
		var qe *hostnet.QdiscError
		if err != nil && !errors.As(err, &qe) {
			err = fmt.Errorf("qdisc %s: %w", k, err)
		}
		out[k] = err
	}
	return out, nil
}

// probeNetns names ProbeQdiscs's namespace after this process: every run
// and every doctor probes, and two processes may probe at once.
func probeNetns() string { return "vnb-probe-" + strconv.Itoa(os.Getpid()) }
