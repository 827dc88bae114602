package runner

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/proc"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// ParseShard parses "I/N" (1 <= I <= N).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fault.Input("--shard %q: want I/N with 1 <= I <= N, e.g. --shard 2/4", s)
	}
	return i, n, nil
}

// Shard keeps the cells of shard i of n (1-based): whole cells (every
// repetition of a cell and kernel stays together), assigned round-robin
// over the sorted distinct cell keys, so every machine computes the same
// split from the same scenario. The order of the kept cells is unchanged.
func Shard(cells []scenarios.Cell, i, n int) []scenarios.Cell {
	if n <= 1 {
		return cells
	}
	keys := map[string]bool{}
	for _, c := range cells {
		keys[c.Kernel.Label+"\x00"+c.Name] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	owner := map[string]int{}
	for idx, k := range sorted {
		owner[k] = idx%n + 1
	}
	var out []scenarios.Cell
	for _, c := range cells {
		if owner[c.Kernel.Label+"\x00"+c.Name] == i {
			out = append(out, c)
		}
	}
	return out
}

// Commands returns the commands one sample of c runs with its guest under
// accel (CellAccel), quoted for a shell, with placeholders for values
// known only at run time (RUN_DIR, QEMU_PID, VCPU_TIDS, ...). For `run
// --dry-run` and `plan`.
func Commands(c *scenarios.Cell, accel qemu.Accel) []string {
	ns := "vnb-RUNID"
	tap := tapName(c)
	q := c.TapQueues()
	var out []string
	add := func(netns string, argv ...string) {
		out = append(out, proc.Cmd{Argv: argv, Netns: netns}.String())
	}
	add("", "ip", "netns", "add", ns)
	tapCmd := []string{"ip", "tuntap", "add", "dev", tap, "mode", "tap", "vnet_hdr"}
	if q > 1 {
		tapCmd = append(tapCmd, "multi_queue")
	}
	add(ns, tapCmd...)
	add(ns, "ip", "addr", "add", HostIP+"/"+strconv.Itoa(PrefixLen), "dev", tap)
	add(ns, "ip", "link", "set", tap, "up")
	if c.Qdisc != "" {
		add(ns, "tc", "qdisc", "replace", "dev", tap, "root", c.Qdisc)
	}
	cfg := qemu.Config{Name: "vnb-RUNID", Accel: accel, CPUs: c.Guest.VCPUs, MemoryMiB: c.Guest.MemoryMiB,
		Kernel: "GUEST_KERNEL", Initrd: "GUEST_INITRAMFS", Append: GuestCmdline(c, accel, ""),
		QMPSocket: "SOCKDIR/qmp.sock", AgentSocket: "SOCKDIR/agent.sock", ConsoleLog: filepath.Join("RUN_DIR", results.ConsoleLog(0)),
		NICs: []qemu.NIC{{Tap: tap, MAC: GuestMAC, Vhost: c.Backend == "tap+vhost", Queues: q}}}
	workloadDevices(&cfg, c)
	add(ns, qemu.Args(cfg)...)
	out = append(out, PinLines(c)...)
	art := filepath.Join("RUN_DIR", results.ArtifactsDir, "CELL", "KERNEL", "REP")
	if st := c.Perf.Stat; st != nil {
		for _, t := range st.Targets {
			add("", PerfStatArgs(st.Events, []int{0}, t == "qemu", art+"/perf-stat-"+t+".csv")...)
		}
	}
	if rec := c.Perf.Record; rec != nil {
		for _, t := range rec.Targets {
			add("", PerfRecordArgs(*rec, []int{0}, t == "qemu", art+"/perf-"+t+".data")...)
		}
	}
	// The workload's own commands (and /proc writes): pktgen is per
	// network namespace, so its writes go to /proc/QEMU_PID/net/pktgen.
	out = append(out, c.Generator.Config.Commands(workload.PlanEnv{Netns: ns, Dev: tap, DevMAC: "TAP_MAC",
		Src: HostIP, Dst: GuestIP, DstMAC: GuestMAC, Artifacts: art, Queues: q})...)
	// Placeholders: perf's -t/-p 0 stands for the target's thread ids.
	for i, l := range out {
		out[i] = strings.ReplaceAll(l, " -t 0 ", " -t TIDS ")
		out[i] = strings.ReplaceAll(out[i], " -p 0 ", " -p QEMU_PID ")
	}
	return out
}
