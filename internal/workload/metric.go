package workload

import (
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/units"
)

// The registry is the metric catalogue's source: every registered
// workload's metrics.
func init() { metric.AddSource(Metrics) }

// Metricer is a Workload that produces metrics: the keys of its
// Result.Metrics (and of what Threads derive).
type Metricer interface {
	Metrics() []metric.Metric
}

// ThroughputBPS is the data rate a receiver counted: iperf3's receiver
// and the vsock workload's server.
var ThroughputBPS = metric.Metric{Key: metric.ThroughputBPS, Unit: "bit/s", Better: metric.HigherIsBetter, Rate: true,
	Description: "bits/s the receiver counted: iperf3's receiver sum over streams; vsock: the server's bytes x 8 over its own interval"}

// The metrics of generators that send packets into the tap and count them
// (pktgen, trafgen, AF_XDP Tx, ...).
var (
	TxPPS = metric.Metric{Key: metric.TxPPS, Unit: "pps", Better: metric.HigherIsBetter, Rate: true,
		Description: "transmitted packets/s, total: all generator threads' packets over the generator's own run time (tx_run_s; pktgen: its longest thread's), the interval lost_pps uses too"}
	TxPPSThread = metric.Metric{Key: metric.TxPPSThread, Unit: "pps", Better: metric.HigherIsBetter, Rate: true,
		Description: "transmitted packets/s of one generator thread, over its own run time"}
	LostPPSThread = metric.Metric{Key: metric.LostPPSThread, Unit: "pps", Better: metric.LowerIsBetter, Rate: true,
		Description: "pktgen errors/s of one thread over its own run time: packets it offered that the tap (start_xmit) or the qdisc (queue_xmit) refused"}
	// TxRunS is the interval tx_pps and lost_pps share when the generator
	// has a clock of its own: a table whose runs have it says so.
	TxRunS = metric.Metric{Key: metric.TxRunS, Unit: "s", Better: metric.Neutral,
		Description: "the generator's own run time (pktgen: its longest thread's Result usec): the interval of tx_pps and lost_pps", Diagnostic: true,
		Header: "gen run", HeaderNote: "(the generator's own run time, s: the interval of tx_pps and lost_pps)"}
)

// Metrics lists the metrics of every registered workload, once per key,
// in registration order.
func Metrics() []metric.Metric {
	var out []metric.Metric
	seen := map[metric.Key]bool{}
	for _, w := range All() {
		m, ok := w.(Metricer)
		if !ok {
			continue
		}
		for _, x := range m.Metrics() {
			if !seen[x.Key] {
				seen[x.Key] = true
				out = append(out, x)
			}
		}
	}
	return out
}

// LookupMetric returns the definition of key from the registered
// workloads.
func LookupMetric(key metric.Key) (metric.Metric, bool) {
	for _, m := range Metrics() {
		if m.Key == key {
			return m, true
		}
	}
	return metric.Metric{}, false
}

// Tabler is a Workload whose samples read as a table of their own (one
// row group per backend, one column per kernel).
type Tabler interface {
	Table() Table
}

// Table says how a workload's samples read as a table. Workloads that
// measure the same thing share one (PacketTable).
type Table struct {
	// Headline is the metric that selects the samples (those that have
	// it) and whose spread the table's first footnote reports.
	Headline metric.Key
	// ThreadsKey is the key (label, or axis "....KEY") that counts the
	// workload's threads or streams, and ThreadsNoun their name:
	// "threads"/"threads", "parallel"/"streams".
	ThreadsKey, ThreadsNoun string
	// Rows lists the rows of a group of cells: threads is the group's
	// thread count, seen what the group's runs hold.
	Rows func(threads int, seen Seen) []TableRow
	// Note extends the first footnote (the runs per cell and the
	// headline's spread), e.g. how totals and per-thread numbers are
	// made; "" = nothing.
	Note func(threads int) string
	// Notes are further footnotes that define the rows' numbers.
	Notes func(threads int, seen Seen) []string
	// Context lists keys of the workload's section whose values the
	// table's header states ("64 KiB payload"), in order.
	Context []ContextKey
	// Versus, when set, lays the samples out as two variants side by
	// side instead of one row group per backend: see Versus.
	Versus *Versus
	// OffNIC says the workload's traffic does not cross the guest's NIC
	// (vsock): its tables name the backend as off the measured path, so
	// that "TAP" does not read as what the numbers measure.
	OffNIC bool
}

// Seen says what the runs of a group of cells hold, for a Table's Rows
// and Notes.
type Seen struct {
	// Positive reports whether some run has a positive value of key: a
	// row of events that need not happen (qdisc drops, a second
	// generator's CPU) shows where some run had them.
	Positive func(key metric.Key) bool
	// Measured reports whether some run has key at all, whatever its
	// value: a row that only some runs can measure (TCP's retransmits,
	// which UDP has none of) shows where they did, a 0 included, since 0
	// retransmits is a measurement.
	Measured func(key metric.Key) bool
	// Shown reports whether the table shows a row of key, for Notes: a
	// footnote defines the rows the table has, not the ones Rows could
	// have given (a "Lost per thread" legend under a table whose runs
	// had no per-thread errors, or a per-patch table of Lost total
	// alone). nil = every row Rows gives.
	Shown func(key metric.Key) bool
	// Generators are the workloads (NameOf) whose samples the table
	// holds, in order of appearance; nil when not known.
	Generators []string
}

// Resender is a workload whose generator sends a packet again when the
// tap refused it, so that the tap's tx_dropped counts refused attempts,
// not packets lost. Resends says how, for a table's note.
type Resender interface{ Resends() string }

// resends is how the workloads of seen resend refused packets when every
// one of them does ("" when one does not, or none is known), and the
// names of those that do.
func (s Seen) resends() (how string, who []string) {
	all := len(s.Generators) > 0
	for _, g := range s.Generators {
		w, _ := Lookup(g)
		if r, ok := w.(Resender); ok {
			how, who = r.Resends(), append(who, g)
		} else {
			all = false
		}
	}
	if !all {
		how = ""
	}
	return how, who
}

// lostName names the row of the tap's drops: Refused where the table's
// generators resend what the tap refused (how, from resends: they lose
// none of it), else Lost.
func lostName(how string) string {
	if how != "" {
		return "Refused"
	}
	return "Lost"
}

// Shows reports whether the table shows a row of key (Shown; without
// it, yes).
func (s Seen) Shows(key metric.Key) bool { return s.Shown == nil || s.Shown(key) }

// Versus is a table of one kernel whose row groups are the values of one
// of the workload's axes (packet sizes) and whose value columns are the
// values of another (bind modes), plus a column with the change from the
// first to the last column, from the medians: the AF_XDP series' "UDP
// size x copy / zero-copy / speedup". Each group of cells that differ
// only in those two axes gets one such table per kernel; Table.Rows are
// the metric rows of each row group.
type Versus struct {
	// RowKey and ColKey are keys of the workload's section ("pkt_size",
	// "mode"), axes of the cells. Row groups are in numeric order when
	// every value is a number, else in order of appearance.
	RowKey, ColKey string
	// RowHeader names the row groups ("UDP size"); RowLabel formats a
	// row value as its group's label ("UDP %s" gives "UDP 64"; "" = the
	// value).
	RowHeader, RowLabel string
	// RowSize says the row values are sizes in bytes, written as every
	// table writes a size (units.Bytes: "64 B", "64 KiB") before
	// RowLabel.
	RowSize bool
	// Cols are the columns: ColKey's values in order, with their headers.
	Cols []VersusCol
	// Change is the header of the change column ("speedup"): the last
	// column's median over the first's, minus one, in percent.
	Change string
}

// ContextKey is a key of a workload's section that its table's header
// states: Format writes its value ("65536" -> "64 KiB payload").
type ContextKey struct {
	Key    string
	Format func(v string) string
}

// VersusCol is one column of a Versus table.
type VersusCol struct {
	Value, Header string
}

// TableRow is one row of a Table: a metric and its label.
type TableRow struct {
	Key   metric.Key
	Label string
	// Scale writes the row's values (units.MBps writes bit/s as MB/s);
	// the zero Scale means units.For the metric's unit: Kpps below 1 Mpps
	// and Mpps from there for pps, Mbit/s and Gbit/s for bit/s.
	Scale units.Scale
}

// Tables lists the tables of the registered workloads, once per
// headline (Versus tables apart from the others), in registration order,
// with the name of the first workload that has each.
func Tables() (tables []Table, names []string) {
	seen := map[string]bool{}
	for _, w := range All() {
		t, ok := w.(Tabler)
		if !ok {
			continue
		}
		tab := t.Table()
		key := string(tab.Headline)
		if tab.Versus != nil {
			key += " versus"
		}
		if !seen[key] {
			seen[key] = true
			tables = append(tables, tab)
			names = append(names, w.Name())
		}
	}
	return tables, names
}

// NameOf returns the registered workload a generator label or axis value
// names ("pktgen", or "pktgen-t4" as a benchmark name part), or "".
func NameOf(generator string) string {
	out := ""
	for _, w := range All() {
		if strings.HasPrefix(generator, w.Name()) && len(w.Name()) > len(out) {
			out = w.Name()
		}
	}
	return out
}

// PacketTable is the table of generators that send packets into the tap:
// Transmitted (the generator's own count) and Lost (the tap's drops over
// the same window), per thread when there are several, and the root
// qdisc's drops when some run had them.
var PacketTable = Table{
	Headline: metric.TxPPS, ThreadsKey: "threads", ThreadsNoun: "threads",
	Rows: func(threads int, seen Seen) []TableRow {
		how, _ := seen.resends()
		lost := lostName(how)
		rows := []TableRow{{Key: metric.TxPPS, Label: "Transmitted"}, {Key: metric.LostPPS, Label: lost}}
		if threads > 1 {
			rows = []TableRow{{Key: metric.TxPPS, Label: "Tx total"}, {Key: metric.TxPPSThread, Label: "Tx per thread"},
				{Key: metric.LostPPS, Label: lost + " total"}, {Key: metric.LostPPSThread, Label: "Lost per thread"}}
		}
		// The CPU spent per transmitted packet by the generator's threads
		// and the vhost-net worker (perf stat task-clock): what Lost 0
		// can hide, a generator retrying on a stopped queue.
		for _, t := range cpuTargets() {
			if k := metric.CPUPerPkt(t); seen.Positive(k) {
				rows = append(rows, TableRow{Key: k, Label: "CPU/pkt " + t})
			}
		}
		// Packets sent through a qdisc (pktgen queue_xmit) that the qdisc
		// dropped never reach the tap, so Lost (tap tx_dropped) does not
		// count them: a row of their own where some run had them.
		if seen.Positive(metric.QdiscDropPPS) {
			label := "Qdisc drops"
			if threads > 1 {
				label += " total"
			}
			rows = append(rows, TableRow{Key: metric.QdiscDropPPS, Label: label})
		}
		return rows
	},
	Note: func(threads int) string { return "" },
	Notes: func(threads int, seen Seen) []string {
		var notes []string
		if n := packetNote(threads, seen); n != "" {
			notes = append(notes, n)
		}
		var whose []string
		for _, t := range cpuTargets() {
			if k := metric.CPUPerPkt(t); seen.Positive(k) && seen.Shows(k) {
				whose = append(whose, t)
			}
		}
		if len(whose) > 0 {
			notes = append(notes, "CPU/pkt = the CPU time of the "+strings.Join(whose, " and the ")+" threads (perf stat task-clock over the window, total over each one's threads) per packet transmitted: work per packet, spinning on a stopped queue included")
		}
		if seen.Positive(metric.QdiscDropPPS) && seen.Shows(metric.QdiscDropPPS) {
			notes = append(notes, "Qdisc drops = dropped by the tap's root qdisc over the measurement window: packets that never reached the tap, not in Lost")
		}
		return notes
	},
}

// packetNote is PacketTable's first footnote: what its Transmitted and
// Lost rows count and over which interval, for the rows the table shows
// (seen.Shows), so that it never defines a per-thread Lost the table
// lacks; "" = none of them shown. Lost total (the tap's tx_dropped) and
// Lost per thread (pktgen's errors, a qdisc's drops included) are
// different counters, and the footnote says whose.
func packetNote(threads int, seen Seen) string {
	// Transmitted and Lost share one interval: the generator's own
	// run time where it has one (tx_run_s), else the window.
	drops, interval := "the tap's tx_dropped", "per second of the measurement window"
	if seen.Positive(metric.TxRunS) {
		drops = "the tap's tx_dropped, read just before pktgen's start and just after its end"
		interval = "per second of pktgen's own run time"
		if threads > 1 {
			interval += " (its longest thread's)"
		}
	}
	// A generator that resends what the tap refused: its tap drops are
	// attempts (Refused), said after the interval.
	how, who := seen.resends()
	name, counts := lostName(how), "packets dropped"
	if how != "" {
		counts = "sends the tap refused"
	}
	tx, lost := "Transmitted = packets sent", name+" = "+counts+" ("+drops+")"
	if threads > 1 {
		tx, lost = "Tx total = all threads' packets", name+" total = "+counts+" ("+drops+")"
	}
	resent := ""
	switch {
	case how != "" && seen.Shows(metric.LostPPS):
		tx += " (each once)"
		resent = how + ": Refused counts attempts, not packets lost"
	case len(who) > 0 && seen.Shows(metric.LostPPS):
		resent = strings.Join(who, " and ") + " send a packet the tap refused again: on their rows Lost counts attempts, not packets lost"
	}
	var totals, perThread []string
	if seen.Shows(metric.TxPPS) {
		totals = append(totals, tx)
	}
	if seen.Shows(metric.LostPPS) {
		totals = append(totals, lost)
	}
	switch len(totals) {
	case 1:
		totals[0] += ", " + interval
	case 2:
		totals = []string{totals[0] + ", " + totals[1] + ", both " + interval}
	}
	if threads > 1 {
		txThread, lostThread := seen.Shows(metric.TxPPSThread), seen.Shows(metric.LostPPSThread)
		const refused = "the packets it offered that the tap or the qdisc refused, pktgen's count"
		switch {
		case txThread && lostThread:
			perThread = append(perThread, "per thread = the mean over threads of each thread's packets (Tx) or errors (Lost: "+refused+") per second of its own run time")
		case txThread:
			perThread = append(perThread, "Tx per thread = the mean over threads of each thread's packets per second of its own run time")
		case lostThread:
			perThread = append(perThread, "Lost per thread = the mean over threads of each thread's errors ("+refused+") per second of its own run time")
		}
	}
	if resent != "" {
		perThread = append(perThread, resent)
	}
	return strings.Join(append(totals, perThread...), "; ")
}

// cpuTargets are the perf targets whose CPU per packet a packet table
// shows: every registered workload's threads (kpktgend, ...), then the
// vhost-net worker.
func cpuTargets() []string {
	var out []string
	for _, w := range All() {
		if t := Target(w); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return append(out, "vhost")
}
