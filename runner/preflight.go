package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"

	"github.com/vnetbench/vnetbench/runner/hostnet"
	"github.com/vnetbench/vnetbench/runner/pktgen"
	"github.com/vnetbench/vnetbench/runner/proc"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Needs lists what cells require from the host.
type Needs struct {
	Tools   []string // programs
	Vhost   bool
	Pktgen  bool
	Qdiscs  []string
	Lab     bool // a kernel other than the running one
	NoNetns bool // isolation: none
	// Scripts are the kernel sample scripts of pktgen script mode.
	Scripts []pktgen.ScriptConfig
}

// CheckScripts reports the first kernel sample script (pktgen script
// mode) that does not exist, before anything is set up.
func CheckScripts(cells []scenarios.Cell) error { return NeedsOf(cells).checkScripts() }

func (n Needs) checkScripts() error {
	for _, sc := range n.Scripts {
		if err := sc.CheckScript(); err != nil {
			return err
		}
	}
	return nil
}

// NeedsOf collects what the cells need.
func NeedsOf(cells []scenarios.Cell) Needs {
	var n Needs
	tools := map[string]bool{qemu.DefaultBinary: true}
	qd := map[string]bool{}
	for i := range cells {
		c := &cells[i]
		switch c.Generator.Kind {
		case "iperf3":
			tools["iperf3"] = true
		case "trafgen":
			tools["trafgen"] = true
		case "pktgen":
			n.Pktgen = true
			if p := c.Generator.Pktgen; p.Mode == pktgen.ModeScript {
				tools["bash"] = true
				n.Scripts = append(n.Scripts, scriptConfig(*p, pktgen.Config{}, ""))
			}
		}
		if c.Perf.Stat != nil || c.Perf.Record != nil {
			tools["perf"] = true
		}
		if c.Backend == "tap+vhost" {
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
	n.Qdiscs = sortedKeys(qd)
	return n
}

func debPackage(tool string) string {
	for _, t := range Tools {
		if t.Name == tool {
			return t.Package
		}
	}
	return tool
}

// PktgenAvailable reports whether this kernel has pktgen loaded
// (/proc/net/pktgen). This runner cannot load modules.
func PktgenAvailable() bool {
	_, err := os.Stat("/proc/net/pktgen/pgctrl")
	return err == nil
}

// Preflight checks, before anything is set up, that this host can run
// every cell: root, tools, /dev/net/tun, vhost-net, pktgen, qdiscs. The
// first problem is a *CapabilityError (exit 2) saying what to do.
func Preflight(ctx context.Context, cells []scenarios.Cell, ex proc.Executor) error {
	n := NeedsOf(cells)
	if n.Lab {
		return capErrorf("the scenario tests a kernel other than the running one (%s): its cells run in lab VMs (vnetbench run does this; runner.RunLab)", KernelRelease())
	}
	if n.NoNetns {
		return capErrorf("isolation: none is not supported by run (traffic must stay in a namespace the harness owns); use isolation: netns")
	}
	if os.Geteuid() != 0 {
		return capErrorf("run needs root (network namespaces, tap devices, CPU affinity of other processes); run it with sudo")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return capErrorf("/dev/net/tun is missing: the kernel has no tun/tap (CONFIG_TUN); run 'vnetbench doctor', or use %s", LabHint)
	}
	for _, t := range n.Tools {
		if _, err := exec.LookPath(t); err != nil {
			return capErrorf("%s is not installed; install the Debian package %s (make deps)", t, debPackage(t))
		}
	}
	if n.Vhost {
		if err := qemu.CheckVhost(qemu.Config{NICs: []qemu.NIC{{Vhost: true}}}); err != nil {
			return err
		}
	}
	if err := n.checkScripts(); err != nil {
		return err
	}
	if n.Pktgen && !PktgenAvailable() {
		return capErrorf("pktgen is not available in kernel %s (no /proc/net/pktgen, and modules cannot be loaded here); use trafgen or iperf3, or %s", KernelRelease(), LabHint)
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
	name := "vnb-probe-" + strconv.Itoa(os.Getpid())
	ns, err := hostnet.CreateNetns(name)
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
