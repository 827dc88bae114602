package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
)

// KindLatency is the latency-under-load table: one row block per qdisc,
// a sub-block per load, as a reviewer pastes it into a thread.
const KindLatency = "latency"

// latencyRows are the latency table's rows; the first of transmitted
// that a cell has is its Transmitted row, and its lost key the Lost row's
// (xdp_redirect's Lost is redirected minus transmitted, as its own table
// has it; the tap's tx_dropped, lost_pps, reads below it).
var (
	transmitted = []struct {
		key   metric.Key
		label string
		lost  metric.Key
	}{{metric.TxPPS, "Transmitted", metric.LostPPS}, {metric.ThroughputBPS, "Throughput (received)", metric.LostPPS},
		{metric.XDPTxPPS, "Transmitted (XDP)", metric.XDPLostPPS}, {metric.RRBulkBPS, "Bulk throughput (beside tcp_rr)", metric.LostPPS}}
	latencyRows = []struct {
		key   metric.Key
		label string
		scale units.Scale
	}{
		{metric.LostPPS, "Lost", units.PacketRate},
		{metric.RTTIdleP50S, "RTT idle p50", units.Latency},
		{metric.RTTP50S, "RTT p50", units.Latency},
		{metric.RTTP99S, "RTT p99", units.Latency},
		{metric.RTTP999S, "RTT p99.9", units.Latency},
		{metric.Iperf3SRTTS, "iperf3 sRTT (its flow)", units.Latency},
		{metric.Iperf3JitterS, iperf3JitterLabel, units.Latency},
		{metric.Iperf3LostFrac, iperf3LostLabel, units.Percent},
		{metric.ProbeLossFrac, "probe loss", units.Percent},
		{metric.QdiscWaitP99S, "qdisc wait p99", units.Latency},
		{metric.QdiscBacklogMax, "qdisc backlog max (bytes)", units.Scale{}},
	}
)

// The labels of the UDP load's own jitter and loss rows, which a
// footnote defines where the table has them.
const (
	iperf3JitterLabel = "iperf3 jitter (its flow)"
	iperf3LostLabel   = "iperf3 datagrams lost"
)

// latencyKind builds the table of KindLatency: the cells that ran the
// latency probe in one table, and loads the probes of their runs for the
// run-by-run comparison.
type latencyKind struct{ *builder }

// latencyTable draws the cells that ran the latency probe in one table:
// a row block per qdisc and load, qdiscs in order of appearance, each
// load named with its path (does it pass the qdisc?), one column per
// kernel.
func (b latencyKind) latencyTable() {
	var cells []string
	for _, cell := range b.idx.cells {
		if slices.ContainsFunc(b.idx.byCell[cell], func(s *results.Sample) bool { _, ok := s.Metrics[metric.RTTP50S]; return ok }) {
			cells = append(cells, cell)
		}
	}
	if len(cells) == 0 {
		return
	}
	var qdiscs []string
	for _, c := range cells {
		if q := b.measured(c).Labels["qdisc"]; !slices.Contains(qdiscs, q) {
			qdiscs = append(qdiscs, q)
		}
	}
	slices.SortStableFunc(cells, func(x, y string) int {
		return slices.Index(qdiscs, b.measured(x).Labels["qdisc"]) - slices.Index(qdiscs, b.measured(y).Labels["qdisc"])
	})
	t := &Table{Kind: KindLatency, Title: "latency under load", LabelHeader: []string{"qdisc: load (path)", "metric"}}
	for _, c := range b.r.Columns {
		t.Header = append(t.Header, b.lab.colHeader(c))
	}
	two := len(b.r.Columns) == 2
	if two {
		t.Header = append(t.Header, "change")
	}
	for _, cell := range cells {
		t.Rows = append(t.Rows, b.latencyCellRows(cell, two)...)
	}
	udpNote := hasRow(t, iperf3JitterLabel) || hasRow(t, iperf3LostLabel)
	first := b.measured(cells[0])
	if n := b.rowNote(t, cells); n != "" {
		t.Notes = append(t.Notes, n)
	}
	t.Notes = append(t.Notes,
		fmt.Sprintf("%s per cell; [lo-hi] = the 95%% interval of a percentile (order statistics) when a cell has one run", b.lab.medianOf(cells)),
		fmt.Sprintf("probe: one UDP request every %s from the host's run namespace through the tap's root qdisc to the guest agent's reflector; RTT = send call to the reply's kernel receive stamp; idle = before the load started", orDash(first.Labels["probe_interval"])),
		"qdisc wait = the request's SO_TIMESTAMPING SOFTWARE stamp (tun's skb_tx_timestamp) minus its SCHED stamp (entry to __dev_queue_xmit); under noqueue nothing queues, so it is the floor: the device layer's own path and any preemption between the stamps",
		"load path: whether the load's packets pass the tap's qdisc (pktgen start_xmit and trafgen's PACKET_QDISC_BYPASS do not; the probe always does)")
	if udpNote {
		t.Notes = append(t.Notes, "iperf3 jitter and datagrams lost = the UDP load's own receiver (the guest's iperf3 server, with reverse the host's client): RFC 3550 interarrival jitter as iperf3 reports it at the end of its test, the mean over streams and clients, and the share of the datagrams sent over iperf3's test time that never arrived, the total over all streams and clients; as the iperf3 table's Jitter and Datagrams lost")
	}
	if two {
		t.Notes = append(t.Notes, fmt.Sprintf("change = %s vs %s (medians): %s; RTT and qdisc wait percentiles: called when a t test on the logs of each run's percentile (from its probes) gives p < 1%% (the run is the unit: one run's probes are not independent draws), so a column needs 2 runs at least; on these rows \"? \" = the test did not call it", b.r.Columns[1], b.r.Columns[0], changeLegend))
	}
	t.Notes = append(t.Notes, b.lab.columnNotes()...)
	b.r.Tables = append(b.r.Tables, t)
}

// hasRow reports whether a row of t has label as its last label.
func hasRow(t *Table, label string) bool {
	return slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Labels[len(r.Labels)-1] == label })
}

// rowDef is a row of the latency table: its metric, label and scale.
type rowDef struct {
	key   metric.Key
	label string
	scale units.Scale
}

// rowDefs are the rows the latency table may have for a cell whose
// measured sample is s: its first transmitted metric, and the latency
// rows, Lost from the transmitted metric's own lost key.
func (b latencyKind) rowDefs(s *results.Sample) []rowDef {
	var defs []rowDef
	lost := metric.LostPPS
	for _, tr := range transmitted {
		if _, ok := s.Metrics[tr.key]; ok {
			defs = append(defs, rowDef{tr.key, tr.label, units.For(b.idx.metric(tr.key).Unit)})
			lost = tr.lost
			break
		}
	}
	for _, r := range latencyRows {
		if r.key == metric.LostPPS {
			r.key = lost
		}
		defs = append(defs, rowDef{r.key, r.label, r.scale})
	}
	return defs
}

// notedElsewhere are the latency rows the table's fixed notes define
// (the probe's RTTs, qdisc wait) and the UDP load's own, which its note
// defines.
var notedElsewhere = []metric.Key{metric.RTTIdleP50S, metric.RTTP50S, metric.RTTP99S, metric.RTTP999S,
	metric.QdiscWaitP99S, metric.Iperf3JitterS, metric.Iperf3LostFrac}

// rowNote defines the rows of t the fixed notes do not, each from its
// metric's description: "Lost = packets/s the tap dropped ...; probe
// loss = ...". A label two metrics share (Lost: the tap's, or
// xdp_redirect's) names its metric.
func (b latencyKind) rowNote(t *Table, cells []string) string {
	keysOf := map[string][]metric.Key{}
	var labels []string
	for _, cell := range cells {
		for _, d := range b.rowDefs(b.measured(cell)) {
			if slices.Contains(notedElsewhere, d.key) || !hasRow(t, d.label) || slices.Contains(keysOf[d.label], d.key) {
				continue
			}
			if keysOf[d.label] == nil {
				labels = append(labels, d.label)
			}
			keysOf[d.label] = append(keysOf[d.label], d.key)
		}
	}
	var parts []string
	for _, l := range labels {
		for _, k := range keysOf[l] {
			desc := b.idx.metric(k).Description
			if desc == "" {
				continue
			}
			name := l
			if len(keysOf[l]) > 1 {
				name += " (" + string(k) + ")"
			}
			parts = append(parts, name+" = "+desc)
		}
	}
	return strings.Join(parts, "; ")
}

// latencyCellRows are one cell's rows of the latency table.
func (b latencyKind) latencyCellRows(cell string, two bool) []Row {
	s := b.measured(cell)
	block := orDash(s.Labels["qdisc"]) + ": " + loadName(cell, s.Labels["qdisc"])
	if p := s.Labels["load_path"]; p != "" {
		block += " (" + p + ")"
	}
	defs := b.rowDefs(s)
	var rows []Row
	for _, d := range defs {
		row := Row{Labels: []string{block, d.label}}
		have := false
		for _, col := range b.r.Columns {
			st := b.stats(cell, col, d.key)
			if st.N == 0 {
				row.Cells = append(row.Cells, Cell{Text: "-"})
				continue
			}
			have = true
			text := d.scale.Format(st.Median)
			if runs := b.idx.byCol[cellCol{cell, col}]; st.N == 1 && len(runs) == 1 {
				text += intervalText(runs[0].Labels[string(d.key)+"_ci95"], d.scale)
			}
			row.Cells = append(row.Cells, Cell{Text: text, Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
		}
		if !have {
			continue
		}
		if two {
			dl := b.delta(cell, b.r.Columns[1], d.key)
			c, ok := Cell{}, false
			if dl.Base.N > 0 && dl.New.N > 0 && dl.Base.Median != 0 {
				c, ok = b.runsChange(cell, d.key, dl.Pct)
			}
			if !ok {
				// The same rule as every change column: the verdict.
				c = Cell{Text: dl.DeltaString(), Delta: &dl}
				if dl.Different() {
					c.Value = ptr(dl.Pct)
				}
			}
			row.Cells = append(row.Cells, c)
		}
		rows = append(rows, row)
	}
	return rows
}

// runQuantiles are the percentile rows compared run by run: the
// quantile and the probe's value it is of.
var runQuantiles = map[metric.Key]struct {
	q  float64
	of func(latency.Record) (float64, bool)
}{
	metric.RTTP50S: {0.5, latency.Record.RTT}, metric.RTTP99S: {0.99, latency.Record.RTT},
	metric.RTTP999S: {0.999, latency.Record.RTT}, metric.QdiscWaitP99S: {0.99, latency.Record.QdiscWait},
}

// runsChange compares a percentile of the two columns' runs of cell from
// their raw probes (probes.csv): latency.CompareRuns, the run as the
// unit (a run's probes are not independent draws). It shows the change
// of the two medians the row shows (pct), as every change column does,
// marked "?" unless the test calls it. ok is false when a column has no
// raw probes (a benchfmt file, a run directory without artifacts).
func (b latencyKind) runsChange(cell string, key metric.Key, pct float64) (Cell, bool) {
	rq, isQ := runQuantiles[key]
	if !isQ || math.IsNaN(pct) {
		return Cell{}, false
	}
	var sides [2][][]float64
	for i, col := range b.r.Columns[:2] {
		for _, run := range b.r.LatencyRuns {
			if run.Cell == cell && run.Column == col {
				sides[i] = append(sides[i], loadValues(run.Probes, rq.of))
			}
		}
		if len(sides[i]) == 0 {
			return Cell{}, false
		}
	}
	if c := latency.CompareRuns(sides[0], sides[1], rq.q); !c.Different {
		return Cell{Text: "? " + units.Pct(pct)}, true
	}
	return Cell{Text: units.Pct(pct), Value: ptr(pct)}, true
}

// loadValues are the probes' values under load (of: RTT, qdisc wait).
func loadValues(recs []latency.Record, of func(latency.Record) (float64, bool)) []float64 {
	var out []float64
	for _, r := range recs {
		if v, ok := of(r); ok && r.Phase == latency.PhaseLoad {
			out = append(out, v)
		}
	}
	return out
}

// loadName is the cell's name without its qdisc part: the load and the
// rest of its axes ("tap/iperf3-p1").
func loadName(cell, qdisc string) string {
	parts := strings.Split(cell, "/")
	if qdisc != "" {
		parts = slices.DeleteFunc(parts, func(p string) bool { return p == qdisc })
	}
	return strings.Join(parts, "/")
}

// intervalText writes a "lo..hi" label (seconds, "?" = no bound) as "
// [lo-hi]" in scale's unit; "" when there is none.
func intervalText(label string, scale units.Scale) string {
	lo, hi, ok := strings.Cut(label, "..")
	if !ok {
		return ""
	}
	f := func(s string) (string, float64) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "?", 0
		}
		return "", v
	}
	loText, loV := f(lo)
	hiText, hiV := f(hi)
	var vals []float64
	for _, v := range []float64{loV, hiV} {
		if v != 0 {
			vals = append(vals, v)
		}
	}
	u := scale.Common(vals)
	if loText == "" {
		loText = u.Number(loV)
	}
	if hiText == "" {
		hiText = u.Number(hiV)
	}
	return " [" + loText + "-" + hiText + "]"
}
