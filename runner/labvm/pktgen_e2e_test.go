package labvm

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

// e2eScenario is the built-in lab-pktgen scenario in miniature, run on
// the same kernels (the same specs: the built-in's cache keys, so a CI
// run's builds serve README's lab command and the reverse): Debian's
// linux-source-6.1 stock and with the shipped series tun-backpressure
// (scenarios/series/tun-backpressure: a full tx ring stops the queue
// instead of dropping, and the reader, read() on the tun fd or
// vhost-net's recvmsg(), wakes it), by default as the built-in runs them:
// tun.ko rebuilt both ways for Debian's packaged 6.1 kernel, which the
// labs boot (%[1]s is the kernels' build: key). The thread's pinned
// tables: vhost-net worker on CPU 0, 1 and 4 pktgen threads on the
// single-queue tap (sample01 for 1 thread, sample02 for 4), TAP and
// TAP+vhost-net rows sharing one nested guest (a vhost=off and a vhost=on
// NIC), one repetition (a nested guest's boot is the dominant cost under
// TCG in TCG, hence the 9m boot deadline). %[2]s is the nested guest's
// kernel line: Debian's cloud kernel (the built-in's guest) for the
// module build, the stock build itself for the full build (its drivers
// built in, it is up in 50-70 s instead of Debian's 90-130 s under TCG
// in TCG). pktgen runs both native (the harness's /proc writes of the
// samples) and in script mode (the kernel's own
// pktgen_sample01_simple.sh and pktgen_sample02_multiqueue.sh from the
// same tree, %[3]q), with pktgen's default xmit mode, as the sample
// scripts do, so the two are the same experiment. Each cell is bounded by
// time (3 s), not by a count: under TCG in TCG the tap's reader takes ~1
// Kpps, so a 4-thread count of 5,000 took ~2 minutes a cell. An AF_XDP
// cell (the Go generator, zero-copy) rides along at no boot's cost: 6.1's
// tun refuses AF_XDP zero-copy, so it is n/a at once with the kernel's
// reason.
const e2eScenario = `name: lab-pktgen-e2e
description: "lab-pktgen from source, one repetition: pktgen 1 and 4 threads TAP vs TAP+vhost-net, vhost on CPU 0, linux-source-6.1 stock vs patched (tun backpressure), native and the kernel's sample scripts"
kernels:
  - {label: stock, source: "debian:6.1", build: %[1]s}
  - {label: patched, source: "debian:6.1", patches: ["series:tun-backpressure"], build: %[1]s}
backend: [tap, tap+vhost]
qdisc: fq_codel
pin: {vhost: 0}
guest: {vcpus: 1, memory: 512MiB, sink: stack%[2]s}
generator:
  pktgen: {mode: [auto, script], script_dir: %[3]q, threads: [1, 4], count: 0, duration: 3s, pkt_size: 60, burst: 0, xmit_mode: start_xmit}
  afxdp: {mode: zerocopy, pkt_size: 64, duration: 1s}
perf:
  stat: {targets: [kpktgend, vhost], events: [task-clock, context-switches, cpu-migrations, page-faults]}
repetitions: 1
timeouts: {boot: 9m, traffic: 5m}
`

// TestLabPktgenE2E is the acceptance test of issues 7, 13, 17 and 36 in
// one lab run: `vnetbench run` rebuilds tun.ko from linux-source-6.1
// stock and patched for Debian's 6.1 kernel of the same version (or takes
// them from the harness's cache: runner/kbuild's
// TestModuleBuildLinuxSource makes the same builds), boots that kernel as
// a lab VM with each tun.ko loaded in place of Debian's (checked
// running), a nested guest inside, and prints, for each pktgen mode and
// thread count, one thread-style table with TAP and TAP+vhost-net rows and
// stock and patched columns, in which the patched kernel's Lost is far
// below stock's: the thread's result, end to end from source. Run alone
// with
//
//	make e2e RUN=TestLabPktgenE2E PKG=./runner/labvm
//
// The run waits up to 60m (--lock-wait) for other vnetbench runs on this
// host. TestLabPktgenFullBuildE2E (opt-in) runs the same with both
// kernels built whole.
func TestLabPktgenE2E(t *testing.T) {
	labPktgenE2E(t, scenarios.BuildModules)
}

// TestLabPktgenFullBuildE2E is TestLabPktgenE2E with both kernels built
// whole from linux-source-6.1 with the harness's config (build: full), the
// stock one also the nested guest's kernel: the full-build path end to
// end. Cold, the stock build dominates (16m48s on the 2-core CI machine,
// 663 CPU-seconds; the patched one 14 s after it); opt-in:
//
//	VNETBENCH_E2E_FULLBUILD=1 make e2e RUN=TestLabPktgenFullBuildE2E PKG=./runner/labvm
func TestLabPktgenFullBuildE2E(t *testing.T) {
	testenv.OptIn(t, "VNETBENCH_E2E_FULLBUILD", "both kernels built whole from linux-source-6.1, about 17 min cold on 2 cores plus the labs: VNETBENCH_E2E_FULLBUILD=1 make e2e RUN=TestLabPktgenFullBuildE2E PKG=./runner/labvm")
	labPktgenE2E(t, scenarios.BuildFull)
}

func labPktgenE2E(t *testing.T, build string) {
	needLabBuilds(t)
	bin := vnetbenchBinary(t)
	// The tree the run fetches (source: debian:6.1): its samples/pktgen
	// scripts, and the nested guest's kernel built from it.
	src := debianSource61(t)
	tmp := t.TempDir()
	// The scripts' tree goes under /tmp, which the lab's host root share
	// hides (tmpfs): the run must share it into the lab (lab.Config.Shares).
	scripts := filepath.Join(tmp, "linux")
	copyDir(t, filepath.Join(src, "samples", "pktgen"), filepath.Join(scripts, "samples", "pktgen"))
	dir := filepath.Join(tmp, "run")
	if keep := os.Getenv("VNETBENCH_E2E_KEEP"); keep != "" {
		// The whole run directory, passed or failed: a real run's
		// results for report fixtures, or what went wrong.
		t.Cleanup(func() {
			if out, err := exec.Command("cp", "-a", dir, keep).CombinedOutput(); err != nil {
				t.Logf("keep the run directory: %v: %s", err, out)
			}
		})
	}
	guestLine := ""
	if build == scenarios.BuildFull {
		guest := guestKernel(t, src)
		guestLine = fmt.Sprintf(", kernel: {image: %q, modules: %q}", guest.Image, guest.Modules)
	}
	scen := filepath.Join(tmp, "lab-pktgen-e2e.yaml")
	if err := os.WriteFile(scen, []byte(fmt.Sprintf(e2eScenario, build, guestLine, scripts)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runVnetbench(t, "run lab-pktgen-e2e", 60, bin, "run", scen, "-o", dir, "--lock-wait", "60m")
	if err != nil {
		for _, l := range []string{"stock", "patched"} {
			if b, rerr := os.ReadFile(filepath.Join(dir, "lab", l, "console.log")); rerr == nil {
				t.Logf("lab %s console tail:\n%s", l, tail(string(b), 30))
			}
		}
		t.Fatalf("run: %v", err)
	}
	rep, err := exec.CommandContext(t.Context(), bin, "report", dir).CombinedOutput()
	t.Logf("report:\n%s", rep)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	r := string(rep)
	for _, want := range []string{"Transmitted", "Lost", "stock", "patched", "tap+vhost", "tap"} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The run's own table names both kernels and the patch.
	for _, want := range []string{"vnetbench report: stock vs patched", "stock: 6.1.", "patched: 6.1.",
		"+ 1 patch (tun: stop the tx queue on a full ring instead of dropping)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the run's table lacks %q", want)
		}
	}
	if os.Getenv("VNETBENCH_E2E_KEEP") != "" {
		os.WriteFile(filepath.Join(dir, "report.txt"), rep, 0o644)
	}
	checkPktgenTables(t, r)
	res, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := sortSamples(res)
	if err != nil {
		t.Fatal(err)
	}
	checkLost(t, ps.lostPPS)
	stalled, problems := checkStalled(ps.samples)
	for _, l := range slices.Sorted(maps.Keys(stalled)) {
		t.Logf("kernel %s: a stalled receiver in %d cells: %s", l, len(stalled[l]), strings.Join(stalled[l], ", "))
	}
	for _, p := range problems {
		t.Error(p)
	}
	checkBuildIdentities(t, dir, src, build)
	checkCells(t, ps.have, ps.lines)
	checkScriptRun(t, dir, r)
}

// checkLost checks the thread's result in each cell's lost_pps by kernel
// (cell -> kernel -> lost_pps).
func checkLost(t *testing.T, lostPPS map[string]map[string]float64) {
	t.Helper()
	// The thread's result: the stock tap drops on its full ring (the
	// nested guest reads ~1 Kpps under TCG in TCG while pktgen offers ~100 Kpps),
	// the patched one stops the queue instead, and pktgen waits. For every
	// cell, as the patch wakes the queue from both readers.
	for _, cell := range slices.Sorted(maps.Keys(lostPPS)) {
		st, pa := lostPPS[cell]["stock"], lostPPS[cell]["patched"]
		t.Logf("%s: Lost stock %.0f pps, patched %.0f pps", cell, st, pa)
		if st < 1000 {
			t.Errorf("%s: stock Lost %.0f pps: the stock tap should drop on its full ring (thousands of pps)", cell, st)
		}
		if pa > st/50 {
			t.Errorf("%s: patched Lost %.0f pps is not far below stock's %.0f pps: the patch's queue stop did not take", cell, pa, st)
		}
	}
}

// checkCells: every kernel, backend and pktgen cell has a result, and the
// AF_XDP zero-copy cell is n/a (sortSamples's have and lines).
func checkCells(t *testing.T, have map[string]bool, lines map[string][]string) {
	t.Helper()
	for _, l := range []string{"stock", "patched"} {
		for _, b := range []string{"tap", "tap+vhost"} {
			// mode auto: sample01 (simple) for 1 thread, sample02
			// (multiqueue) for 4; script: the same two scripts.
			for _, m := range []string{"simple 1", "multiqueue 4", "script 1", "script 4"} {
				if !have[l+" "+b+" "+m] {
					t.Errorf("no sample of kernel %s, backend %s, mode and threads %s with lost_pps, tx_run_s and tx_pps > 0 (or 0 with the reason %q); its samples:\n%s",
						l, b, m, stalledReceiver, strings.Join(lines[l+" "+b+" "+m], "\n"))
				}
			}
			if !have[l+" "+b+" afxdp n/a"] {
				t.Errorf("kernel %s, backend %s: the AF_XDP zero-copy cell is not n/a with %q", l, b, zcRefused)
			}
		}
	}
}

// checkScriptRun: the report's AF_XDP n/a footnote, and script mode ran
// the kernel's own script, whose output is kept.
func checkScriptRun(t *testing.T, dir, r string) {
	t.Helper()
	if !strings.Contains(strings.Join(strings.Fields(r), " "), "n/a: "+zcRefused) { // footnotes wrap
		t.Errorf("report lacks the AF_XDP table's n/a footnote")
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "lab", "*", "run", "artifacts", "*", "*", "*", "pktgen-script.log"))
	if len(logs) == 0 {
		logs, _ = filepath.Glob(filepath.Join(dir, "artifacts", "*", "*", "*", "pktgen-script.log"))
	}
	if len(logs) == 0 {
		t.Errorf("no pktgen-script.log in the run's artifacts")
	} else if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), "Result") {
		t.Errorf("%s has no pktgen Result:\n%s", logs[0], b)
	}
}

// checkBuildIdentities: env.json records each built kernel's identity
// (release, /proc/version, config hash, tree, patches), the same config for
// both, and the lab ran the kernel the build made. A module build also
// records Debian's packages and each rebuilt module, checked running by
// the lab (its srcversion and build ID are what the run inside saw in
// /sys/module/tun).
func checkBuildIdentities(t *testing.T, dir, tree, build string) {
	t.Helper()
	env, err := results.ReadEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, pa := env.Kernels["stock"].Build, env.Kernels["patched"].Build
	if st == nil || pa == nil {
		t.Fatalf("env.json has no build identity for both kernels: %+v", env.Kernels)
	}
	if st.Tree != tree || st.ConfigSHA256 == "" || st.ConfigSHA256 != pa.ConfigSHA256 || len(st.Patches) != 0 || len(pa.Patches) != 1 {
		t.Errorf("identities: stock %+v, patched %+v", st, pa)
	}
	for l, k := range env.Kernels {
		if k.Build != nil && (k.KernelRelease != k.Build.Release || !strings.Contains(k.Build.ProcVersion, k.Build.Release)) {
			t.Errorf("kernel %s: the lab ran %q, the build made %q (%s)", l, k.KernelRelease, k.Build.Release, k.Build.ProcVersion)
		}
	}
	t.Logf("builds: stock %.0fs, patched %.0fs (the builds' own times, also when the run took them from the cache)", st.Seconds, pa.Seconds)
	if build != scenarios.BuildModules {
		if st.Mode != "" || pa.Mode != "" {
			t.Errorf("build: full made module builds: %q, %q", st.Mode, pa.Mode)
		}
		return
	}
	for _, l := range []string{"stock", "patched"} {
		k := env.Kernels[l]
		b := k.Build
		if b.Mode != results.ModeModules || !strings.HasPrefix(b.Debian, "linux-image-"+b.Release+"-unsigned ") || len(b.Modules) != 1 {
			t.Errorf("kernel %s: mode %q, debian %q, modules %+v; want tun rebuilt for Debian's kernel", l, b.Mode, b.Debian, b.Modules)
			continue
		}
		m, run := b.Modules[0], k.Modules["tun"]
		if m.Name != "tun" || !m.Checked || m.SrcVersion == "" || run.SrcVersion != m.SrcVersion || run.BuildID != m.BuildID {
			t.Errorf("kernel %s: rebuilt %+v, running %+v; want the rebuilt tun checked running", l, m, run)
		}
	}
	if st.Modules[0].SrcVersion == pa.Modules[0].SrcVersion {
		t.Errorf("stock and patched tun have one srcversion %s", st.Modules[0].SrcVersion)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "reproduce.sh")); err != nil || !strings.Contains(string(b), pa.Modules[0].SHA256+"  drivers/net/tun.stripped.ko") {
		t.Errorf("reproduce.sh does not rebuild the patched tun.ko (%v):\n%s", err, b)
	}
}

// stalledReceiver starts the warning of a sample whose pktgen sent
// nothing because the guest did not drain the tap (runner.StalledReceiver).
const stalledReceiver = "stalled receiver: "

// maxStalled is how many of a kernel's eight pktgen cells may send
// nothing to a stalled receiver.
const maxStalled = 2

// zcRefused is the n/a reason of the AF_XDP zero-copy cell on 6.1's tun.
const zcRefused = "unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)"

// e2eSample is the part of a results.jsonl sample the e2e tests read.
type e2eSample struct {
	Kernel      string             `json:"kernel"`
	Axes        map[string]string  `json:"axes"`
	Metrics     map[string]float64 `json:"metrics"`
	Unsupported string             `json:"unsupported"`
	Warnings    []string           `json:"warnings"`
}

// cell is a pktgen sample's cell: backend, mode and threads (one cell
// has a sample per repetition).
func (s e2eSample) cell() string {
	return s.Axes["backend"] + " " + s.Axes["generator.pktgen.mode"] + " " + s.Axes["generator.pktgen.threads"]
}

// measured reports whether a pktgen sample has the metrics of a run:
// lost_pps and tx_run_s.
func (s e2eSample) measured() bool {
	_, lost := s.Metrics["lost_pps"]
	_, run := s.Metrics["tx_run_s"]
	return lost && run
}

// stalledWarning reports whether the sample carries the stalled-receiver
// reason.
func (s e2eSample) stalledWarning() bool {
	return slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, stalledReceiver) })
}

// pktgenSamples is a run's results.jsonl sorted for the checks.
type pktgenSamples struct {
	samples []e2eSample                   // the pktgen samples
	have    map[string]bool               // "kernel cell" (or "kernel backend afxdp n/a") with a result
	lines   map[string][]string           // "kernel cell" -> its lines, for a miss
	lostPPS map[string]map[string]float64 // cell -> kernel -> lost_pps
}

// sortSamples sorts results.jsonl: a pktgen cell has a result when a
// sample measured it and sent (tx_pps > 0) or said the receiver stalled
// (checkStalled bounds those); the AF_XDP zero-copy cell when it is n/a
// with zcRefused (Debian's stock tun: zero-copy is a result, n/a).
func sortSamples(res []byte) (pktgenSamples, error) {
	ps := pktgenSamples{have: map[string]bool{}, lines: map[string][]string{}, lostPPS: map[string]map[string]float64{}}
	for _, line := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		var s e2eSample
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			return ps, fmt.Errorf("results.jsonl: %v: %s", err, line)
		}
		if s.Axes["generator"] == "afxdp" {
			if s.Unsupported == zcRefused {
				ps.have[s.Kernel+" "+s.Axes["backend"]+" afxdp n/a"] = true
			}
			continue
		}
		ps.samples = append(ps.samples, s)
		key := s.Kernel + " " + s.cell()
		ps.lines[key] = append(ps.lines[key], line)
		if s.measured() && (s.Metrics["tx_pps"] > 0 || s.stalledWarning()) {
			ps.have[key] = true
		}
		if ps.lostPPS[s.cell()] == nil {
			ps.lostPPS[s.cell()] = map[string]float64{}
		}
		ps.lostPPS[s.cell()][s.Kernel] = s.Metrics["lost_pps"]
	}
	return ps, nil
}

// checkStalled is the stalled-receiver acceptance of the pktgen samples:
// a measured sample that sent nothing (tx_pps 0) must say the receiver
// stalled (the nested guest did not drain the tap in the window: a loaded
// host starves TCG in TCG for seconds; the guest's doing, not the
// harness's), and at most maxStalled of a kernel's eight cells may have
// such samples (CI under load saw one of eight stall). A cell counts once,
// however many of its repetitions stalled. It returns each kernel's
// stalled cells (sorted) and the problems found.
func checkStalled(samples []e2eSample) (stalled map[string][]string, problems []string) {
	set := map[string]map[string]bool{} // kernel -> its stalled cells
	for _, s := range samples {
		if !s.measured() || s.Metrics["tx_pps"] > 0 {
			continue
		}
		if !s.stalledWarning() {
			problems = append(problems, fmt.Sprintf("kernel %s, cell %s: tx_pps 0 without the reason %q (warnings %q)", s.Kernel, s.cell(), stalledReceiver, s.Warnings))
			continue
		}
		if set[s.Kernel] == nil {
			set[s.Kernel] = map[string]bool{}
		}
		set[s.Kernel][s.cell()] = true
	}
	stalled = map[string][]string{}
	for _, l := range slices.Sorted(maps.Keys(set)) {
		cells := slices.Sorted(maps.Keys(set[l]))
		stalled[l] = cells
		if len(cells) > maxStalled {
			problems = append(problems, fmt.Sprintf("kernel %s: %d of 8 pktgen cells sent nothing to a stalled receiver (%s), want at most %d", l, len(cells), strings.Join(cells, ", "), maxStalled))
		}
	}
	return stalled, problems
}

// checkPktgenTables: one thread-style table per mode and thread count,
// each with TAP and TAP+vhost-net rows and stock and patched columns (the
// thread's).
func checkPktgenTables(t *testing.T, report string) {
	t.Helper()
	tables := pktgenTables(report)
	for _, m := range []string{"native", "script"} {
		for _, th := range []string{"1 thread,", "4 threads,"} {
			n := 0
			for _, tb := range tables {
				if strings.Contains(tb, th) && strings.Contains(tb, "mode script") == (m == "script") {
					n++
					for _, want := range []string{"stock", "patched", "| TAP ", "| TAP +", "vhost-net", "Lost", "vhost pinned to CPU 0"} {
						if !strings.Contains(tb, want) {
							t.Errorf("%s table for %s lacks %q:\n%s", m, th, want, tb)
						}
					}
				}
			}
			if n != 1 {
				t.Errorf("%d %s pktgen tables for %s, want one", n, m, strings.TrimSuffix(th, ","))
			}
		}
	}
}

// pktgenTables returns the pktgen thread-style tables of a text report,
// each as its header cell's context (unwrapped) and then its lines.
func pktgenTables(report string) []string {
	var out []string
	for _, block := range strings.Split(report, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "+") || !strings.HasPrefix(lines[1], "| pktgen") {
			continue
		}
		var ctx []string
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "+") {
				break
			}
			if cells := strings.Split(l, "|"); len(cells) > 2 {
				ctx = append(ctx, strings.TrimSpace(cells[1]))
			}
		}
		out = append(out, strings.Join(ctx, " ")+"\n"+strings.Join(strings.Fields(block), " "))
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// copyDir copies the regular files of src into dst (created).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// guestKernel is the nested guest's kernel: the stock build of the lab's
// own source and config (the same cache key), from the build cache (or
// built here, as the run would build it first). It has the guest's drivers built in (virtio-net,
// the serial console: runner/kbuild's base config), so it boots without
// loading modules and with a fraction of Debian's initcalls.
func guestKernel(t *testing.T, src string) *kbuild.Kernel {
	t.Helper()
	b := &kbuild.Builder{Dir: filepath.Join(vmimages.CacheDir(), "kbuild"), Log: testLog{t}, Every: time.Minute}
	ks, err := b.BuildAll(t.Context(), []kbuild.Spec{{Label: "guest", Tree: src}})
	if err != nil {
		t.Fatalf("the nested guest's kernel (the stock build): %v", err)
	}
	return ks[0]
}
