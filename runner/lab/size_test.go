package lab

import (
	"errors"
	"github.com/vnetbench/vnetbench/runner"
	"reflect"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Hosts the lab tests describe: KVM on Intel and AMD with nesting, KVM
// without nesting, and a TCG-only host (a PVM-style /dev/kvm).
var (
	intelNested = qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: qemu.ModuleKVMIntel, Nested: "Y"}
	amdNested   = qemu.KVMStatus{Usable: true, Flag: "svm", Vendor: qemu.ModuleKVMAMD, Nested: "1"}
	intelFlat   = qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: qemu.ModuleKVMIntel, Nested: "N"}
	tcgOnly     = qemu.KVMStatus{Why: "a test vCPU did not run on /dev/kvm: KVM_RUN: internal error (KVM_EXIT_INTERNAL_ERROR)"}
)

// labConfigT is labConfig on a 2-CPU, 24 GiB TCG host, failing the test
// on an error.
func labConfigT(t *testing.T, label string, cells []scenarios.Cell, o runner.Options, in Inner, args []string) labvm.Config {
	t.Helper()
	c, _, err := labConfig(label, cells, o, in, args, Host{KVM: tcgOnly, CPUs: []int{0, 1}, MemMiB: 24 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func builtinCellsOf(t *testing.T, name string) []scenarios.Cell {
	t.Helper()
	s, err := scenarios.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Expand()
}

func TestSizeLab(t *testing.T) {
	cell := func(vcpus, memMiB int, pin scenarios.Pin) scenarios.Cell {
		return scenarios.Cell{Guest: scenarios.Guest{VCPUs: vcpus, MemoryMiB: memMiB}, Pin: pin}
	}
	cpus := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		cells    []scenarios.Cell
		host     []int
		memMiB   int
		want     Size
		warn     string
		errClass error
	}{
		{"one vCPU guest on a 2-CPU host", []scenarios.Cell{cell(1, 1024, scenarios.Pin{})}, cpus(2), 24 << 10,
			Size{CPUs: 2, MemoryMiB: 2560}, "", nil},
		{"256-CPU host: sized by the scenario, not the host", []scenarios.Cell{cell(2, 2048, scenarios.Pin{})}, cpus(256), 1 << 20,
			Size{CPUs: 3, MemoryMiB: 3584}, "", nil},
		{"pinned cells: vCPU i on the harness's i-th CPU", []scenarios.Cell{cell(1, 1024, scenarios.Pin{Vhost: []int{3}})}, []int{4, 5, 6, 7, 8, 9}, 0,
			Size{CPUs: 5, MemoryMiB: 2560, Pin: []int{4, 5, 6, 7, 8}}, "", nil},
		{"pins beyond the host: overcommitted, unpinned", []scenarios.Cell{cell(1, 512, scenarios.Pin{VCPU: []int{3}})}, cpus(2), 0,
			Size{CPUs: 4, MemoryMiB: 2048}, "needs 4 vCPUs (the cells name CPU 3) but this host has 2", nil},
		{"the largest guest sets the memory", []scenarios.Cell{cell(1, 512, scenarios.Pin{}), cell(1, 4096, scenarios.Pin{})}, cpus(8), 4 << 10,
			Size{CPUs: 2, MemoryMiB: 5632}, "this host has 4096 MiB", nil},
		{"a CPU beyond the pc machine", []scenarios.Cell{cell(1, 1024, scenarios.Pin{Generator: []int{300}})}, cpus(512), 0,
			Size{}, "", fault.ErrInput},
		{"CPU 254 fits", []scenarios.Cell{cell(1, 1024, scenarios.Pin{Generator: []int{254}})}, cpus(512), 0,
			Size{CPUs: 255, MemoryMiB: 2560, Pin: cpus(255)}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SizeFor(tc.cells, tc.host, tc.memMiB)
			if !errors.Is(err, tc.errClass) || (err == nil) != (tc.errClass == nil) {
				t.Fatalf("err = %v, want %v", err, tc.errClass)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "at most 255") {
					t.Errorf("err = %v, want the pc machine's limit named", err)
				}
				return
			}
			warn := strings.Join(got.Warnings, "; ")
			got.Warnings = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SizeFor = %+v, want %+v", got, tc.want)
			}
			if (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
				t.Errorf("warnings %q, want %q", warn, tc.warn)
			}
		})
	}
	// The built-ins: the 4-thread pktgen cells name CPUs 0-3 and pin the
	// vhost worker, so their lab has 5 vCPUs pinned to host CPUs 0-4.
	lc := builtinCellsOf(t, "thread-pktgen-vhost-pin0")
	ls, err := SizeFor(lc, cpus(64), 0)
	if err != nil || ls.CPUs != 5 || !reflect.DeepEqual(ls.Pin, cpus(5)) {
		t.Errorf("thread-pktgen-vhost-pin0 on 64 CPUs: %+v, %v", ls, err)
	}
}

// TestLabAccel: a lab cell's guest gets KVM only where this host's KVM
// runs a vCPU and nests; guest.accel: kvm elsewhere is refused before any
// lab boots (exit 2); auto falls back with a warning naming the reason.
func TestLabAccel(t *testing.T) {
	lk := scenarios.Kernel{Label: "stock", Debian: "6.1"}
	cell := func(accel string) scenarios.Cell {
		return scenarios.Cell{Name: "tap/" + accel, Kernel: lk, Guest: scenarios.Guest{Accel: accel}}
	}
	for _, tc := range []struct {
		name  string
		st    qemu.KVMStatus
		accel string
		want  qemu.Accel
		warn  string
		err   error
	}{
		{"intel nested, auto", intelNested, "auto", qemu.KVM, "", nil},
		{"amd nested, kvm", amdNested, "kvm", qemu.KVM, "", nil},
		{"nested off, auto", intelFlat, "auto", qemu.TCG, "nested KVM is off on this host (kvm_intel nested=N", nil},
		{"nested off, kvm", intelFlat, "kvm", "", "", fault.ErrCapability},
		{"TCG host, kvm", tcgOnly, "kvm", "", "", fault.ErrCapability},
		{"TCG host, auto", tcgOnly, "auto", qemu.TCG, "the lab VM itself runs under TCG", nil},
		{"KVM host, tcg", intelNested, "tcg", qemu.TCG, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cell(tc.accel)
			a, warn, err := runner.PlanAccel(&c, tc.st)
			if a != tc.want || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) || !strings.Contains(warn, tc.warn) || (warn == "") != (tc.warn == "") {
				t.Errorf("runner.PlanAccel = %q, %q, %v; want %q, %q, %v", a, warn, err, tc.want, tc.warn, tc.err)
			}
			_, _, lerr := labConfig("stock", []scenarios.Cell{c}, runner.Options{Dir: "/run/x"}, Inner{}, nil, Host{KVM: tc.st, CPUs: []int{0, 1, 2, 3}})
			if !errors.Is(lerr, tc.err) || (lerr == nil) != (tc.err == nil) {
				t.Errorf("labConfig err = %v, want %v", lerr, tc.err)
			}
		})
	}
	// The same cell on the running kernel uses the host's KVM directly.
	c := scenarios.Cell{Name: "tap", Guest: scenarios.Guest{Accel: "kvm"}}
	if a, _, err := runner.PlanAccel(&c, intelFlat); a != qemu.KVM || err != nil {
		t.Errorf("host cell on a non-nesting KVM host: %q, %v", a, err)
	}
}

// TestLabVMArgsKVM golden-tests the lab VM's QEMU argv under KVM on Intel
// and AMD hosts with nested KVM (the lab's CPU shows vmx or svm to its
// guests; the vCPUs are sized from the scenario and pinned where it pins),
// and under TCG. The lab config comes from labConfig, as a run makes it.
func TestLabVMArgsKVM(t *testing.T) {
	cells := builtinCellsOf(t, "lab-pktgen")
	byLabel := map[string][]scenarios.Cell{}
	var labels []string
	for _, c := range cells {
		if _, ok := byLabel[c.Kernel.Label]; !ok {
			labels = append(labels, c.Kernel.Label)
		}
		byLabel[c.Kernel.Label] = append(byLabel[c.Kernel.Label], c)
	}
	for _, host := range []struct {
		name string
		st   qemu.KVMStatus
	}{{"kvm-intel", intelNested}, {"kvm-amd", amdNested}, {"kvm-intel-no-nesting", intelFlat}, {"tcg", tcgOnly}} {
		var b strings.Builder
		for _, label := range labels {
			lc := byLabel[label]
			c, warnings, err := labConfig(label, lc, runner.Options{Dir: "/runs/r1"}, Inner{}, []string{"run"},
				Host{KVM: host.st, CPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, MemMiB: 32 << 10})
			if err != nil {
				t.Fatal(err)
			}
			c.CacheDir = "/var/cache/vnetbench"
			b.WriteString("# kernel " + label + "\n")
			for _, w := range warnings {
				b.WriteString("# warning: " + w + "\n")
			}
			b.WriteString(proc.Quote(labvm.PlanArgs(c, "")) + "\n")
		}
		golden.Check(t, "lab-vm-"+host.name+".golden", b.String())
	}
}
