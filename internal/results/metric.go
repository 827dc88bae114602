package results

import (
	"slices"
	"sort"
	"strings"
)

// Direction says which way a metric improves.
type Direction int

// Directions.
const (
	// Neutral metrics are informational (instructions executed, for one):
	// reports show their change but call it neither better nor worse.
	Neutral Direction = iota
	HigherIsBetter
	LowerIsBetter
)

func (d Direction) String() string {
	switch d {
	case HigherIsBetter:
		return "higher"
	case LowerIsBetter:
		return "lower"
	}
	return "neutral"
}

// Metric describes one metric key.
type Metric struct {
	Key    string
	Unit   string // base unit: "pps", "bit/s", "count", "s", "fraction", "CPUs", "events", "%"
	Better Direction
	// Rate metrics are aggregated across samples with the harmonic mean as
	// well as the arithmetic mean.
	Rate        bool
	Description string
}

// Metrics is the registry of known metric keys. perf.<event>
// keys are described by Lookup's rule instead.
var Metrics = map[string]Metric{
	"tx_pps":               {"tx_pps", "pps", HigherIsBetter, true, "transmitted packets/s, total over generator threads (pktgen Result)"},
	"tx_pps_thread":        {"tx_pps_thread", "pps", HigherIsBetter, true, "transmitted packets/s of one generator thread"},
	"lost_pps_thread":      {"lost_pps_thread", "pps", LowerIsBetter, true, "pktgen errors/s of one thread: packets it offered that the tap (start_xmit) or the qdisc (queue_xmit) refused"},
	"tap_tx_pps":           {"tap_tx_pps", "pps", HigherIsBetter, true, "tap tx_packets delta / window (cross-check of tx_pps)"},
	"lost_pps":             {"lost_pps", "pps", LowerIsBetter, true, "tap tx_dropped delta / window"},
	"qdisc_drop_pps":       {"qdisc_drop_pps", "pps", LowerIsBetter, true, "drops counted by the tap's root qdisc / window (packets that never reached the tap; not in lost_pps)"},
	"rx_pps":               {"rx_pps", "pps", HigherIsBetter, true, "guest eth0 rx_packets delta / window"},
	"tx_packets":           {"tx_packets", "count", Neutral, false, "packets transmitted in the window"},
	"pktgen_errors":        {"pktgen_errors", "count", LowerIsBetter, false, "pktgen errors (retries while the tap ring was full)"},
	"throughput_bps":       {"throughput_bps", "bit/s", HigherIsBetter, true, "iperf3 receiver bits/s, sum over streams"},
	"retransmits":          {"retransmits", "count", LowerIsBetter, false, "iperf3 sender TCP retransmits"},
	"harness_cpu_frac":     {"harness_cpu_frac", "fraction", LowerIsBetter, false, "the harness's own CPU use in the window, fraction of a core"},
	"qdisc_drops":          {"qdisc_drops", "count", LowerIsBetter, false, "drops counted by the tap's root qdisc in the window"},
	"generator_busy_frac":  {"generator_busy_frac", "fraction", Neutral, false, "share of the window the generator was running (below 0.9: it may not saturate)"},
	"iperf3_host_cpu_frac": {"iperf3_host_cpu_frac", "fraction", LowerIsBetter, false, "iperf3 client (sender) CPU time over the test, as a fraction of one CPU (iperf3 host_total)"},
	"cell_overhead_s":      {"cell_overhead_s", "s", LowerIsBetter, false, "setup + teardown time outside the window"},
}

// Diagnostics are the keys of the harness's self-measurements
// (harness_cpu_frac, cell_overhead_s) and of its diagnostics and
// cross-checks: numbers that tell whether the harness measured well, not
// how the kernel under test performs. Reports gather them in one "harness
// and diagnostics" table (a Detail table), not in per-metric tables, and
// compare does not gate them by default. Machine-readable formats keep them
// like any metric.
var Diagnostics = []string{"harness_cpu_frac", "cell_overhead_s", "generator_busy_frac", "iperf3_host_cpu_frac", "qdisc_drops", "tx_packets", "tap_tx_pps"}

// IsDiagnostic reports whether key is one of Diagnostics.
func IsDiagnostic(key string) bool { return slices.Contains(Diagnostics, key) }

// perfRules gives the direction and unit of known perf events; other
// events are Neutral counts.
var perfRules = map[string]Metric{
	"context-switches": {Unit: "count", Better: LowerIsBetter},
	"cs":               {Unit: "count", Better: LowerIsBetter},
	"cpu-migrations":   {Unit: "count", Better: LowerIsBetter},
	"page-faults":      {Unit: "count", Better: LowerIsBetter},
	"branch-misses":    {Unit: "count", Better: LowerIsBetter},
	"cache-misses":     {Unit: "count", Better: LowerIsBetter},
	"task-clock":       {Unit: "s", Better: LowerIsBetter}, // perfparse base unit
	"cpu-clock":        {Unit: "s", Better: LowerIsBetter},
	"cpus_utilized":    {Unit: "CPUs", Better: LowerIsBetter},
	"ipc":              {Unit: "insn/cycle", Better: HigherIsBetter},
	"cycles":           {Unit: "count", Better: Neutral},
	"instructions":     {Unit: "count", Better: Neutral},
	"branches":         {Unit: "count", Better: Neutral},
}

// PerfPrefix starts every perf counter metric key.
const PerfPrefix = "perf."

// SplitPerf splits a perf metric key into event and target:
// "perf.cycles@vhost" → ("cycles", "vhost", true); "perf.cycles" →
// ("cycles", "", true). ok is false for keys not starting with "perf.".
//
// A sample that carries counters of a single perf target uses
// perf.<event> and names the target in Labels["target"]; a sample with
// several targets qualifies each key as perf.<event>@<target>.
func SplitPerf(key string) (event, target string, ok bool) {
	rest, ok := strings.CutPrefix(key, PerfPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	if i := strings.LastIndexByte(rest, '@'); i > 0 {
		return rest[:i], rest[i+1:], true
	}
	return rest, "", true
}

// Lookup returns the description of key: a registered metric, or for
// perf.<event>[@<target>] the rule for the event (unknown events are
// Neutral counts). ok is false for unknown keys.
func Lookup(key string) (Metric, bool) {
	if m, ok := Metrics[key]; ok {
		return m, true
	}
	ev, _, ok := SplitPerf(key)
	if !ok {
		return Metric{}, false
	}
	m, known := perfRules[ev]
	if !known {
		m = Metric{Unit: "count", Better: Neutral}
		if strings.HasSuffix(ev, "-misses") || strings.HasSuffix(ev, "-stalls") {
			m.Better = LowerIsBetter
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
func Describe(key string) Metric {
	if m, ok := Lookup(key); ok {
		return m
	}
	m := Metric{Key: key, Unit: key, Better: Neutral}
	switch {
	case key == "ns/op" || key == "sec/op" || key == "B/op" || key == "allocs/op":
		m.Better = LowerIsBetter
	case strings.HasSuffix(key, "/s"):
		m.Better, m.Rate = HigherIsBetter, true
	}
	return m
}

// knownOrder returns a stable presentation order for metric keys: the
// registry's main metrics first, then perf counters, then the rest by name.
func knownOrder(keys []string) []string {
	rank := map[string]int{"tx_pps": 0, "tx_pps_thread": 1, "lost_pps": 2, "qdisc_drop_pps": 3, "rx_pps": 4, "tap_tx_pps": 5,
		"throughput_bps": 6, "retransmits": 7, "pktgen_errors": 8, "tx_packets": 9, "harness_cpu_frac": 10, "cell_overhead_s": 11}
	out := append([]string(nil), keys...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, oki := rank[out[i]]
		rj, okj := rank[out[j]]
		if !oki {
			ri = 100
			if strings.HasPrefix(out[i], PerfPrefix) {
				ri = 50
			}
		}
		if !okj {
			rj = 100
			if strings.HasPrefix(out[j], PerfPrefix) {
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
