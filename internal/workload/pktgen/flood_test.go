package pktgen

import (
	"testing"
	"time"

	pg "github.com/vnetbench/vnetbench/internal/workload/pktgen/driver"
)

// A flood is the driver's simple mode on one thread, multiqueue (one
// /32 destination) on several; its count is always its own (0: until its
// duration ends), never the mode's default.
func TestFloodConfig(t *testing.T) {
	one := Flood{Dev: "vnbt0", Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56", Count: 20000, Duration: time.Minute}.config()
	if one.Mode != pg.ModeSimple || one.Dst != "10.0.0.2" || one.Count != 20000 || !one.CountSet || one.Duration != time.Minute {
		t.Errorf("one thread: %+v", one)
	}
	four := Flood{Dev: "vnbt0", Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56", Threads: 4, Duration: time.Second}.config()
	if four.Mode != pg.ModeMultiqueue || four.Dst != "10.0.0.2/32" || four.Threads != 4 || four.Count != 0 || !four.CountSet {
		t.Errorf("four threads: %+v", four)
	}
}
