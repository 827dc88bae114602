package runner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
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
// vhost-net, no fq_codel.
func poorHost() *Doctor {
	return &Doctor{
		Root: true, Tun: true,
		Tools:  map[string]string{"qemu-system-x86_64": "7.2", "iperf3": "3.12", "trafgen": "0.6.8", "perf": "6.1", "ip": "6.1"},
		Qdiscs: map[string]bool{"pfifo_fast": true, "noqueue": true, "fq_codel": false},
		Lab:    lab.Capabilities{QEMU: true, Accel: qemu.TCG, APTGet: true},
	}
}

func TestDoctorMissingLabCellsNeedOnlyLabMode(t *testing.T) {
	d := poorHost()
	labCells := builtinCells(t, "lab-pktgen")
	if _, lc := SplitLab(labCells); len(lc) == 0 {
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
	miss := strings.Join(d.Missing(host), "; ")
	for _, want := range []string{"needs pktgen", "needs /dev/vhost-net"} {
		if !strings.Contains(miss, want) {
			t.Errorf("thread-pktgen: missing %q lacks %q", miss, want)
		}
	}

	// Without QEMU or apt-get, lab mode says what it lacks, and nothing else.
	d.Lab = lab.Capabilities{}
	delete(d.Tools, "qemu-system-x86_64")
	miss = strings.Join(d.Missing(labCells), "; ")
	for _, want := range []string{"needs qemu-system-x86_64", "needs apt-get"} {
		if !strings.Contains(miss, want) {
			t.Errorf("lab-pktgen without QEMU/apt-get: missing %q lacks %q", miss, want)
		}
	}
	if strings.Contains(miss, "pktgen:") || strings.Contains(miss, "vhost-net") {
		t.Errorf("lab-pktgen: host needs leaked into lab verdict: %q", miss)
	}
}

func TestDoctorLabCheck(t *testing.T) {
	for _, tc := range []struct {
		c        lab.Capabilities
		ok, warn bool
		detail   string
	}{
		{lab.Capabilities{Accel: qemu.TCG}, false, false, "unavailable: no qemu-system-x86_64; accel tcg, nested KVM no, apt-get no"},
		{lab.Capabilities{QEMU: true, Accel: qemu.TCG, APTGet: true}, false, true, "available: accel tcg, nested KVM no, apt-get yes"},
		{lab.Capabilities{QEMU: true, Accel: qemu.KVM, APTGet: true}, false, true, "available: accel kvm, nested KVM no, apt-get yes"},
		{lab.Capabilities{QEMU: true, Accel: qemu.KVM, NestedKVM: true, APTGet: true}, true, false, "available: accel kvm, nested KVM yes, apt-get yes"},
	} {
		got := labCheck(tc.c)
		if got.Name != "lab mode" || got.OK != tc.ok || got.Warn != tc.warn || got.Detail != tc.detail {
			t.Errorf("labCheck(%+v) = %+v", tc.c, got)
		}
		if !got.OK && got.Fix == "" {
			t.Errorf("labCheck(%+v): no fix", tc.c)
		}
	}
	d := &Doctor{Lab: lab.Capabilities{QEMU: true, Accel: qemu.KVM, NestedKVM: true}}
	if got, want := d.LabMode(), "KVM with nested KVM"; !reflect.DeepEqual(got, want) {
		t.Errorf("LabMode = %q, want %q", got, want)
	}
}
