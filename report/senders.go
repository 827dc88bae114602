package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// KindSenders is the many-senders table: the cells of a workload that
// differ only in their thread count, minSenders counts or more (1, 2, 4
// and 8 pktgen threads: several producers on one ring), as one table per
// backend: a row per thread count and kernel, the workload's totals and
// per-thread numbers as columns.
const KindSenders = "senders"

// minSenders is the fewest thread counts that make a senders table; two
// (the thread's 1 and 4) stay a thread table each.
const minSenders = 3

// threadsAxis returns s's thread-count axis ("generator.pktgen.threads")
// and its value.
func threadsAxis(s *results.Sample) (key string, n int, ok bool) {
	for k, v := range s.Axes {
		if strings.HasSuffix(k, ".threads") {
			n, err := strconv.Atoi(v)
			return k, n, err == nil
		}
	}
	return "", 0, false
}

// sendersKey is the senders group of s ("" = none): its axes without the
// thread count.
func sendersKey(s *results.Sample) string {
	k, _, ok := threadsAxis(s)
	if !ok {
		return ""
	}
	return groupKey(s, k)
}

// inSenders reports whether s is in a senders table, not a thread table.
func (b *builder) inSenders(s *results.Sample) bool {
	if v, _ := b.idx.versusOf(s); v != nil {
		return false
	}
	k := sendersKey(s)
	return k != "" && b.idx.senders[k] >= minSenders
}

// sendersKind builds the tables of KindSenders: cells that differ only in
// their number of sending threads, one row per count.
type sendersKind struct{ *builder }

// sendersTables draws them, in order of the groups' first cells.
func (b sendersKind) sendersTables() {
	groups := map[string][]string{}
	var order []string
	for _, cell := range b.idx.cells {
		s := b.firstSample(cell)
		if !b.inSenders(s) {
			continue
		}
		k := sendersKey(s)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], cell)
	}
	for _, k := range order {
		if t := b.sendersTable(groups[k]); t != nil {
			b.r.Tables = append(b.r.Tables, t)
		}
	}
}

// sendersTable is one group's table, its cells sorted by thread count.
func (b sendersKind) sendersTable(cells []string) *Table {
	count := func(cell string) int { _, n, _ := threadsAxis(b.firstSample(cell)); return n }
	slices.SortStableFunc(cells, func(x, y string) int { return cmp.Compare(count(x), count(y)) })
	first := b.measured(cells[0])
	kind, ok := tableOf(first)
	if !ok {
		return nil
	}
	seen := b.seen(cells)
	cols := kind.Rows(2, seen) // the per-thread rows are columns here
	t := &Table{Kind: KindSenders, Title: "senders " + sendersKey(first),
		Context:     backendName(backendOf(first)) + ": " + b.lab.context(withoutThreads(first), true),
		LabelHeader: []string{kind.ThreadsNoun, "kernel"}}
	for _, c := range cols {
		t.Header = append(t.Header, c.Label)
	}
	var na naNotes
	shown := map[metric.Key]bool{} // the columns some cell has: the notes define those
	for _, cell := range cells {
		for _, col := range b.r.Columns {
			row := Row{Labels: []string{units.Plural(count(cell), strings.TrimSuffix(kind.ThreadsNoun, "s")), b.lab.colHeader(col)}}
			for _, c := range cols {
				cl, why := b.sendersCell(cell, col, c)
				if why != "" {
					na.add(len(t.Rows), len(row.Cells), why)
				}
				if cl.Text != "-" {
					shown[c.Key] = true
				}
				row.Cells = append(row.Cells, cl)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	na.apply(t) // the n/a reasons first: cells refer to them by number
	t.Notes = append(t.Notes, fmt.Sprintf("%s per cell; a row per %s count and kernel", b.lab.medianOf(cells), strings.TrimSuffix(kind.ThreadsNoun, "s")))
	if kind.Notes != nil {
		seen.Shown = func(k metric.Key) bool { return shown[k] }
		t.Notes = append(t.Notes, kind.Notes(2, seen)...)
	}
	t.Notes = append(t.Notes, b.lab.columnNotes()...)
	return t
}

// sendersCell is metric c of cell in column col; why is the reason of an
// n/a cell (the kernel refused the configuration), else "".
func (b sendersKind) sendersCell(cell, col string, c workload.TableRow) (_ Cell, why string) {
	st := b.stats(cell, col, c.Key)
	if st.N == 0 {
		if why := b.unsupported(cell, col); why != "" {
			return Cell{Text: "n/a"}, why
		}
		return Cell{Text: "-"}, ""
	}
	scale := c.Scale
	if scale.IsZero() {
		scale = units.For(b.idx.metric(c.Key).Unit)
	}
	return Cell{Text: scale.Format(st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)}, ""
}

// tableOf is the workload table whose headline s has.
func tableOf(s *results.Sample) (workload.Table, bool) {
	tables, _ := workload.Tables()
	for _, t := range tables {
		if _, ok := s.Metrics[t.Headline]; ok && t.Versus == nil {
			return t, true
		}
	}
	return workload.Table{}, false
}

// withoutThreads is s without what says its thread count, for a context
// that describes every row of a senders table.
func withoutThreads(s *results.Sample) *results.Sample {
	c := *s
	c.Axes, c.Labels, c.Threads = maps.Clone(s.Axes), maps.Clone(s.Labels), nil
	if k, _, ok := threadsAxis(s); ok {
		delete(c.Axes, k)
	}
	for _, k := range threadsKeys() {
		delete(c.Labels, k)
	}
	return &c
}
