package results

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
)

// SchemaVersion is the version of the results.jsonl record written by this
// package. Readers accept records with schema 1..SchemaVersion.
const SchemaVersion = 1

// Sample is one repetition of one cell on one kernel: one line of
// results.jsonl. Metric keys are those of the Metrics registry (see Lookup).
type Sample struct {
	Schema  int                    `json:"schema"`
	Run     string                 `json:"run"`
	Cell    string                 `json:"cell"`
	Rep     int                    `json:"rep"`
	Kernel  string                 `json:"kernel"`
	Axes    map[string]string      `json:"axes"`
	Start   time.Time              `json:"start"`
	WindowS float64                `json:"window_s"`
	Metrics map[metric.Key]float64 `json:"metrics"`
	// Threads holds per-generator-thread numbers; Metrics["tx_pps"] is the
	// total over threads.
	Threads []ThreadSample `json:"threads,omitempty"`
	// Labels are free-form facts about the sample: "target" names the perf
	// target of unqualified perf.<event> metrics; "cpu_model", "count",
	// "duration", "threads", "pin", "qdisc", "pkt_size" feed table headers.
	Labels    map[string]string `json:"labels,omitempty"`
	Warnings  []string          `json:"warnings,omitempty"`
	Artifacts []string          `json:"artifacts,omitempty"`
	// Symbols is the top of `perf report` for this sample (see Symbol).
	Symbols []Symbol `json:"symbols,omitempty"`
	// PerfRunning holds, by perf metric key, the share of the time perf
	// stat's counter was running when below 1: the kernel multiplexed
	// more events than the PMU has counters, and perf scaled the count up
	// (its "(66,85%)" column). Absent = counted all the time.
	PerfRunning map[metric.Key]float64 `json:"perf_running,omitempty"`
	Emulated    bool                   `json:"emulated"`
	// Nested is true when the datapath measured ran inside a VM: a lab
	// kernel's sample (the run inside the lab VM; its guest is a VM in a
	// VM), false for the host's own kernel (running). Also set on load for
	// samples that carry a "lab" label.
	Nested bool `json:"nested,omitempty"`
	Warmup bool `json:"warmup,omitempty"`
	// Unsupported says why this kernel or device cannot run the cell's
	// configuration (AF_XDP zero-copy refused, say): the sample has no
	// metrics and tables show the cell as "n/a" with the reason as a
	// numbered note.
	Unsupported string `json:"unsupported,omitempty"`
	// VoidRerun, when set, says this sample is its cell's second attempt:
	// the first measured nothing valid (fault.ErrVoid), for this short
	// cause ("connection reset by peer": the guest's iperf3 server broke
	// the test off), and the runner ran the cell once more. The first
	// attempt's whole error is in Warnings ("ran again after a void
	// measurement: ..."). Reports count these per kernel: a kernel whose
	// measurements are broken off more often hides a finding in its
	// re-runs. Set on load to VoidRerunUnknown for samples from before
	// it was recorded that carry the warning.
	VoidRerun string `json:"void_rerun,omitempty"`
	// FaultRerun, when set, says this sample is its cell's second attempt
	// on a fresh guest: the first attempt's guest kernel faulted under
	// TCG (most likely the emulator's fault), with this fault line,
	// clipped. The kept console is among Artifacts (FaultConsole) and the
	// whole note in Warnings (FaultRerunNote). Reports count these per
	// kernel beside the void re-runs. Set on load to RerunCauseUnknown for
	// samples from before it was recorded that carry the warning.
	FaultRerun string `json:"fault_rerun,omitempty"`
	// Error, when set, records a sample that failed instead of measuring:
	// the phase and the error (for a kernel that reported a lockup, stall
	// or crash: the console's last lines). It has no metrics, statistics
	// leave it out (Set.Failed holds it), and --resume runs it again.
	Error string `json:"error,omitempty"`
	// Dir is the run directory the sample was loaded from (Artifacts are
	// relative to it); "" for a sample from a benchfmt file. Not stored.
	Dir string `json:"-"`
	// KernelFromName is set on load when the sample had no kernel label
	// of its own and Kernel is its run directory's or file's name (a
	// benchfmt file without "kernel:"). Not stored.
	KernelFromName bool `json:"-"`
}

// VoidRerunNote leads the warning of a sample whose first attempt was
// void (Sample.VoidRerun); the first attempt's error follows it.
const VoidRerunNote = "ran again after a void measurement: "

// VoidRerunUnknown is the VoidRerun of a sample from before the cause was
// recorded (it carries only the VoidRerunNote warning).
const VoidRerunUnknown = RerunCauseUnknown

// FaultRerunNote leads the warning of a sample whose first attempt's
// guest kernel faulted under TCG (Sample.FaultRerun).
const FaultRerunNote = "ran once more on a fresh guest: the previous guest's kernel faulted under TCG"

// RerunCauseUnknown is the VoidRerun or FaultRerun of a sample from
// before the cause was recorded (it carries only the note's warning).
const RerunCauseUnknown = "cause not recorded"

// ThreadSample is one generator thread's share of a sample.
type ThreadSample struct {
	I      int     `json:"i"`
	TxPPS  float64 `json:"tx_pps"`
	Errors uint64  `json:"errors"`
	// LostPPS is the thread's errors per second of its run: packets it
	// offered that the device (start_xmit: the tap's full ring) or the
	// qdisc (queue_xmit) refused. nil = not measured.
	LostPPS *float64 `json:"lost_pps,omitempty"`
}

// Symbol is one row of `perf report`: the percentage of samples (0..100)
// attributed to Symbol in DSO for the perf target Target ("vhost", "qemu",
// ...).
type Symbol struct {
	Target   string  `json:"target,omitempty"`
	Symbol   string  `json:"symbol"`
	DSO      string  `json:"dso,omitempty"`
	Overhead float64 `json:"overhead"`
	// Children is the share of samples in Symbol and its callees (perf
	// report --children, from a record with call graphs), in percent;
	// nil without call graphs.
	Children *float64 `json:"children,omitempty"`
	// Addresses > 0: the row sums that many addresses perf could not
	// name in DSO (a module without symbols, JIT code), and Symbol is
	// the module's row name ("[pktgen] unresolved", see Row).
	Addresses int `json:"addresses,omitempty"`
}

// Row names the row sym belongs to side by side: its symbol, or for an
// address perf could not resolve ("0x0000000000003305" in "[pktgen]")
// its module's row, "[pktgen] unresolved" (grouped true), so a module's
// many addresses read as one row. JIT code of any tid is one "[JIT]".
func (sym Symbol) Row() (name string, grouped bool) {
	if sym.Addresses > 0 {
		return sym.Symbol, true
	}
	if !UnresolvedAddr(sym.Symbol) {
		return sym.Symbol, false
	}
	dso := sym.DSO
	switch {
	case strings.HasPrefix(dso, "[JIT]"):
		dso = "[JIT]" // "[JIT] tid 12619": the tid changes from run to run
	case dso == "":
		dso = "[unknown]"
	}
	return dso + " unresolved", true
}

// UnresolvedAddr reports whether a symbol is a bare address as perf
// prints one it cannot name: "0x3305", "0x0000000000003305" or
// "ffffffffc0a03305".
func UnresolvedAddr(s string) bool {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok && len(s) != 16 {
		return false
	}
	if h == "" {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Key identifies a sample within a run: a repetition of a cell on a kernel.
type Key struct {
	Cell   string
	Kernel string
	Rep    int
}

func (s *Sample) key() Key { return Key{s.Cell, s.Kernel, s.Rep} }

// Value returns metric key of s. tx_pps_thread and lost_pps_thread
// fall back to the mean over Threads when the sample has no such metric
// (lost_pps_thread only when the threads carry lost_pps).
func (s *Sample) Value(key metric.Key) (float64, bool) {
	if v, ok := s.Metrics[key]; ok {
		return v, true
	}
	if len(s.Threads) == 0 {
		return 0, false
	}
	var sum float64
	switch key {
	case metric.TxPPSThread:
		for _, t := range s.Threads {
			sum += t.TxPPS
		}
	case metric.LostPPSThread:
		for _, t := range s.Threads {
			if t.LostPPS == nil {
				return 0, false
			}
			sum += *t.LostPPS
		}
	default:
		return 0, false
	}
	return sum / float64(len(s.Threads)), true
}

// dropNonFinite removes NaN and ±Inf metrics (JSON cannot hold them) and
// says so in the sample's warnings.
func dropNonFinite(s Sample) Sample {
	var bad []metric.Key
	for k, v := range s.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return s
	}
	slices.Sort(bad)
	m := make(map[metric.Key]float64, len(s.Metrics))
	for k, v := range s.Metrics {
		if !slices.Contains(bad, k) {
			m[k] = v
		}
	}
	s.Metrics = m
	s.Warnings = append(slices.Clone(s.Warnings), "dropped non-finite metrics: "+metric.Join(bad, ", "))
	return s
}
