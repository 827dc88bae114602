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

// NestedBoot raises the boot deadline (and the cell's with it) of the
// cells whose guests run under TCG in a lab VM to NestedTCGBoot. guestKVM
// is whether the lab VM's guests can use KVM (the probe inside the lab,
// or what the host gives the lab VM). It returns the cells and a note for
// each deadline raised.
func NestedBoot(cells []scenarios.Cell, guestKVM bool) ([]scenarios.Cell, []string) {
	var notes []string
	out := make([]scenarios.Cell, len(cells))
	seen := map[time.Duration]bool{}
	for i, c := range cells {
		tcg := c.Guest.Accel == string(qemu.TCG) || !guestKVM
		if tcg && c.Timeouts.Boot > 0 && c.Timeouts.Boot < NestedTCGBoot {
			if !seen[c.Timeouts.Boot] {
				notes = append(notes, fmt.Sprintf("timeouts.boot %v raised to %v: the guests run under TCG inside a lab VM", c.Timeouts.Boot, NestedTCGBoot))
				seen[c.Timeouts.Boot] = true
			}
			if c.Timeouts.Cell > 0 {
				c.Timeouts.Cell += NestedTCGBoot - c.Timeouts.Boot
			}
			c.Timeouts.Boot = NestedTCGBoot
		}
		out[i] = c
	}
	return out, notes
}
