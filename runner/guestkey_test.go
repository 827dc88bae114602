package runner

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The guest is reused across host-side knobs, rebooted for VM changes.
func TestGuestKey(t *testing.T) {
	base := scenarios.Cell{Backend: "tap", Qdisc: "pfifo_fast", Guest: scenarios.Guest{VCPUs: 1, MemoryMiB: 512},
		Generator: scenarios.Generator{Kind: "trafgen"}}
	same := []func(*scenarios.Cell){
		func(c *scenarios.Cell) { c.Qdisc = "noqueue" },
		func(c *scenarios.Cell) { c.Pin.VCPU = []int{0} },
		func(c *scenarios.Cell) { c.Generator.Kind = "iperf3" },
		func(c *scenarios.Cell) { c.Guest.Sink = "xdp-drop" },
	}
	diff := []func(*scenarios.Cell){
		func(c *scenarios.Cell) { c.Backend = "tap+vhost" },
		func(c *scenarios.Cell) { c.Queues = 4 },
		func(c *scenarios.Cell) { c.Guest.VCPUs = 2 },
		func(c *scenarios.Cell) { c.Guest.MemoryMiB = 1024 },
		func(c *scenarios.Cell) { c.Kernel.Label = "patched" },
	}
	for i, f := range same {
		c := base
		f(&c)
		if c.GuestKey() != base.GuestKey() {
			t.Errorf("same[%d]: reboot for a host-side knob", i)
		}
	}
	for i, f := range diff {
		c := base
		f(&c)
		if c.GuestKey() == base.GuestKey() {
			t.Errorf("diff[%d]: VM change not detected", i)
		}
	}
}

// Cells that differ only in backend (tap vs tap+vhost) share one guest
// with a vhost=off and a vhost=on NIC; a custom tap name, a sink other
// than the stack, or one backend alone keep one guest per backend.
func TestPairedGuests(t *testing.T) {
	both := loadCells(t, `
name: p
backend: [tap, tap+vhost]
qdisc: [pfifo_fast, noqueue]
generator:
  trafgen: {duration: 1s}
`)
	p := pairedGuests(both)
	if len(p) != 1 || !p[pairedKey(&both[0])] {
		t.Fatalf("paired %v, want the one guest of all 4 cells", p)
	}
	gs := &guests{paired: p}
	keys := map[string]bool{}
	for i := range both {
		keys[gs.key(&both[i])] = true
	}
	if len(keys) != 1 {
		t.Errorf("guest keys %v, want one", keys)
	}
	cmds := strings.Join(Commands(&both[0], qemu.TCG, both...), "\n")
	for _, want := range []string{"ifname=vnbt0", "ifname=vnbt1", "vhost=on", "vhost=off", "10.0.1.1/24", "mac=52:54:00:12:34:57"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("paired guest's commands lack %q:\n%s", want, cmds)
		}
	}
	for i := range both {
		g := &guest{nics: pairNICs()}
		n := g.nic(both[i].Backend)
		if n.backend != both[i].Backend || (n.backend == "tap+vhost") != (n.tap == pairTap) {
			t.Errorf("cell %s: NIC %+v", both[i].Name, n)
		}
	}
	for _, y := range []string{
		"name: p\nbackend: tap\ngenerator:\n  trafgen: {duration: 1s}\n",
		"name: p\nbackend: [tap, tap+vhost]\nguest: {sink: xdp-drop}\ngenerator:\n  trafgen: {duration: 1s}\n",
	} {
		cells := loadCells(t, y)
		if p := pairedGuests(cells); len(p) != 0 {
			t.Errorf("%q: paired %v, want none", y, p)
		}
		if cmds := strings.Join(Commands(&cells[0], qemu.TCG, cells...), "\n"); strings.Contains(cmds, "vnbt1") {
			t.Errorf("%q: unpaired commands use vnbt1", y)
		}
	}
}
