package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Hosts for plan's accelerator: a TCG-only host (KVM-PVM's /dev/kvm runs
// no standard guest) and KVM hosts on Intel and AMD with nested KVM.
var (
	tcgHost     = qemu.KVMStatus{Why: "a test vCPU did not run on /dev/kvm: KVM_RUN: internal error (KVM_EXIT_INTERNAL_ERROR)"}
	intelNested = qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: qemu.ModuleKVMIntel, Nested: "Y"}
	amdNested   = qemu.KVMStatus{Usable: true, Flag: "svm", Vendor: qemu.ModuleKVMAMD, Nested: "1"}
)

// testHost is an 8-CPU, 32 GiB host with KVM st.
func testHost(st qemu.KVMStatus) lab.Host {
	return lab.Host{KVM: st, CPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, MemMiB: 32 << 10}
}

// scenarioGolden compares got with the golden file at path (-update
// rewrites it).
func scenarioGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.File(t, path, []byte(got))
}

// runCLI runs the CLI in-process and renders what a user sees: the
// command, the exit code, stdout, stderr and the error line main prints.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runCLIWith(t, testCLI(), args...)
}

// runCLIWith is runCLI with cl.
func runCLIWith(t *testing.T, cl *cli, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := cl.run(t.Context(), args, &out, &errb)
	code := exitCode(err)
	var b strings.Builder
	fmt.Fprintf(&b, "$ vnetbench %s\nexit %d\n", strings.Join(args, " "), code)
	if out.Len() > 0 {
		fmt.Fprintf(&b, "--- stdout\n%s", out.String())
	}
	if errb.Len() > 0 {
		fmt.Fprintf(&b, "--- stderr\n%s", errb.String())
	}
	if err != nil {
		fmt.Fprintf(&b, "--- error\nvnetbench: %v\n", err)
	}
	return b.String(), code
}

func TestList(t *testing.T) {
	got, code := runCLI(t, "list")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	for _, b := range scenarios.Builtins() {
		if !strings.Contains(got, b.Name+" ") {
			t.Errorf("list lacks %s", b.Name)
		}
	}
	scenarioGolden(t, filepath.Join("testdata", "list", "list.golden"), got)
	if _, code := runCLI(t, "list", "extra"); code != exitBadInput {
		t.Errorf("list extra: exit %d, want 2", code)
	}
}

// TestValidate covers every class of bad input through the CLI: one
// error line naming file:line:col and the fix, exit 2.
func TestValidate(t *testing.T) {
	const dir = "testdata/validate"
	cases := []struct {
		name string
		args []string
		exit int
	}{
		{"good", []string{dir + "/good.yaml"}, 0},
		{"warning", []string{dir + "/warn.yaml"}, 0},
		{"builtins-fit-2-cpus", []string{"quickstart", "thread-pktgen", "thread-iperf3", "lab-pktgen", "--cpus", "2"}, 0},
		{"all-builtins-16-cpus", []string{"--cpus", "16", "quickstart", "thread-pktgen", "thread-pktgen-mq", "thread-pktgen-vhost-pin0", "thread-iperf3", "thread-sweep", "lab-pktgen"}, 0},
		{"syntax", []string{dir + "/syntax.yaml"}, 2},
		{"unknown-key", []string{dir + "/unknown-key.yaml"}, 2},
		{"wrong-type", []string{dir + "/wrong-type.yaml"}, 2},
		{"bad-enum", []string{dir + "/bad-enum.yaml"}, 2},
		{"ifname-long", []string{dir + "/ifname-long.yaml"}, 2},
		{"ifname-chars", []string{dir + "/ifname-chars.yaml"}, 2},
		{"unknown-qdisc", []string{dir + "/quick.yaml"}, 2},
		{"negative-count", []string{dir + "/negative-count.yaml"}, 2},
		{"burst-tap", []string{dir + "/burst-tap.yaml"}, 2},
		{"clone-skb-tap", []string{dir + "/clone-skb-tap.yaml"}, 2},
		{"cpu-beyond", []string{dir + "/cpu-beyond.yaml", "--cpus", "2"}, 2},
		{"threads-beyond", []string{"--cpus", "2", dir + "/threads-beyond.yaml"}, 2},
		{"cpu-check-skipped", []string{"--cpus", "0", dir + "/cpu-beyond.yaml"}, 0},
		{"missing-file", []string{dir + "/no-such-file.yaml"}, 2},
		{"unknown-name", []string{"thread-pktgn"}, 2},
		{"bad-duration", []string{dir + "/bad-duration.yaml"}, 2},
		{"duration-no-unit", []string{dir + "/duration-no-unit.yaml"}, 2},
		{"bad-memory", []string{dir + "/bad-memory.yaml"}, 2},
		{"script-no-dir", []string{dir + "/script-no-dir.yaml"}, 2},
		{"first-error-stops", []string{dir + "/good.yaml", dir + "/bad-enum.yaml", dir + "/syntax.yaml"}, 2},
		{"no-args", nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, code := runCLI(t, append([]string{"validate"}, tc.args...)...)
			if code != tc.exit {
				t.Errorf("exit %d, want %d:\n%s", code, tc.exit, got)
			}
			if code == exitBadInput && strings.Count(strings.SplitN(got, "--- error\n", 2)[len(strings.SplitN(got, "--- error\n", 2))-1], "\n") != 1 {
				t.Errorf("want exactly one error line:\n%s", got)
			}
			scenarioGolden(t, filepath.Join("testdata", "validate", tc.name+".golden"), got)
		})
	}
}

// TestPlanBuiltins golden-tests `plan` of every built-in (text), plus the
// JSON form of two.
func TestPlanBuiltins(t *testing.T) {
	cachedLabKernels(t)
	for _, b := range scenarios.Builtins() {
		t.Run(b.Name, func(t *testing.T) {
			got, code := runCLI(t, "plan", b.Name, "--seed", "1", "--cpus", "64")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, got)
			}
			// Every cell of a built-in has a valid pktgen plan (a "#
			// pktgen: ..." line is a plan the runner would refuse).
			if i := strings.Index(got, "# pktgen: "); i >= 0 {
				t.Errorf("a cell's pktgen plan fails: %s", got[i:i+strings.IndexByte(got[i:], '\n')])
			}
			scenarioGolden(t, filepath.Join("testdata", "plan", b.Name+".golden"), got)
		})
	}
	for _, name := range []string{"quickstart", "lab-pktgen"} {
		var out, errb bytes.Buffer
		if err := run(t.Context(), []string{"plan", "--format", "json", "--seed", "1", name}, &out, &errb); err != nil {
			t.Fatal(err)
		}
		var p struct {
			Seed  int64
			Runs  []planRun
			Cells []planCell
		}
		if err := json.Unmarshal(out.Bytes(), &p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Seed != 1 || len(p.Runs) == 0 || len(p.Cells) == 0 || p.Cells[0].Params["backend"] == "" {
			t.Errorf("%s: json plan %+v", name, p)
		}
		scenarioGolden(t, filepath.Join("testdata", "plan", name+".json"), out.String())
	}
}

func TestPlanSeed(t *testing.T) {
	a, _ := runCLI(t, "plan", "thread-sweep", "--seed", "7", "--cpus", "64")
	b, _ := runCLI(t, "plan", "--seed=7", "--cpus=64", "thread-sweep")
	c, _ := runCLI(t, "plan", "thread-sweep", "--seed", "8", "--cpus", "64")
	a, b = a[strings.Index(a, "\nexit"):], b[strings.Index(b, "\nexit"):]
	c = c[strings.Index(c, "\nexit"):]
	if a != b {
		t.Error("same seed, different plan")
	}
	if a == c {
		t.Error("seeds 7 and 8 give the same plan")
	}
	// No --seed and no seed: in the file: a random seed, printed.
	got, code := runCLI(t, "plan", "quickstart")
	if code != 0 || !strings.Contains(got, "\nseed: ") || strings.Contains(got, "\nseed: 0\n") {
		t.Errorf("random seed not printed:\n%s", got)
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		exit int
	}{
		{"no-args", []string{"plan"}, 2},
		{"two-args", []string{"plan", "quickstart", "thread-pktgen"}, 2},
		{"bad-format", []string{"plan", "quickstart", "--format", "yaml"}, 2},
		{"bad-file", []string{"plan", "testdata/validate/quick.yaml"}, 2},
		// A CPU check failure is a warning in plan (exit 0) and names the fix.
		{"cpu-warning", []string{"plan", "testdata/validate/cpu-beyond.yaml", "--cpus", "2", "--seed", "3"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, code := runCLI(t, tc.args...)
			if code != tc.exit {
				t.Errorf("exit %d, want %d:\n%s", code, tc.exit, got)
			}
			scenarioGolden(t, filepath.Join("testdata", "plan", "error-"+tc.name+".golden"), got)
		})
	}
}

// plan and run --dry-run print the same commands (lab.PlanCommands) for
// the same scenario and seed: each cell's, at every one of its runs, and
// each lab VM's QEMU command line.
func TestPlanAndDryRunCommands(t *testing.T) {
	for _, name := range []string{"thread-iperf3", "lab-pktgen"} {
		t.Run(name, func(t *testing.T) {
			var pj, pe bytes.Buffer
			if err := testCLI().run(t.Context(), []string{"plan", name, "--seed", "7", "--format", "json"}, &pj, &pe); err != nil {
				t.Fatalf("plan: %v\n%s", err, pe.String())
			}
			var p plan
			if err := json.Unmarshal(pj.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			var dr, de bytes.Buffer
			if err := testCLI().run(t.Context(), []string{"run", name, "--dry-run", "--seed", "7", "-o", t.TempDir()}, &dr, &de); err != nil {
				t.Fatalf("run --dry-run: %v\n%s", err, de.String())
			}
			runs, vms := dryRunCommands(t, dr.String())
			if len(runs) != len(p.Runs) {
				t.Fatalf("dry run prints %d runs, plan %d:\n%s", len(runs), len(p.Runs), dr.String())
			}
			withCommands := 0
			for _, c := range p.Cells {
				if len(c.Commands) > 0 {
					withCommands++
				}
				for _, n := range c.Runs {
					if got := runs[n-1]; !slices.Equal(got, c.Commands) {
						t.Errorf("cell %s, run %d: dry run prints\n%s\nplan\n%s", c.Name, n, strings.Join(got, "\n"), strings.Join(c.Commands, "\n"))
					}
				}
			}
			if withCommands == 0 {
				t.Error("no cell has commands: the comparison compared nothing")
			}
			if len(vms) != len(p.LabVMs) {
				t.Errorf("dry run prints %d lab VMs, plan %d", len(vms), len(p.LabVMs))
			}
			for _, vm := range p.LabVMs {
				if got := vms[vm.Kernel]; got != proc.Quote(vm.Argv) {
					t.Errorf("lab VM %s: dry run\n%s\nplan\n%s", vm.Kernel, got, proc.Quote(vm.Argv))
				}
			}
			if name == "lab-pktgen" && len(vms) == 0 {
				t.Error("lab-pktgen: no lab VM printed")
			}
		})
	}
}

// dryRunCommands reads run --dry-run's output: each run's commands, in
// run order, and each lab VM's QEMU command line by kernel label.
func dryRunCommands(t *testing.T, out string) ([][]string, map[string]string) {
	t.Helper()
	var runs [][]string
	vms := map[string]string{}
	label := ""
	inRun := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case l == "":
			inRun = false
		case strings.HasPrefix(l, "     ") && inRun:
			runs[len(runs)-1] = append(runs[len(runs)-1], strings.TrimPrefix(l, "     "))
		case strings.HasPrefix(l, "    in ") && label != "":
			vms[label] = strings.TrimPrefix(l, "    in ")
		case strings.HasPrefix(l, "  ") && strings.Contains(l, ": vnetbench run "):
			label = strings.TrimSpace(l[:strings.Index(l, ":")])
		case len(l) > 4 && l[3] == '.' && strings.Contains(l, " rep "):
			runs = append(runs, []string{})
			inRun = true
		}
	}
	return runs, vms
}

// TestPlanOneQueue: 4 sample02 threads on a single-queue tap (the netdev
// thread's QEMU: no queues=) are a valid scenario, and plan shows one
// queue that every thread sends on; queues: auto gives one per thread.
func TestPlanOneQueue(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		queues string
		want   []string
		not    []string
	}{
		{"", // the default
			[]string{"queues: 1 ", " vnet_hdr\n", "# tap with 1 queue; QUEUE_MAP_CPU (queue = CPU % 1): kpktgend_0,kpktgend_1,kpktgend_2,kpktgend_3 -> queue 0\n"},
			[]string{"multi_queue", "queues=", "mq=on"}},
		{"queues: 1\n", []string{"queues: 1 ", "-> queue 0\n"}, []string{"multi_queue", "queues="}},
		{"queues: auto\n", []string{"queues: 4 ", "vnet_hdr multi_queue", ",queues=4", "kpktgend_3 -> queue 3"}, nil},
	} {
		f := filepath.Join(dir, "q.yaml")
		yaml := tc.queues + "backend: tap+vhost\nguest: {vcpus: 1, memory: 1GiB}\ngenerator: {pktgen: {mode: multiqueue, threads: 4, count: 1000, xmit_mode: start_xmit}}\n"
		if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		got, code := runCLI(t, "plan", f, "--seed", "1", "--cpus", "4")
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", tc.queues, code, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: plan lacks %q:\n%s", tc.queues, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%q: plan has %q:\n%s", tc.queues, n, got)
			}
		}
	}
}

// TestPlanKVM golden-tests plan on KVM hosts (Intel and AMD, nested KVM):
// cells on the running kernel get -accel kvm -cpu host and the KVM guest
// command line; lab VMs get -cpu host,+vmx or +svm, sized from the
// scenario. guest.accel: tcg stays TCG on a KVM host, and kvm on a TCG
// host is a warning that run refuses it.
func TestPlanKVM(t *testing.T) {
	for _, tc := range []struct {
		host qemu.KVMStatus
		name string
		args []string
	}{
		{intelNested, "kvm-intel-quickstart", []string{"plan", "quickstart", "--seed", "1"}},
		{intelNested, "kvm-intel-lab-pktgen", []string{"plan", "lab-pktgen", "--seed", "1"}},
		{amdNested, "kvm-amd-lab-pktgen", []string{"plan", "lab-pktgen", "--seed", "1"}},
		{intelNested, "kvm-intel-accel-tcg", []string{"plan", "testdata/plan/accel-tcg.yaml", "--seed", "1"}},
		{tcgHost, "tcg-accel-kvm", []string{"plan", "testdata/plan/accel-kvm.yaml", "--seed", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := testCLI()
			cl.host = func() lab.Host { return testHost(tc.host) }
			got, code := runCLIWith(t, cl, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, got)
			}
			scenarioGolden(t, filepath.Join("testdata", "plan", tc.name+".golden"), got)
		})
	}
}

// TestDryRunAccel: run --dry-run prints the accelerator each cell's guest
// gets on this host, the lab VMs' QEMU argv and the shared two-NIC guest,
// and refuses (exit 2, as run would) guest.accel: kvm where KVM does not
// work.
func TestDryRunAccel(t *testing.T) {
	cl := testCLI()
	cl.host = func() lab.Host { return testHost(amdNested) }
	got, code := runCLIWith(t, cl, "run", "lab-pktgen", "--dry-run", "--seed", "1", "-o", "/runs/x")
	for _, want := range []string{"accelerator: kvm (a test vCPU ran; kvm_amd, nested=1)", "(kernel stock, kvm)",
		"    in qemu-system-x86_64 -name vnb-lab-stock,debug-threads=on", "-accel kvm -cpu host,+svm -smp 5 -m 2048",
		// TAP and TAP+vhost-net cells share one guest: a vhost=on NIC on vnbt1.
		"vnb.nic=52:54:00:12:34:57,10.0.1.2/24", "ifname=vnbt1,script=no,downscript=no,vhost=on"} {
		if code != 0 || !strings.Contains(got, want) {
			t.Errorf("dry run on an AMD host lacks %q (exit %d):\n%s", want, code, got)
		}
	}
	got, code = runCLI(t, "run", "testdata/plan/accel-kvm.yaml", "--dry-run", "--seed", "1")
	if code != 2 || !strings.Contains(got, "guest.accel: kvm, but KVM is not usable here") {
		t.Errorf("dry run of accel: kvm on a TCG host: exit %d\n%s", code, got)
	}
}

// plan and run --dry-run say what run's preflight would refuse on this
// host, a line each with its fix: plan exits 0, the dry run 2 (as run),
// and a lab kernel's cells are not the host's to refuse but for the
// programs the lab VM takes from the host.
func TestPlanDryRunRefusals(t *testing.T) {
	cl := testCLI()
	cl.host = func() lab.Host {
		h := testHost(tcgHost)
		h.Look = func(n runner.Needs) runner.Facts { // a non-root host without vhost-net, perf or pktgen
			return runner.Facts{Tun: true, Missing: map[string]bool{"perf": true},
				Features: map[string]workload.Probe{"pktgen": {Why: "pktgen is not available in kernel X", Fix: "modprobe pktgen"}}}
		}
		return h
	}
	want := []string{
		"run would refuse: run needs root (network namespaces, tap devices, CPU affinity of other processes); fix: run it with sudo",
		"run would refuse: perf is not installed; fix: install the Debian package linux-perf (make deps)",
		"run would refuse: backend tap+vhost needs /dev/vhost-net",
		"run would refuse: pktgen is not available in kernel X; fix: modprobe pktgen, or lab mode",
	}
	got, code := runCLIWith(t, cl, "plan", "thread-pktgen", "--seed", "1")
	stdout := got[:strings.Index(got, "--- stderr")]
	if code != 0 || strings.Count(stdout, "run would refuse: ") != len(want) {
		t.Errorf("plan: exit %d, want 0 and %d refusals:\n%s", code, len(want), got)
	}
	for _, w := range want {
		if !strings.Contains(stdout, "\n"+w) {
			t.Errorf("plan: no line %q:\n%s", w, stdout)
		}
	}
	got, code = runCLIWith(t, cl, "run", "thread-pktgen", "--dry-run", "--seed", "1", "-o", t.TempDir())
	if code != 2 || strings.Count(got, "vnetbench: run would refuse: ") != len(want) {
		t.Errorf("run --dry-run: exit %d, want 2 and %d refusals:\n%s", code, len(want), got)
	}
	for _, w := range want {
		if !strings.Contains(got, "vnetbench: "+w) {
			t.Errorf("run --dry-run: no line %q:\n%s", w, got)
		}
	}
	// A lab kernel's root, vhost-net and pktgen are not the host's to
	// refuse; its perf is: the lab VM runs this host's.
	got, code = runCLIWith(t, cl, "run", "lab-pktgen", "--dry-run", "--seed", "1", "-o", t.TempDir())
	if code != 2 || strings.Count(got, "run would refuse") != 1 || !strings.Contains(got, "run would refuse: perf is not installed: lab VMs run this host's programs") {
		t.Errorf("run --dry-run lab-pktgen: exit %d, want 2 and only perf refused (its cells run in lab VMs):\n%s", code, got)
	}
}

// pathWithout is a PATH directory holding every program of this PATH
// but those named, as links: a host without them.
func pathWithout(t *testing.T, without ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if slices.Contains(without, e.Name()) {
				continue
			}
			// The first directory's program wins, as in a lookup.
			if err := os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name())); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// plan and run --dry-run look at what a lab run needs here: QEMU, the
// tools the lab VMs take from this host's root, and what fetching and
// building its kernels runs (lab-pktgen rebuilds tun.ko with Debian's
// gcc-12), each missing one a line with the Debian package to install.
func TestPlanDryRunLabRefusals(t *testing.T) {
	t.Setenv("PATH", pathWithout(t, qemu.DefaultBinary, "gcc-12"))
	cl := testCLI()
	cl.host = func() lab.Host {
		h := testHost(tcgHost)
		h.Look = runner.LookHost
		return h
	}
	want := []string{
		"run would refuse: qemu-system-x86_64 is not installed: lab VMs run this host's programs; fix: install the Debian package qemu-system-x86 (make deps)",
		"run would refuse: gcc-12 is not installed: rebuilding modules for Debian's kernel (kernels patched, stock) runs it; fix: install the Debian package gcc-12 (make deps)",
	}
	got, code := runCLIWith(t, cl, "plan", "lab-pktgen", "--seed", "1")
	for _, w := range want {
		if code != 0 || !strings.Contains(got, "\n"+w+"\n") {
			t.Errorf("plan: exit %d, want 0 and the line %q:\n%s", code, w, got)
		}
	}
	got, code = runCLIWith(t, cl, "run", "lab-pktgen", "--dry-run", "--seed", "1", "-o", t.TempDir())
	for _, w := range want {
		if code != 2 || !strings.Contains(got, "vnetbench: "+w) {
			t.Errorf("run --dry-run: exit %d, want 2 and the line %q:\n%s", code, w, got)
		}
	}
}
