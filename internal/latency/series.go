package latency

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
)

// SeriesName is the file of a sample's qdisc and tap time series in its
// artifact directory.
const SeriesName = "qdisc.csv"

// Tick is the interval the runner reads the qdisc and tap counters at
// while the probe runs.
const Tick = 10 * time.Millisecond

// Point is one reading of the tap's root qdisc (netlink TCA_STATS2) and
// the tap's counters, at T (CLOCK_REALTIME ns, the probes' clock).
// Counters are cumulative, as the kernel keeps them; Qlen and Backlog
// are the queue at T.
type Point struct {
	T     int64
	Phase string
	// Qlen (packets) and Backlog (bytes) queued in the qdisc.
	Qlen, Backlog uint32
	// QDrops, QRequeues: the qdisc's counters.
	QDrops, QRequeues uint64
	// TapTxPackets, TapTxBytes, TapTxDropped: the tap's counters (tx =
	// towards the guest; tx_dropped = tun's full ring).
	TapTxPackets, TapTxBytes, TapTxDropped uint64
}

var seriesHeader = []string{"t_ns", "phase", "qlen", "backlog_bytes", "qdisc_drops", "qdisc_requeues", "tap_tx_packets", "tap_tx_bytes", "tap_tx_dropped"}

// WriteSeries writes points as qdisc.csv: one row per reading, raw (no
// interpolation, no binning): t_ns, phase, qlen, backlog_bytes,
// qdisc_drops, qdisc_requeues, tap_tx_packets, tap_tx_bytes,
// tap_tx_dropped (counters cumulative).
func WriteSeries(w io.Writer, pts []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(seriesHeader); err != nil {
		return err
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, p := range pts {
		row := []string{strconv.FormatInt(p.T, 10), p.Phase, u(uint64(p.Qlen)), u(uint64(p.Backlog)), u(p.QDrops), u(p.QRequeues),
			u(p.TapTxPackets), u(p.TapTxBytes), u(p.TapTxDropped)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadSeries reads a qdisc.csv; errors name the line.
func ReadSeries(r io.Reader) ([]Point, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(seriesHeader)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("qdisc.csv: header: %w", err)
	}
	if !slices.Equal(head, seriesHeader) {
		return nil, fmt.Errorf("qdisc.csv: header %v, want %v", head, seriesHeader)
	}
	var out []Point
	for line := 2; ; line++ {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("qdisc.csv: %w", err)
		}
		var p Point
		if p.T, err = strconv.ParseInt(row[0], 10, 64); err != nil {
			return nil, fmt.Errorf("qdisc.csv:%d: t_ns: %w", line, err)
		}
		p.Phase = row[1]
		var v [7]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(row[2+i], 10, 64); err != nil {
				return nil, fmt.Errorf("qdisc.csv:%d: %s: %w", line, seriesHeader[2+i], err)
			}
		}
		p.Qlen, p.Backlog = uint32(v[0]), uint32(v[1])
		p.QDrops, p.QRequeues, p.TapTxPackets, p.TapTxBytes, p.TapTxDropped = v[2], v[3], v[4], v[5], v[6]
		out = append(out, p)
	}
}

// Bin is one interval of a series: rates from the counters' change over
// it and the largest queue seen in it.
type Bin struct {
	Start int64 // ns
	// TxBps is the tap's transmitted bits/s, TapDropPPS its tx_dropped
	// per second, QDropPPS the qdisc's drops per second.
	TxBps, TapDropPPS, QDropPPS float64
	// BacklogMax (bytes) and QlenMax (packets): the largest readings.
	BacklogMax, QlenMax uint32
}

// Bins groups points into intervals of width from the first point: each
// bin's rates are its counters' change from the last reading before it
// to its own last reading, over the time between them (no
// interpolation). A bin without a reading is left out.
func Bins(pts []Point, width time.Duration) []Bin {
	if len(pts) < 2 {
		return nil
	}
	var out []Bin
	t0 := pts[0].T
	prev := pts[0]
	for i := 1; i < len(pts); {
		k := (pts[i].T - t0) / width.Nanoseconds()
		b := Bin{Start: t0 + k*width.Nanoseconds()}
		last := pts[i]
		for ; i < len(pts) && (pts[i].T-t0)/width.Nanoseconds() == k; i++ {
			last = pts[i]
			b.BacklogMax = max(b.BacklogMax, pts[i].Backlog)
			b.QlenMax = max(b.QlenMax, pts[i].Qlen)
		}
		if dt := float64(last.T-prev.T) / 1e9; dt > 0 {
			b.TxBps = float64(last.TapTxBytes-prev.TapTxBytes) * 8 / dt
			b.TapDropPPS = float64(last.TapTxDropped-prev.TapTxDropped) / dt
			b.QDropPPS = float64(last.QDrops-prev.QDrops) / dt
		}
		out = append(out, b)
		prev = last
	}
	return out
}

// SeriesMetrics are the metrics of the load phase's readings:
// qdisc_backlog_max and qdisc_backlog_p50 (bytes).
func SeriesMetrics(pts []Point) map[metric.Key]float64 {
	var bl []float64
	for _, p := range pts {
		if p.Phase == PhaseLoad {
			bl = append(bl, float64(p.Backlog))
		}
	}
	if len(bl) == 0 {
		return nil
	}
	slices.Sort(bl)
	p50 := Quantile(bl, 0.5)
	return map[metric.Key]float64{metric.QdiscBacklogMax: bl[len(bl)-1], metric.QdiscBacklogP50: p50}
}
