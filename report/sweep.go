package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
)

func sizeOf(s *results.Sample) (int, bool) {
	v, ok := s.Axes["pkt_size"]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func (b *builder) inSweep(s *results.Sample) bool {
	if _, ok := sizeOf(s); !ok {
		return false
	}
	return b.idx.sweepSizes[groupKey(s, "pkt_size")] >= 2
}

// sweepKind builds the tables of KindSweep: cells that differ only in
// packet size, one row per size.
type sweepKind struct{ *builder }

func (b sweepKind) sweepTables() {
	groups, order := b.lab.groupCells(b.inSweep, "pkt_size")
	for _, gk := range order {
		cells := groups[gk]
		slices.SortStableFunc(cells, func(x, y string) int {
			a, _ := sizeOf(b.firstSample(x))
			c, _ := sizeOf(b.firstSample(y))
			return cmp.Compare(a, c)
		})
		for _, key := range []metric.Key{metric.TxPPS, metric.ThroughputBPS} {
			if !b.idx.has(cells[0], b.r.Base, key) {
				continue
			}
			m := b.idx.metric(key)
			first := b.firstSample(cells[0])
			// One unit for the whole table, the one every median reads 1 or
			// more in (units.Scale.Common).
			var medians []float64
			for _, cell := range cells {
				for _, col := range b.r.Columns {
					if st := b.stats(cell, col, key); st.N > 0 {
						medians = append(medians, st.Median)
					}
				}
			}
			u := units.For(m.Unit).Common(medians)
			suf := u.Name
			t := &Table{Kind: KindSweep, Title: "size sweep, " + backendName(backendOf(first)) + ", " + b.lab.context(first, false),
				LabelHeader: []string{"size (B)"}, Metric: string(key), Unit: suf}
			for _, c := range b.r.Columns {
				t.Header = append(t.Header, b.lab.colHeader(c)+" "+suf)
			}
			for _, h := range b.lab.changeHeaders("speedup") {
				t.Header = append(t.Header, h, "p")
			}
			for _, cell := range cells {
				s := b.firstSample(cell)
				row := Row{Labels: []string{s.Axes["pkt_size"]}}
				for _, col := range b.r.Columns {
					st := b.stats(cell, col, key)
					if st.N == 0 {
						row.Cells = append(row.Cells, Cell{Text: "-"})
						continue
					}
					row.Cells = append(row.Cells, Cell{Text: u.Number(st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
				}
				for _, col := range b.r.Columns[1:] {
					d := b.delta(cell, col, key)
					c := Cell{Text: d.DeltaString(), Delta: &d}
					if d.Different() {
						c.Value = ptr(d.Pct)
					}
					row.Cells = append(row.Cells, c, Cell{Text: fmt.Sprintf("%.3f", d.P), Value: ptr(d.P)})
				}
				t.Rows = append(t.Rows, row)
			}
			// What the number counts, over which interval, total or
			// per thread: the metric's own definition, as a table
			// quoted alone needs it.
			t.Notes = append(t.Notes, fmt.Sprintf("%s in %s, %s; %s = %s", key, suf, b.lab.medianOf(cells), key, m.Description))
			t.Notes = append(t.Notes, fmt.Sprintf("speedup = change of the median vs %s: %s; p = the p-value of that verdict's test",
				b.r.Base, changeLegend))
			t.Notes = append(t.Notes, b.lab.columnNotes()...)
			b.r.Tables = append(b.r.Tables, t)
		}
	}
}
