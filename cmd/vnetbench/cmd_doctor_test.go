package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

func TestDoctorInProcess(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"doctor"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"kvm", "vhost-net", "pktgen", "tun", "qemu-system-x86_64", "iperf3", "trafgen", "perf",
		"cpus", "governor", "mitigations", "lab mode", "built-in scenarios:", "quickstart",
		"vhost-vsock", "vsock sockmap", "socat", "vsock-sockmap-loopback"} {
		if !strings.Contains(s, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, s)
		}
	}
	// On a host without pktgen, a pktgen scenario says what it needs.
	if _, err := os.Stat("/proc/net/pktgen"); err != nil && !strings.Contains(s, "\n                                   - pktgen is not available") {
		t.Errorf("no pktgen verdict:\n%s", s)
	}
	if exitCode(run(t.Context(), []string{"doctor", "extra"}, &out, &errb)) != exitBadInput {
		t.Error("doctor with an argument: want exit 2")
	}
}

// --clean and --leftovers together are refused in one line, exit 2,
// before anything is removed (in a ledger directory of the test's own,
// should the refusal break).
func TestDoctorCleanAndLeftoversRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledgers")
	t.Setenv(ledger.DirEnv, dir)
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"doctor", "--clean", "--leftovers"}, &out, &errb)
	if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), "give --clean or --leftovers, not both") || strings.Contains(fmt.Sprint(err), "\n") {
		t.Errorf("doctor --clean --leftovers: %v (exit %d), want one line saying to give one, exit 2", err, exitCode(err))
	}
	if out.Len() > 0 {
		t.Errorf("doctor --clean --leftovers wrote:\n%s", out.String())
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("doctor --clean --leftovers made %s", dir)
	}
}

// Capability errors exit 2 before anything is created.
func TestRunCapabilityErrorExit2(t *testing.T) {
	testenv.NeedRoot(t, "without it the error is 'needs root'")
	if _, err := os.Stat("/dev/vhost-net"); err == nil {
		testenv.NotApplicable(t, "this host has vhost-net (the test checks the error without it)")
	}
	dir := t.TempDir() + "/run"
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"run", "thread-pktgen", "-o", dir}, &out, &errb)
	// One line that says what is missing and how to do without it.
	if msg := fmt.Sprint(err); exitCode(err) != exitBadInput || !strings.Contains(msg, "/dev/vhost-net") || !strings.Contains(msg, "use backend: tap") || strings.Contains(msg, "\n") {
		t.Errorf("err = %v (exit %d)", err, exitCode(err))
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Errorf("run directory created despite the capability error")
	}
}

func TestRunDryRun(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"run", "quickstart", "--dry-run", "--seed", "5", "--shard", "1/2"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "seed 5 (shard 1/2)") || !strings.Contains(s, "qemu-system-x86_64") {
		t.Errorf("dry run output:\n%s", s)
	}
	for _, bad := range [][]string{{"run"}, {"run", "quickstart", "--shard", "3/2"}, {"run", "no-such-scenario"}, {"run", "quickstart", "--resume"}} {
		if got := exitCode(run(t.Context(), bad, &out, &errb)); got != exitBadInput {
			t.Errorf("%v: exit %d, want 2", bad, got)
		}
	}
}

// Lab-kernel scenarios are judged on lab mode, not on the host's pktgen,
// vhost-net or qdiscs (those are in the lab VM's Debian kernel).
func TestDoctorScenarioVerdict(t *testing.T) {
	d := &runner.Doctor{
		Root: true, Tun: true,
		Tools:    map[string]string{"qemu-system-x86_64": "7.2", "iperf3": "3.12", "trafgen": "0.6.8", "perf": "6.1", "ip": "6.1"},
		Qdiscs:   map[string]bool{"pfifo_fast": true, "noqueue": true, "fq_codel": false},
		Features: map[string]workload.Probe{"pktgen": {Why: "pktgen is not available in kernel X"}},
		Lab:      labvm.Capabilities{QEMU: true, Accel: qemu.TCG, APTGet: true},
		Look:     func(runner.Needs) runner.Facts { return runner.Facts{Missing: map[string]bool{}} },
	}
	cells := func(name string) []scenarios.Cell {
		s, err := scenarios.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		return s.Expand()
	}
	if got, want := scenarioVerdict(t.Context(), d, emptyTable(t), "lab-pktgen", cells("lab-pktgen")), "runs in lab mode (TCG: nested guest boots take minutes)"; got != want {
		t.Errorf("lab-pktgen: %q, want %q", got, want)
	}
	if got := scenarioVerdict(t.Context(), d, emptyTable(t), "quickstart", cells("quickstart")); got != "can run here" {
		t.Errorf("quickstart: %q", got)
	}
	// Without KVM the lab-mode command would take hundreds of hours
	// (100M packets x 10 under TCG in TCG): the shorter form follows,
	// then what run refuses here and the fix, a line each (plan's list,
	// with "lab mode" for the hint the first line spells out).
	got := scenarioVerdict(t.Context(), d, emptyTable(t), "thread-pktgen", cells("thread-pktgen"))
	first, rest, _ := strings.Cut(got, "\n")
	if !strings.HasPrefix(first, "cannot run here; in lab mode: vnetbench run thread-pktgen --kernel stock=debian:6.1 (about 278 h under TCG, which run refuses past --max-time 1 h; shorter, about ") ||
		!strings.HasSuffix(first, ": vnetbench run thread-pktgen --kernel stock=debian:6.1 --set generator.pktgen.duration=10s --set repetitions=3)") {
		t.Errorf("thread-pktgen: %q", got)
	}
	if want := `- backend tap+vhost needs /dev/vhost-net, which this kernel does not provide (QEMU would abort with an assertion); fix: load vhost_net (modprobe vhost_net), use backend: tap, or run the scenario in lab mode
- pktgen is not available in kernel X; fix: lab mode
- qdisc fq_codel is not available in this kernel; fix: use a qdisc it has (noqueue, pfifo_fast), or lab mode`; rest != want {
		t.Errorf("thread-pktgen's refusals:\n%s\nwant\n%s", rest, want)
	}
	// A scenario whose lab run fits the limit gets no shorter form.
	if got := scenarioVerdict(t.Context(), d, emptyTable(t), "vsock-sockmap", cells("vsock-sockmap")); strings.Contains(got, "shorter") {
		t.Errorf("vsock-sockmap: %q", got)
	}
	// The suggested command runs: the flag is accepted and makes every
	// cell a lab cell.
	var pout, perr bytes.Buffer
	if err := run(t.Context(), []string{"plan", "thread-pktgen", "--kernel", "stock=debian:6.1"}, &pout, &perr); err != nil {
		t.Fatalf("plan thread-pktgen %s: %v", labKernelFlag, err)
	}
	s, err := scenarios.Resolve("thread-pktgen")
	if err != nil {
		t.Fatal(err)
	}
	if labKernel.Spec() != labKernelSpec {
		t.Errorf("the lab kernel %q is not the suggested %q", labKernel.Spec(), labKernelSpec)
	}
	if err := s.SetKernels([]scenarios.Kernel{labKernel}); err != nil {
		t.Fatal(err)
	}
	if got := scenarioVerdict(t.Context(), d, emptyTable(t), "thread-pktgen", s.Expand()); !strings.HasPrefix(got, "runs in lab mode") {
		t.Errorf("thread-pktgen %s: %q, want lab mode", labKernelFlag, got)
	}
	// Nested KVM on an Intel host and lab kernels without kvm_intel: the
	// verdict says their nested guests run under TCG.
	d.Lab = labvm.Capabilities{QEMU: true, Accel: qemu.KVM, NestedKVM: true, APTGet: true, Vendor: labvm.KVMIntelModule}
	d.LabKernel = func(ctx context.Context, k scenarios.Kernel) (*vmimages.Kernel, error) {
		return &vmimages.Kernel{Modules: t.TempDir(), Release: "6.1.0-47-amd64"}, nil // no modules at all
	}
	debianCells := cells("lab-pktgen") // lab-pktgen's labels as Debian kernels
	for i := range debianCells {
		debianCells[i].Kernel = scenarios.Kernel{Label: debianCells[i].Kernel.Label, Debian: "6.1"}
	}
	if got, want := scenarioVerdict(t.Context(), d, emptyTable(t), "lab-pktgen", debianCells), "runs in lab mode (KVM with nested KVM; lab kernel stock (6.1.0-47-amd64) lacks kvm and kvm_intel"; !strings.HasPrefix(got, want) || !strings.Contains(got, "lab kernel patched") {
		t.Errorf("lab-pktgen, kernels without kvm: %q, want it to start %q and name both kernels", got, want)
	}
	// lab-pktgen's own kernels are built with KVM in: no such note.
	if got := scenarioVerdict(t.Context(), d, emptyTable(t), "lab-pktgen", cells("lab-pktgen")); strings.Contains(got, "lacks kvm") {
		t.Errorf("lab-pktgen, kernels built from source: %q", got)
	}
	d.LabKernel = nil
	d.Lab = labvm.Capabilities{Accel: qemu.TCG}
	delete(d.Tools, "qemu-system-x86_64")
	got = scenarioVerdict(t.Context(), d, emptyTable(t), "lab-pktgen", cells("lab-pktgen"))
	if got != "cannot run here\n- qemu-system-x86_64 is not installed: lab VMs run this host's programs; fix: install the Debian package qemu-system-x86 (make deps)" {
		t.Errorf("lab-pktgen without QEMU: %q", got)
	}
	var out bytes.Buffer
	writeDoctor(t.Context(), &out, d, emptyTable(t))
	if want := "\n  lab-pktgen                     cannot run here\n                                   - qemu-system-x86_64 is not installed"; !strings.Contains(out.String(), want) {
		t.Errorf("writeDoctor lacks %q:\n%s", want, out.String())
	}
}
