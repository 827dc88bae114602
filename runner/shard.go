package runner

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
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

// Shard sources: the environment variables --shard auto reads.
const (
	// ShardIndexEnv and ShardTotalEnv are vnetbench's own convention
	// (1-based), for GitHub Actions matrix jobs and anything else that can
	// set variables: VNETBENCH_SHARD_INDEX: ${{ matrix.shard }}. A
	// Kubernetes Indexed Job gives the index only: ShardTotalEnv (or
	// --shard auto/N) carries its count there.
	ShardIndexEnv = "VNETBENCH_SHARD_INDEX"
	ShardTotalEnv = "VNETBENCH_SHARD_TOTAL"
)

// ShardFromEnv resolves --shard auto (total 0) or auto/N (total N): the
// shard (1-based i of n) from the first of these that is set, and a
// sentence saying which it used:
//   - VNETBENCH_SHARD_INDEX (1-based) with VNETBENCH_SHARD_TOTAL or N;
//   - JOB_COMPLETION_INDEX (Kubernetes Indexed Job, 0-based) with N or
//     VNETBENCH_SHARD_TOTAL (the Job's completions: Kubernetes does not
//     export it);
//   - CI_NODE_INDEX (GitLab parallel, 1-based) with CI_NODE_TOTAL; a
//     GitLab job without parallel (CI_NODE_TOTAL=1, no index) is 1/1.
//
// None set, or inconsistent values, is bad input (fault.ErrInput).
func ShardFromEnv(getenv func(string) string, total int) (i, n int, source string, err error) {
	num := func(name string) (int, bool, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false, nil
		}
		x, err := strconv.Atoi(v)
		if err != nil {
			return 0, true, fault.Input("--shard auto: %s=%q is not a number", name, v)
		}
		return x, true, nil
	}
	countFrom := func(name string) (int, string, error) {
		if total > 0 {
			return total, "--shard auto/" + strconv.Itoa(total), nil
		}
		c, ok, err := num(name)
		if err != nil || !ok {
			return 0, "", err
		}
		return c, name + "=" + strconv.Itoa(c), nil
	}
	check := func(i, n int, source string) (int, int, string, error) {
		if n < 1 || i < 1 || i > n {
			return 0, 0, "", fault.Input("--shard auto: %s gives shard %d of %d; want 1 <= shard <= count", source, i, n)
		}
		return i, n, source, nil
	}
	if idx, ok, err := num(ShardIndexEnv); err != nil || ok {
		if err != nil {
			return 0, 0, "", err
		}
		c, from, err := countFrom(ShardTotalEnv)
		if err != nil || c == 0 {
			return 0, 0, "", errors.Join(err, fault.Input("--shard auto: %s=%d is set but not %s: set both (or use --shard auto/N)", ShardIndexEnv, idx, ShardTotalEnv))
		}
		return check(idx, c, fmt.Sprintf("%s=%d, %s (vnetbench's convention, 1-based)", ShardIndexEnv, idx, from))
	}
	if idx, ok, err := num("JOB_COMPLETION_INDEX"); err != nil || ok {
		if err != nil {
			return 0, 0, "", err
		}
		c, from, err := countFrom(ShardTotalEnv)
		if err != nil || c == 0 {
			return 0, 0, "", errors.Join(err, fault.Input("--shard auto: JOB_COMPLETION_INDEX=%d (a Kubernetes Indexed Job) gives no shard count: set %s to the Job's completions, or use --shard auto/N", idx, ShardTotalEnv))
		}
		return check(idx+1, c, fmt.Sprintf("JOB_COMPLETION_INDEX=%d (Kubernetes Indexed Job, 0-based), %s", idx, from))
	}
	gTotal, gHas, err := num("CI_NODE_TOTAL")
	if err != nil {
		return 0, 0, "", err
	}
	if idx, ok, err := num("CI_NODE_INDEX"); err != nil || ok {
		if err != nil {
			return 0, 0, "", err
		}
		if !gHas {
			return 0, 0, "", fault.Input("--shard auto: CI_NODE_INDEX=%d without CI_NODE_TOTAL", idx)
		}
		return check(idx, gTotal, fmt.Sprintf("CI_NODE_INDEX=%d, CI_NODE_TOTAL=%d (GitLab parallel, 1-based)", idx, gTotal))
	}
	if gHas && gTotal == 1 {
		return 1, 1, "CI_NODE_TOTAL=1 (a GitLab job without parallel: the whole run)", nil
	}
	return 0, 0, "", fault.Input("--shard auto: no shard in the environment; set %s and %s (e.g. from a GitHub Actions matrix), or run in a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with %s) or a GitLab job with parallel: N (CI_NODE_INDEX, CI_NODE_TOTAL)", ShardIndexEnv, ShardTotalEnv, ShardTotalEnv)
}

// ParseShardFlag parses --shard: "I/N", or "auto" and "auto/N", which
// ShardFromEnv resolves with getenv. source is "" for I/N.
func ParseShardFlag(s string, getenv func(string) string) (i, n int, source string, err error) {
	if s == "auto" {
		return ShardFromEnv(getenv, 0)
	}
	if rest, ok := strings.CutPrefix(s, "auto/"); ok {
		total, err := strconv.Atoi(rest)
		if err != nil || total < 1 {
			return 0, 0, "", fault.Input("--shard %q: want auto/N with N >= 1, e.g. --shard auto/4", s)
		}
		return ShardFromEnv(getenv, total)
	}
	i, n, err = ParseShard(s)
	return i, n, "", err
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
// --dry-run` and `plan`. run is the run's cells: when its tap and
// tap+vhost cells share a two-NIC guest (see pairedGuests), the guest and
// the addresses are that guest's.
func Commands(c *scenarios.Cell, accel qemu.Accel, run ...scenarios.Cell) []string {
	ns := "vnb-RUNID"
	nics := []*guestNIC{{backend: c.Backend, tap: tapName(c), hostIP: HostIP, guestIP: GuestIP, mac: GuestMAC}}
	if pairedGuests(run)[pairedKey(c)] {
		nics = pairNICs()
	}
	nic := nics[0]
	for _, n := range nics {
		if n.backend == c.Backend {
			nic = n
		}
	}
	tap := nic.tap
	q := c.TapQueues()
	var out []string
	add := func(netns string, argv ...string) {
		out = append(out, proc.Cmd{Argv: argv, Netns: netns}.String())
	}
	add("", "ip", "netns", "add", ns)
	var qnics []qemu.NIC
	for i, n := range nics {
		tapCmd := []string{"ip", "tuntap", "add", "dev", n.tap, "mode", "tap", "vnet_hdr"}
		if q > 1 {
			tapCmd = append(tapCmd, "multi_queue")
		}
		add(ns, tapCmd...)
		add(ns, "ip", "addr", "add", n.hostIP+"/"+strconv.Itoa(PrefixLen), "dev", n.tap)
		add(ns, "ip", "link", "set", n.tap, "up")
		qnics = append(qnics, n.device(i == 0, q))
	}
	if c.TxQueueLen > 0 {
		add(ns, "ip", "link", "set", "dev", tap, "txqueuelen", strconv.Itoa(c.TxQueueLen))
	}
	if c.Qdisc != "" {
		add(ns, "tc", "qdisc", "replace", "dev", tap, "root", c.Qdisc)
	}
	cfg := qemu.Config{Name: "vnb-RUNID", Accel: accel, CPUs: c.Guest.VCPUs, MemoryMiB: c.Guest.MemoryMiB,
		Firmware: GuestFirmware(accel), Kernel: "GUEST_KERNEL", Initrd: "GUEST_INITRAMFS", Append: GuestCmdline(c, accel, ""),
		QMPSocket: "SOCKDIR/qmp.sock", AgentSocket: "SOCKDIR/agent.sock", ConsoleLog: filepath.Join("RUN_DIR", results.ConsoleLog(0)),
		NICs: qnics}
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
		Src: nic.hostIP, Dst: nic.guestIP, DstMAC: nic.mac, Artifacts: art, Queues: q})...)
	// Placeholders: perf's -t/-p 0 stands for the target's thread ids.
	for i, l := range out {
		l = safeComment(l)
		out[i] = strings.ReplaceAll(l, " -t 0 ", " -t TIDS ")
		out[i] = strings.ReplaceAll(out[i], " -p 0 ", " -p QEMU_PID ")
	}
	return out
}
