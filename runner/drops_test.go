package runner

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/dropmon"
	"github.com/vnetbench/vnetbench/internal/metric"
)

// The drops counted in tun_net_xmit are Lost when both are read around
// one interval; a count at the tracepoint under pktgen is not, and says
// why.
func TestDropCheck(t *testing.T) {
	const run = 3.0 // s
	m := map[metric.Key]float64{
		"lost_pps":                           600000.0 / run,
		"drop_pps.FULL_RING@tun_net_xmit":    599990.0 / run,
		"drop_pps.TAP_FILTER@tun_net_xmit":   10.0 / run,
		"drop_pps.NOT_SPECIFIED@pktgen_xmit": 601234.0 / run, // pktgen letting go of its reference: not Lost
		"drop_pps.qdisc":                     5.0 / run,      // never reached the tap
	}
	check, counted := dropCheck(m, run, dropmon.ProbeKprobe+"kfree_skb_reason", "pktgen")
	if check != dropsAddUp || counted < 599999.5 || counted > 600000.5 {
		t.Fatalf("dropCheck = %q, %v; want %q, 600000", check, counted, dropsAddUp)
	}
	m["drop_pps.FULL_RING@tun_net_xmit"] = 0
	check, _ = dropCheck(m, run, dropmon.ProbeTracepoint, "pktgen")
	if !strings.Contains(check, "pktgen holds its own reference") {
		t.Errorf("tracepoint under pktgen: %q", check)
	}
	check, _ = dropCheck(m, run, dropmon.ProbeKprobe+"kfree_skb_reason", "trafgen")
	if check == dropsAddUp || !strings.Contains(check, "tx_dropped") {
		t.Errorf("kprobe, not adding up: %q", check)
	}
	// The first real lab run's samples (a detached probe): Lost 48584
	// pps over 3 s, not one drop counted anywhere.
	dead := map[metric.Key]float64{"lost_pps": 48584, "drop_pps.qdisc": 0}
	if check, _ = dropCheck(dead, run, dropmon.ProbeKprobe+"kfree_skb_reason", "pktgen"); !strings.Contains(check, "not counting") {
		t.Errorf("nothing counted: %q", check)
	}
}
