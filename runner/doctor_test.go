package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/labvm"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
	"github.com/vnetbench/vnetbench/vmimages"
)

func builtinCells(t *testing.T, name string) []scenarios.Cell {
	t.Helper()
	s, err := scenarios.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Expand()
}

// A host like this one: root, tun, QEMU under TCG, no pktgen, no
// vhost-net, no fq_codel; every guest program and build tool.
func poorHost() *Doctor {
	return &Doctor{
		Root: true, Tun: true,
		Tools:    map[string]string{"qemu-system-x86_64": "7.2", "iperf3": "3.12", "trafgen": "0.6.8", "perf": "6.1", "ip": "6.1"},
		Qdiscs:   map[string]bool{"pfifo_fast": true, "noqueue": true, "fq_codel": false},
		Features: map[string]workload.Probe{"pktgen": {Why: "pktgen is not available in kernel X", Fix: "modprobe pktgen"}},
		Lab:      labvm.Capabilities{QEMU: true, Accel: qemu.TCG, APTGet: true},
		Look:     func(Needs) Facts { return Facts{Missing: map[string]bool{}} },
	}
}

func refusalLines(rs []Refusal) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return strings.Join(out, "\n")
}

// doctor's verdict is the refusals list plan and run --dry-run print,
// judged on doctor's probes: a lab kernel's cells need only what the lab
// needs here (its tools, QEMU, its kernels' fetch and build), the running
// kernel's what its preflight checks (pktgen, vhost-net, qdiscs).
func TestDoctorMissingLabCellsNeedOnlyLabMode(t *testing.T) {
	d := poorHost()
	labCells := builtinCells(t, "lab-pktgen")
	if _, lc := scenarios.SplitRunning(labCells); len(lc) == 0 {
		t.Fatal("lab-pktgen has no lab cells")
	}
	if miss := d.Missing(labCells); len(miss) != 0 {
		t.Errorf("lab-pktgen on a host with QEMU: missing %q, want nothing (pktgen/vhost-net are in the lab VM)", miss)
	}
	if got := d.LabMode(); got != "TCG: nested guest boots take minutes" {
		t.Errorf("LabMode = %q", got)
	}

	// The same scenario on the running kernel needs the host's pktgen.
	host := builtinCells(t, "thread-pktgen")
	want := `run would refuse: backend tap+vhost needs /dev/vhost-net, which this kernel does not provide (QEMU would abort with an assertion); fix: load vhost_net (modprobe vhost_net), use backend: tap, or run the scenario in ` + LabHint + `
run would refuse: pktgen is not available in kernel X; fix: modprobe pktgen, or ` + LabHint + `
run would refuse: qdisc fq_codel is not available in this kernel; fix: use a qdisc it has (noqueue, pfifo_fast), or ` + LabHint
	if got := refusalLines(d.Missing(host)); got != want {
		t.Errorf("thread-pktgen: missing\n%s\nwant\n%s", got, want)
	}

	// Without QEMU or Debian's gcc-12 (lab-pktgen rebuilds tun.ko with
	// it), the lab says what it lacks here, and nothing else.
	delete(d.Tools, "qemu-system-x86_64")
	d.Look = func(Needs) Facts { return Facts{Missing: map[string]bool{"gcc-12": true}} }
	want = `run would refuse: qemu-system-x86_64 is not installed: lab VMs run this host's programs; fix: install the Debian package qemu-system-x86 (make deps)
run would refuse: gcc-12 is not installed: rebuilding modules for Debian's kernel (kernels patched, stock) runs it; fix: install the Debian package gcc-12 (make deps)`
	if got := refusalLines(d.Missing(labCells)); got != want {
		t.Errorf("lab-pktgen without QEMU and gcc-12: missing\n%s\nwant\n%s", got, want)
	}
}

func TestDoctorLabCheck(t *testing.T) {
	for _, tc := range []struct {
		c        labvm.Capabilities
		ok, warn bool
		detail   string
	}{
		{labvm.Capabilities{Accel: qemu.TCG}, false, false, "unavailable: no qemu-system-x86_64; accel tcg, nested KVM no, apt-get no"},
		{labvm.Capabilities{QEMU: true, Accel: qemu.TCG, APTGet: true}, false, true, "available: accel tcg, nested KVM no, apt-get yes"},
		{labvm.Capabilities{QEMU: true, Accel: qemu.KVM, APTGet: true}, false, true, "available: accel kvm, nested KVM no, apt-get yes"},
		{labvm.Capabilities{QEMU: true, Accel: qemu.KVM, NestedKVM: true, APTGet: true}, true, false, "available: accel kvm, nested KVM yes, apt-get yes"},
	} {
		got := labCheck(tc.c)
		if got.Name != "lab mode" || got.OK != tc.ok || got.Warn != tc.warn || got.Detail != tc.detail {
			t.Errorf("labCheck(%+v) = %+v", tc.c, got)
		}
		if !got.OK && got.Fix == "" {
			t.Errorf("labCheck(%+v): no fix", tc.c)
		}
	}
	d := &Doctor{Lab: labvm.Capabilities{QEMU: true, Accel: qemu.KVM, NestedKVM: true}}
	if got, want := d.LabMode(), "KVM with nested KVM"; !reflect.DeepEqual(got, want) {
		t.Errorf("LabMode = %q, want %q", got, want)
	}
}

// kvmKernelDir writes a modules directory whose modules.dep has kvm and
// the given vendor modules (kvm-intel.ko, kvm-amd.ko, as Debian names them).
func kvmKernelDir(t *testing.T, vendors ...string) string {
	t.Helper()
	dir := t.TempDir()
	dep := "kernel/arch/x86/kvm/kvm.ko: kernel/virt/lib/irqbypass.ko\nkernel/virt/lib/irqbypass.ko:\n"
	for _, v := range vendors {
		dep += "kernel/arch/x86/kvm/" + strings.ReplaceAll(v, "_", "-") + ".ko: kernel/arch/x86/kvm/kvm.ko\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDoctorLabKVM: with nested KVM on an Intel host, each lab kernel must
// ship kvm and kvm_intel; one that lacks them, one not fetched yet and one
// that cannot be resolved each get a note, a complete one none. Under TCG,
// without nesting or without vmx/svm there is nothing to check.
func TestDoctorLabKVM(t *testing.T) {
	built := builtinCells(t, "lab-pktgen") // stock and patched, built from source
	cells := slices.Clone(built)
	for i := range cells { // the same labels as Debian kernels, which ship modules
		cells[i].Kernel = scenarios.Kernel{Label: cells[i].Kernel.Label, Debian: "6.1"}
	}
	third := cells[0]
	third.Kernel = scenarios.Kernel{Label: "mine", Image: "/no/such/bzImage"}
	fourth := cells[0]
	fourth.Kernel = scenarios.Kernel{Label: "later", Debian: "6.12"}
	cells = append(cells, third, fourth)
	dirs := map[string]string{"stock": kvmKernelDir(t, labvm.KVMIntelModule, labvm.KVMAMDModule), "patched": kvmKernelDir(t, labvm.KVMAMDModule)}
	d := &Doctor{
		Lab: labvm.Capabilities{QEMU: true, Accel: qemu.KVM, NestedKVM: true, Vendor: labvm.KVMIntelModule},
		LabKernel: func(ctx context.Context, k scenarios.Kernel) (*vmimages.Kernel, error) {
			switch k.Label {
			case "later":
				return nil, fmt.Errorf("linux-image-6.12.117+deb12-amd64-unsigned: %w", vmimages.ErrNotFetched)
			case "mine":
				return nil, errors.New("kernel image /no/such/bzImage: no such file or directory")
			}
			return &vmimages.Kernel{Modules: dirs[k.Label], Release: "6.1.0-47-amd64"}, nil
		},
	}
	want := []string{
		"lab kernel patched (6.1.0-47-amd64) lacks kvm_intel: its nested guests run under TCG (build it with CONFIG_KVM and CONFIG_KVM_INTEL =m or =y)",
		"kvm modules of lab kernel mine unchecked: kernel image /no/such/bzImage: no such file or directory",
		"lab kernel later not fetched yet: its kvm modules are checked when it boots",
	}
	if got := d.LabKVM(t.Context(), cells); !slices.Equal(got, want) {
		t.Errorf("LabKVM:\n%q\nwant\n%q", got, want)
	}
	// Kernels built from source have KVM built in (runner/kbuild's base
	// config): nothing to look up.
	if got := d.LabKVM(t.Context(), built); len(got) != 0 {
		t.Errorf("LabKVM of kernels built from source: %q", got)
	}
	d.Lab.Vendor = labvm.KVMAMDModule
	if got := d.LabKVM(t.Context(), cells[:len(cells)-2]); len(got) != 0 {
		t.Errorf("AMD host, both kernels ship kvm_amd: %q", got)
	}
	for _, c := range []labvm.Capabilities{
		{QEMU: true, Accel: qemu.TCG, Vendor: labvm.KVMIntelModule},
		{QEMU: true, Accel: qemu.KVM, Vendor: labvm.KVMIntelModule},
		{QEMU: true, Accel: qemu.KVM, NestedKVM: true},
	} {
		d.Lab = c
		if got := d.LabKVM(t.Context(), cells); got != nil {
			t.Errorf("%+v: %q, want no check", c, got)
		}
	}
}

// TestDoctorNestedFromProbe: "KVM with nested KVM" needs a vCPU that ran
// and nested=Y/1; a nested parameter on a host whose /dev/kvm cannot run a
// standard guest (PVM-style) or nested=N/0 gives another verdict, with the
// module and parameter in the fix.
func TestDoctorNestedFromProbe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		st      qemu.KVMStatus
		mode    string
		kvmLine string
		fix     string
	}{
		{"intel nested Y", qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: "kvm_intel", Nested: "Y"},
			"KVM with nested KVM", "usable (a test vCPU ran; kvm_intel, nested=Y)", ""},
		{"amd nested 1", qemu.KVMStatus{Usable: true, Flag: "svm", Vendor: "kvm_amd", Nested: "1"},
			"KVM with nested KVM", "usable (a test vCPU ran; kvm_amd, nested=1)", ""},
		{"intel nested N", qemu.KVMStatus{Usable: true, Flag: "vmx", Vendor: "kvm_intel", Nested: "N"},
			"KVM, no nested KVM: the inner guests run under TCG", "usable (a test vCPU ran; kvm_intel, nested=N)", "kvm_intel nested=N"},
		{"amd nested 0", qemu.KVMStatus{Usable: true, Flag: "svm", Vendor: "kvm_amd", Nested: "0"},
			"KVM, no nested KVM: the inner guests run under TCG", "usable (a test vCPU ran; kvm_amd, nested=0)", "modprobe kvm_amd nested=1"},
		{"pvm: nested Y but no vCPU ran", qemu.KVMStatus{Flag: "vmx", Vendor: "kvm_intel", Nested: "Y", Why: "a test vCPU did not run on /dev/kvm: KVM_RUN: internal error"},
			"TCG: nested guest boots take minutes", "not usable: a test vCPU did not run on /dev/kvm: KVM_RUN: internal error", "TCG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := labvm.FromKVM(tc.st)
			c.QEMU = true
			d := &Doctor{Lab: c}
			if got := d.LabMode(); got != tc.mode {
				t.Errorf("LabMode = %q, want %q", got, tc.mode)
			}
			if got := kvmCheck(tc.st); got.Detail != tc.kvmLine || got.OK != tc.st.Usable {
				t.Errorf("kvm line = %+v, want %q", got, tc.kvmLine)
			}
			lc := labCheck(c)
			if lc.OK != (tc.fix == "") || !strings.Contains(lc.Fix, tc.fix) {
				t.Errorf("lab mode line = %+v, want fix with %q", lc, tc.fix)
			}
		})
	}
}

// A namespace that no longer exists is gone, not in use: doctor --clean
// resolves its ledger line instead of keeping it forever with the reason
// "no such file or directory" (seen on a ledger of a killed tcprr test).
func TestLeftoverNetnsAlreadyGone(t *testing.T) {
	u := &users{}
	o := ledger.Orphan{Entry: ledger.Entry{Kind: ledger.Netns, Name: "vnb-test-never-made-0", Ino: 4026532247}}
	if gone, busy := u.check(o); !gone || busy != "" {
		t.Errorf("check of an absent netns: gone %v, busy %q; want gone and no reason", gone, busy)
	}
}

// A run killed while it deleted its namespace (between the unmount and
// the file's removal: a preflight probe's namespace lives a fraction of a
// second) leaves the empty file the namespace was mounted on. doctor
// --clean removes it instead of keeping it as "another namespace has its
// name now" (TestChaosE2E, killed at 0.1 s); a file with content under a
// namespace's name is not one it can have left, and stays.
func TestLeftoverNetnsHalfDeleted(t *testing.T) {
	testenv.NeedRoot(t, "files in /run/netns")
	if err := os.MkdirAll(hostnet.NetnsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("vnb-test-halfdeleted-%d", os.Getpid())
	path := filepath.Join(hostnet.NetnsDir, name)
	t.Cleanup(func() { os.Remove(path) })
	o := ledger.Orphan{Entry: ledger.Entry{Kind: ledger.Netns, Name: name, Ino: 4026532247}}
	u := &users{}

	os.WriteFile(path, []byte("not ours"), 0o644)
	if gone, busy := u.check(o); gone || !strings.Contains(busy, "not a network namespace") {
		t.Errorf("a file with content: gone %v, busy %q; want it kept as no namespace", gone, busy)
	}
	os.WriteFile(path, nil, 0o444) // what an interrupted deletion leaves
	if gone, busy := u.check(o); gone || busy != "" {
		t.Fatalf("the empty file: gone %v, busy %q; want it removable", gone, busy)
	}
	if err := remove(o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the empty file is still there (%v)", err)
	}
}
