package lab

import (
	"fmt"
	"time"

	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// NestedTCGBoot is the least boot deadline of a guest that runs under
// TCG inside a lab VM. A scenario's timeouts.boot is written for a guest
// on its host; nested under TCG in a TCG lab VM the same guest boots
// about six times slower (2 min measured on a 2-core host whose own TCG
// guests boot in 20 s), so quickstart's 90 s failed every nested boot.
// The lab built-ins set 9 min themselves.
const NestedTCGBoot = 9 * time.Minute

// NestedTCGSetup is the least setup deadline of a cell whose guest runs
// under TCG inside a lab VM, and NestedTCGTraffic what its traffic
// deadline gains: the agent answers such a guest's requests (the sink,
// the counters, a workload's server start and stop) as slowly as it
// boots, where quickstart's 1 min of setup and 1 min beyond its windows
// (timeouts.traffic 66 s for the iperf3 cell) were written for a guest on
// its host. A resumed nested iperf3 cell's warmup waited those 66 s for
// its server's start in the chaos figure of 2026-12-02.
const (
	NestedTCGSetup   = 3 * time.Minute
	NestedTCGTraffic = 3 * time.Minute
)

// NestedBoot raises the deadlines of the cells whose guests run under
// TCG in a lab VM and whose boot deadline was written for a guest on its
// host (below NestedTCGBoot): boot to NestedTCGBoot, setup to
// NestedTCGSetup, traffic by NestedTCGTraffic, and the cell's by as much.
// A cell that sets a nested boot's deadline (the lab built-ins) set the
// others for a lab too. guestKVM is whether the lab VM's guests can use
// KVM (the probe inside the lab, or what the host gives the lab VM). It
// returns the cells and a note for each deadline raised.
func NestedBoot(cells []scenarios.Cell, guestKVM bool) ([]scenarios.Cell, []string) {
	var notes []string
	seen := map[string]bool{}
	note := func(n string) {
		if !seen[n] {
			seen[n] = true
			notes = append(notes, n)
		}
	}
	out := make([]scenarios.Cell, len(cells))
	for i, c := range cells {
		if c.Guest.Accel == string(qemu.TCG) || !guestKVM {
			raiseNested(&c.Timeouts, note)
		}
		out[i] = c
	}
	return out, notes
}

// raiseNested raises t's deadlines for a guest nested under TCG
// (NestedBoot), noting each raise.
func raiseNested(t *scenarios.Timeouts, note func(string)) {
	raise := func(name string, d *time.Duration, to time.Duration) {
		if *d <= 0 || *d >= to {
			return
		}
		note(fmt.Sprintf("timeouts.%s %v raised to %v: the guests run under TCG inside a lab VM", name, *d, to))
		if t.Cell > 0 {
			t.Cell += to - *d
		}
		*d = to
	}
	if t.Boot <= 0 || t.Boot >= NestedTCGBoot {
		return
	}
	raise("boot", &t.Boot, NestedTCGBoot)
	raise("setup", &t.Setup, NestedTCGSetup)
	raise("traffic", &t.Traffic, t.Traffic+NestedTCGTraffic)
}
