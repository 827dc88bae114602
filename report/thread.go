package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
)

type threadMetric struct {
	key, label string
}

func (b *builder) threadTables() {
	// qdisc says whether the table shows the root qdisc's drops: packets
	// pktgen sent through a qdisc (queue_xmit) that the qdisc dropped never
	// reach the tap, so Lost (tap tx_dropped) does not count them.
	kinds := []struct {
		has   string
		rows  func(threads int, qdisc bool) []threadMetric
		title string
	}{
		{"tx_pps", func(threads int, qdisc bool) []threadMetric {
			rows := []threadMetric{{"tx_pps", "Transmitted"}, {"lost_pps", "Lost"}}
			if threads > 1 {
				rows = []threadMetric{{"tx_pps", "Tx total"}, {"tx_pps_thread", "Tx per thread"}, {"lost_pps", "Lost total"}, {"lost_pps_thread", "Lost per thread"}}
			}
			if qdisc {
				label := "Qdisc drops"
				if threads > 1 {
					label += " total"
				}
				rows = append(rows, threadMetric{"qdisc_drop_pps", label})
			}
			return rows
		}, "pktgen"},
		{"throughput_bps", func(int, bool) []threadMetric {
			return []threadMetric{{"throughput_bps", "Throughput"}, {"retransmits", "Retransmits"}}
		}, "iperf3"},
	}
	for _, kind := range kinds {
		groups, order := b.groupCells(func(s *results.Sample) bool {
			_, ok := s.Metrics[kind.has]
			return ok && !b.inSweep(s)
		}, b.rowAxis())
		for _, gk := range order {
			cells := groups[gk]
			first := b.firstSample(cells[0])
			threads, _ := strconv.Atoi(first.Labels["threads"])
			if threads == 0 && len(first.Threads) > 1 {
				threads = len(first.Threads)
			}
			t := &Table{Kind: KindThread, Title: kind.title + " " + strings.TrimPrefix(gk, "cell="), Context: b.context(first, true),
				LabelHeader: []string{"backend", "metric"}}
			for _, c := range b.r.Columns {
				t.Header = append(t.Header, b.colHeader(c))
			}
			two := len(b.r.Columns) == 2
			if two {
				t.Header = append(t.Header, "change")
			}
			// Qdisc drops get a row only in tables where some run had
			// them.
			qdisc := kind.has == "tx_pps" && b.anyPositive(cells, "qdisc_drop_pps")
			rows := kind.rows(threads, qdisc)
			maxCV := 0.0
			for _, cell := range cells {
				s := b.firstSample(cell)
				for _, tm := range rows {
					m := results.Describe(tm.key)
					row := Row{Labels: []string{b.rowLabel(s), tm.label}}
					have := false
					for _, col := range b.r.Columns {
						st := b.stats(cell, col, tm.key)
						if st.N == 0 {
							row.Cells = append(row.Cells, Cell{Text: "-"})
							continue
						}
						have = true
						if tm.key == kind.has {
							maxCV = max(maxCV, st.CV)
						}
						row.Cells = append(row.Cells, Cell{Text: rateText(m.Unit, st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
					}
					if !have {
						continue
					}
					if two {
						d := b.delta(cell, b.r.Columns[1], tm.key)
						c := Cell{Text: d.DeltaString(), Delta: &d}
						if d.Significant {
							c.Value = ptr(d.Pct)
						}
						if d.TooFew {
							c.Text = "~ (n<4)"
						}
						row.Cells = append(row.Cells, c)
					}
					t.Rows = append(t.Rows, row)
				}
			}
			n := b.repsRange(cells)
			note := fmt.Sprintf("median of %s runs per cell; %s varies by at most %.1f%% (CV)", n, rows[0].label, maxCV*100)
			if threads > 1 {
				note += "; total = sum over threads, per thread = mean of the threads"
			}
			t.Notes = append(t.Notes, note)
			if qdisc {
				t.Notes = append(t.Notes, "Lost = dropped at the tap (tx_dropped); Qdisc drops = dropped by the tap's root qdisc, never reached the tap")
			}
			if two {
				t.Notes = append(t.Notes, fmt.Sprintf("change = %s vs %s (medians); ~ = not significant (Mann-Whitney U, alpha %v)",
					b.r.Columns[1], b.r.Columns[0], b.opt.Alpha))
			}
			if len(b.r.Emulated) > 0 {
				t.Notes = append(t.Notes, emulatedNote)
			}
			b.r.Tables = append(b.r.Tables, t)
		}
	}
}
