package results

import (
	"slices"
	"sort"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
)

// Metric keys are defined in two places: the harness's own (the tap,
// qdisc and guest counters over the window, and its self-measurements)
// here, and each workload's (tx_pps, throughput_bps, ...) in its package,
// through the metric catalogue (internal/metric, which the workload
// registry fills). Lookup asks both.

// Metrics are the harness's own metric keys (a workload's are its
// Metrics). perf.<event> keys are described by Lookup's rule instead.
var Metrics = map[metric.Key]metric.Metric{
	metric.TapTxPPS:          {Key: metric.TapTxPPS, Unit: "pps", Better: metric.HigherIsBetter, Rate: true, Description: "tap tx_packets delta / window (cross-check of tx_pps)", Diagnostic: true, Header: "tap tx", HeaderNote: "(the tap's tx_packets per second of the window: cross-check of tx_pps)"},
	metric.LostPPS:           {Key: metric.LostPPS, Unit: "pps", Better: metric.LowerIsBetter, Rate: true, Description: "packets/s the tap dropped (tx_dropped delta) over the same interval as tx_pps: the generator's own run time where it has one (tx_run_s: pktgen, tx_dropped read just before its start and just after its end), else the measurement window"},
	metric.QdiscDropPPS:      {Key: metric.QdiscDropPPS, Unit: "pps", Better: metric.LowerIsBetter, Rate: true, Description: "drops counted by the tap's root qdisc / window (packets that never reached the tap; not in lost_pps)"},
	metric.RxPPS:             {Key: metric.RxPPS, Unit: "pps", Better: metric.HigherIsBetter, Rate: true, Description: "guest eth0 rx_packets delta / window"},
	metric.TxPackets:         {Key: metric.TxPackets, Unit: "count", Better: metric.Neutral, Description: "packets transmitted in the window", Diagnostic: true, Header: "tx pkts", HeaderNote: "(packets transmitted in the window)"},
	metric.HarnessCPUFrac:    {Key: metric.HarnessCPUFrac, Unit: "fraction", Better: metric.LowerIsBetter, Description: "the harness's own CPU use in the window, fraction of a core", Diagnostic: true, Header: "harness", HeaderNote: "(its own CPU in the window, % of a core)"},
	metric.QdiscDrops:        {Key: metric.QdiscDrops, Unit: "count", Better: metric.LowerIsBetter, Description: "drops counted by the tap's root qdisc in the window", Diagnostic: true, Header: "qdisc drops", HeaderNote: "(packets the tap's root qdisc dropped in the window)"},
	metric.GeneratorBusyFrac: {Key: metric.GeneratorBusyFrac, Unit: "fraction", Better: metric.Neutral, Description: "share of the window the generator was running (below 0.9: it may not saturate)", Diagnostic: true, Header: "gen busy", HeaderNote: "(share of the window the generator ran; < 90%: may not saturate)"},
	metric.RTTP50S:           {Key: metric.RTTP50S, Unit: "s", Better: metric.LowerIsBetter, Description: "median round trip of the latency probe under load: UDP request from the host's run namespace through the tap to the guest's reflector and back (send call to the reply's kernel receive stamp)"},
	metric.RTTP99S:           {Key: metric.RTTP99S, Unit: "s", Better: metric.LowerIsBetter, Description: "99th percentile of the probe's round trips under load (an order statistic; its 95% interval is the sample's rtt_p99_s_ci95 label)"},
	metric.RTTP999S:          {Key: metric.RTTP999S, Unit: "s", Better: metric.LowerIsBetter, Description: "99.9th percentile of the probe's round trips under load (needs about 3700 probes, 18.5 s at 5 ms, for an upper confidence bound)"},
	metric.RTTMaxS:           {Key: metric.RTTMaxS, Unit: "s", Better: metric.LowerIsBetter, Description: "longest answered probe round trip under load"},
	metric.RTTIdleP50S:       {Key: metric.RTTIdleP50S, Unit: "s", Better: metric.LowerIsBetter, Description: "median probe round trip in the idle phase before the load (the baseline)"},
	metric.RTTInflationS:     {Key: metric.RTTInflationS, Unit: "s", Better: metric.LowerIsBetter, Description: "rtt_p50_s minus rtt_idle_p50_s: what the load adds to the median round trip"},
	metric.QdiscWaitP99S:     {Key: metric.QdiscWaitP99S, Unit: "s", Better: metric.LowerIsBetter, Description: "99th percentile of the probe requests' time in the tap's qdisc under load: SO_TIMESTAMPING SOFTWARE (tun's skb_tx_timestamp) minus SCHED (entry to __dev_queue_xmit), one host clock"},
	metric.QdiscBacklogMax:   {Key: metric.QdiscBacklogMax, Unit: "bytes", Better: metric.LowerIsBetter, Description: "largest backlog of the tap's root qdisc over the latency probe's readings under load (netlink TCA_STATS2 every 10 ms; raw readings in qdisc.csv)"},
	metric.QdiscBacklogP50:   {Key: metric.QdiscBacklogP50, Unit: "bytes", Better: metric.LowerIsBetter, Description: "median backlog of the tap's root qdisc over the latency probe's readings under load"},
	metric.ProbeLossFrac:     {Key: metric.ProbeLossFrac, Unit: "fraction", Better: metric.LowerIsBetter, Description: "share of the probes sent under load with no answer within latency.timeout"},
	metric.ProbeShareFrac:    {Key: metric.ProbeShareFrac, Unit: "fraction", Better: metric.LowerIsBetter, Diagnostic: true, Description: "the latency probe's requests per second over the load's packet rate (tx_pps, else rx_pps) in the window: how much of the tap's traffic is the probe (a warning past 0.1%)"},
	metric.CellOverheadS:     {Key: metric.CellOverheadS, Unit: "s", Better: metric.LowerIsBetter, Description: OverheadDef, Diagnostic: true, Header: "overhead", HeaderNote: "(" + OverheadDef + ")"},
}

// OverheadDef is what cell_overhead_s counts, as the runner measures it
// (runner's collect and finish: the sample's wall time minus the window,
// the warmup, the guest's boot and perf report), in the words of
// docs/running.md: setup and teardown, but also a lab's turn, the
// counters' reads, the generator's start and stopping a previous guest.
const OverheadDef = "the sample's wall time outside its window, warmup, guest boot and perf report"

// Diagnostics are the keys of the harness's self-measurements
// (harness_cpu_frac, cell_overhead_s) and of its and the workloads'
// diagnostics and cross-checks (metric.Metric.Diagnostic): numbers that
// tell whether the harness measured well, not how the kernel under test
// performs. Reports gather them in one "harness and diagnostics" table (a
// Detail table), not in per-metric tables, and compare does not gate them
// by default. Machine-readable formats keep them like any metric. The
// workloads' follow generator_busy_frac.
func Diagnostics() []metric.Key {
	out := []metric.Key{metric.HarnessCPUFrac, metric.CellOverheadS, metric.GeneratorBusyFrac}
	for _, m := range metric.All() {
		if m.Diagnostic {
			out = append(out, m.Key)
		}
	}
	return append(out, metric.QdiscDrops, metric.TxPackets, metric.TapTxPPS)
}

// IsDiagnostic reports whether key is one of Diagnostics.
func IsDiagnostic(key metric.Key) bool {
	m, ok := Lookup(key)
	return ok && m.Diagnostic
}

// perfRules gives the direction and unit of known perf events; other
// events are Neutral counts.
var perfRules = map[string]metric.Metric{
	"context-switches": {Unit: "count", Better: metric.LowerIsBetter},
	"cs":               {Unit: "count", Better: metric.LowerIsBetter},
	"cpu-migrations":   {Unit: "count", Better: metric.LowerIsBetter},
	"page-faults":      {Unit: "count", Better: metric.LowerIsBetter},
	"branch-misses":    {Unit: "count", Better: metric.LowerIsBetter},
	"cache-misses":     {Unit: "count", Better: metric.LowerIsBetter},
	"task-clock":       {Unit: "s", Better: metric.LowerIsBetter}, // perfparse base unit
	"cpu-clock":        {Unit: "s", Better: metric.LowerIsBetter},
	"cpus_utilized":    {Unit: "CPUs", Better: metric.LowerIsBetter},
	"ipc":              {Unit: "insn/cycle", Better: metric.HigherIsBetter},
	"cycles":           {Unit: "count", Better: metric.Neutral},
	"instructions":     {Unit: "count", Better: metric.Neutral},
	"branches":         {Unit: "count", Better: metric.Neutral},
}

// PerfPrefix starts every perf counter metric key.
const PerfPrefix = "perf."

// PerfKey is the metric key of perf event ev: perf.<event>, or
// perf.<event>@<target> when target is not "" (SplitPerf's inverse).
func PerfKey(ev, target string) metric.Key {
	if target != "" {
		return metric.Key(PerfPrefix + ev + "@" + target)
	}
	return metric.Key(PerfPrefix + ev)
}

// SplitPerf splits a perf metric key into event and target:
// "perf.cycles@vhost" → ("cycles", "vhost", true); "perf.cycles" →
// ("cycles", "", true). ok is false for keys not starting with "perf.".
//
// A sample that carries counters of a single perf target uses
// perf.<event> and names the target in Labels["target"]; a sample with
// several targets qualifies each key as perf.<event>@<target>.
func SplitPerf(key metric.Key) (event, target string, ok bool) {
	rest, ok := strings.CutPrefix(string(key), PerfPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	if i := strings.LastIndexByte(rest, '@'); i > 0 {
		return rest[:i], rest[i+1:], true
	}
	return rest, "", true
}

// HybridEvent splits an event name as perf prints it on a hybrid CPU
// (Intel's cpu_core and cpu_atom PMUs, cpu_lowpower on some): perf opens
// a plain "cycles" once per core type and prints "cpu_core/cycles/" and
// "cpu_atom/cycles/". A modifier is kept on the event: "cpu_core/cycles/u"
// and "cpu_core/cycles:u/" are "cycles:u". Raw terms ("cpu/event=0x3c/")
// and other PMUs are not hybrid events.
func HybridEvent(ev string) (pmu, base string, ok bool) {
	pmu, rest, ok := strings.Cut(ev, "/")
	if !ok || !strings.HasPrefix(pmu, "cpu_") || len(pmu) == len("cpu_") {
		return "", "", false
	}
	base, mod, ok := strings.Cut(rest, "/")
	if !ok || base == "" || strings.ContainsAny(base, "=,/") || strings.Contains(mod, "/") {
		return "", "", false
	}
	if mod != "" {
		base += ":" + mod
	}
	return pmu, base, true
}

// Lookup returns the description of key: a registered metric, for
// cpu_per_pkt.<target> the CPU cost per packet, or for
// perf.<event>[@<target>] the rule for the event (unknown events are
// Neutral counts). ok is false for unknown keys.
func Lookup(key metric.Key) (metric.Metric, bool) {
	if m, ok := Metrics[key]; ok {
		return m, true
	}
	if m, ok := metric.Lookup(key); ok {
		return m, true
	}
	if reason, fn, ok := metric.DropKey(key); ok {
		return dropMetric(key, reason, fn), true
	}
	if target, ok := strings.CutPrefix(string(key), metric.CPUPerPktPrefix); ok && target != "" {
		return metric.Metric{Key: key, Unit: "ns", Better: metric.LowerIsBetter,
			Description: "CPU time of the " + target + " threads (perf stat task-clock over the window, total over its threads) / packets the generator transmitted (tx_pps x its run time), ns per packet"}, true
	}
	ev, _, ok := SplitPerf(key)
	if !ok {
		return metric.Metric{}, false
	}
	if _, base, ok := HybridEvent(ev); ok {
		ev = base // cpu_core/cycles/ is cycles, with cycles' direction
	}
	m, known := perfRules[ev]
	if !known {
		m = metric.Metric{Unit: "count", Better: metric.Neutral}
		if strings.HasSuffix(ev, "-misses") || strings.HasSuffix(ev, "-stalls") {
			m.Better = metric.LowerIsBetter
		}
	}
	m.Key = key
	m.Description = "perf stat " + ev
	return m, true
}

// Describe returns the description of key: Lookup's, or for a key Lookup
// does not know (a unit of another tool's benchfmt file, "ns/op", "MB/s")
// a guess from the unit: lower is better for Go's per-op costs, higher for
// rates, neutral otherwise.
func Describe(key metric.Key) metric.Metric {
	if m, ok := Lookup(key); ok {
		return m
	}
	m := metric.Metric{Key: key, Unit: string(key), Better: metric.Neutral}
	switch {
	case key == "ns/op" || key == "sec/op" || key == "B/op" || key == "allocs/op":
		m.Better = metric.LowerIsBetter
	case strings.HasSuffix(string(key), "/s"):
		m.Better, m.Rate = metric.HigherIsBetter, true
	}
	return m
}

// knownOrder returns a stable presentation order for metric keys: the
// main metrics first, then perf counters, then the rest by name.
func knownOrder(keys []metric.Key) []metric.Key {
	rank := map[metric.Key]int{metric.TxPPS: 0, metric.TxPPSThread: 1, metric.LostPPS: 2, metric.QdiscDropPPS: 3, metric.RxPPS: 4, metric.TapTxPPS: 5,
		metric.ThroughputBPS: 6, metric.Retransmits: 7, metric.PktgenErrors: 8, metric.TxPackets: 9, metric.HarnessCPUFrac: 10, metric.CellOverheadS: 11}
	out := slices.Clone(keys)
	sort.SliceStable(out, func(i, j int) bool {
		ri, oki := rank[out[i]]
		rj, okj := rank[out[j]]
		if !oki {
			ri = 100
			if strings.HasPrefix(string(out[i]), PerfPrefix) {
				ri = 50
			}
		}
		if !okj {
			rj = 100
			if strings.HasPrefix(string(out[j]), PerfPrefix) {
				rj = 50
			}
		}
		if ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}
