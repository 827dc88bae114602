package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

func verdictWord(d *Delta, better metric.Direction) string {
	switch d.Verdict.Verdict {
	case verdict.Same:
		return "same"
	case verdict.Unknown:
		return "unknown"
	}
	switch {
	case better == metric.HigherIsBetter && d.New.Median > d.Base.Median, better == metric.LowerIsBetter && d.New.Median < d.Base.Median:
		return "better"
	case better == metric.Neutral:
		return "changed"
	}
	return "worse"
}

func (b *builder) summaries() {
	b.r.Summaries, b.r.Comparisons = []Summary{}, []Comparison{}
	for _, cell := range b.idx.cells {
		for _, key := range b.cellMetricKeys(cell) {
			m := b.idx.metric(key)
			for _, col := range b.r.Columns {
				if !b.idx.has(cell, col, key) {
					continue
				}
				b.r.Summaries = append(b.r.Summaries, Summary{Cell: cell, Axes: b.summaryAxes(cell, col), Column: col, Metric: string(key),
					Unit: m.Unit, Better: m.Better.String(), Description: m.Description, Emulated: b.r.IsEmulated(col), Stats: b.stats(cell, col, key)})
				if col == b.r.Base || !b.idx.has(cell, b.r.Base, key) {
					continue
				}
				d := b.delta(cell, col, key)
				b.r.Comparisons = append(b.r.Comparisons, Comparison{Cell: cell, Metric: string(key), Unit: m.Unit, Better: m.Better.String(),
					Base: b.r.Base, New: col, Verdict: verdictWord(&d, m.Better), Delta: d})
			}
		}
	}
}

// sampleWarnings adds the samples' own warnings to the report, once per
// cell, column and message shape (digits ignored), with how many runs
// carried it. A message that is word for word the same in several cells
// (the TCG warning, say) is shown once, naming the cells, or "all runs".
func (b *builder) sampleWarnings() {
	type key struct{ cell, col, shape string }
	type entry struct {
		key
		first string
		texts map[string]bool
		count int // runs (samples) that carried it
		last  int // the last sample counted
	}
	var entries []*entry
	byKey := map[key]*entry{}
	runs := map[[2]string]int{}
	for i := range b.set.Samples {
		s := &b.set.Samples[i]
		runs[[2]string{s.Cell, s.Kernel}]++
		for _, w := range s.Warnings {
			k := key{s.Cell, s.Kernel, strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' {
					return '#'
				}
				return r
			}, w)}
			e := byKey[k]
			if e == nil {
				e = &entry{key: k, first: w, texts: map[string]bool{}, last: -1}
				byKey[k] = e
				entries = append(entries, e)
			}
			e.texts[w] = true
			// One run can carry several of a shape ("pktgen thread 2 sent
			// no packets", "... thread 3 ..."): it counts once.
			if e.last != i {
				e.count, e.last = e.count+1, i
			}
		}
	}
	totalRuns := len(b.set.Samples)
	// Merge entries with one identical text across cells.
	type merged struct {
		text  string
		where [][2]string // cell, column
		count int         // runs that carried it
		of    int         // runs of those cells
	}
	var out []*merged
	same := map[string]*merged{}
	for _, e := range entries {
		where := [2]string{e.cell, e.col}
		if len(e.texts) == 1 {
			if m := same[e.first]; m != nil {
				m.where = append(m.where, where)
				m.count += e.count
				m.of += runs[where]
				continue
			}
		}
		m := &merged{text: numberRanges(e.texts), where: [][2]string{where}, count: e.count, of: runs[where]}
		if len(e.texts) == 1 {
			same[e.first] = m
		}
		out = append(out, m)
	}
	const limit = 20
	for i, m := range out {
		if i == limit {
			b.r.Warnings = append(b.r.Warnings, fmt.Sprintf("%d more run warnings not shown; see results.jsonl", len(out)-limit))
			break
		}
		var where string
		switch {
		case len(m.where) > 1 && m.count == totalRuns:
			where = fmt.Sprintf("all %d runs", totalRuns)
		case len(b.r.Columns) == 1:
			where = fmt.Sprintf("%s on %s (%d of %d runs)", listCells(m.where, false), m.where[0][1], m.count, m.of)
		default:
			where = fmt.Sprintf("%s (%d of %d runs)", listCells(m.where, true), m.count, m.of)
		}
		b.r.Warnings = append(b.r.Warnings, where+": "+m.text)
	}
}

var numberRe = lazyre.New(`[0-9]+(?:\.[0-9]+)?`)

// numberRanges is the one text of warnings that differ only in their
// numbers (sampleWarnings' shape): each number that differs is written
// as its values, "generator trafgen was 46/76% busy", "pktgen thread
// 0/3 sent no packets", or as their range past three, "1-7". The first
// run's text alone, "46% busy (2 of 2 runs)", said that every run was
// 46% busy.
func numberRanges(texts map[string]bool) string {
	all := slices.Sorted(maps.Keys(texts))
	if len(all) == 1 {
		return all[0]
	}
	re := numberRe()
	nums := make([][]string, len(all))
	for i, t := range all {
		nums[i] = re.FindAllString(t, -1)
	}
	i := 0
	return re.ReplaceAllStringFunc(all[0], func(first string) string {
		var vals []string
		for _, n := range nums {
			if i < len(n) && !slices.Contains(vals, n[i]) {
				vals = append(vals, n[i])
			}
		}
		i++
		num := func(v string) float64 { f, _ := strconv.ParseFloat(v, 64); return f }
		slices.SortFunc(vals, func(a, b string) int { return cmp.Compare(num(a), num(b)) })
		switch {
		case len(vals) <= 1:
			return first
		case len(vals) <= 3:
			return strings.Join(vals, "/")
		}
		return vals[0] + "-" + vals[len(vals)-1]
	})
}

// listCells names up to three cells ("cell on column" when withCol).
func listCells(where [][2]string, withCol bool) string {
	var parts []string
	for i, w := range where {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(where)-3))
			break
		}
		if withCol {
			parts = append(parts, w[0]+" on "+w[1])
		} else {
			parts = append(parts, w[0])
		}
	}
	return strings.Join(parts, ", ")
}
