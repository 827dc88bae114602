package results

import "github.com/vnetbench/vnetbench/internal/metric"

// dropMetric describes a drop_pps.REASON@FUNCTION key (metric.DropKey).
// Lower is better, but like perf counters they are not gated by default:
// they say where Lost went, Lost itself is the gated number.
func dropMetric(key metric.Key, reason, fn string) metric.Metric {
	m := metric.Metric{Key: key, Unit: "pps", Better: metric.LowerIsBetter, Rate: true}
	if reason == metric.DropQdisc && fn == "" {
		m.Description = "packets/s the tap's root qdisc dropped (its drops counter), read at the same moments as lost_pps"
		return m
	}
	m.Description = "packets/s the kernel dropped with reason " + reason + " in " + fn +
		" (an eBPF count of its drop function's calls, internal/dropmon), read at the same moments as lost_pps"
	return m
}
