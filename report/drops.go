package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Labels a run writes on a sample with drop reasons (runner's
// LabelDropProbe, LabelDropCheck).
const (
	labelDropProbe = "drop_probe"
	labelDropCheck = "drop_check"
	dropsAddUp     = "adds up"
)

// withDropZeros returns set with, in every sample that counted drops
// (the drop_probe label), a 0 for each drop key another sample of its
// cell has: a reason that did not occur is a drop rate of 0, not a
// missing number (a patched kernel's FULL_RING row reads 0 pps).
func withDropZeros(set *results.Set) *results.Set {
	keys := map[string]map[metric.Key]bool{} // cell -> drop keys
	for _, s := range set.Samples {
		for k := range s.Metrics {
			if strings.HasPrefix(string(k), metric.DropPrefix) {
				if keys[s.Cell] == nil {
					keys[s.Cell] = map[metric.Key]bool{}
				}
				keys[s.Cell][k] = true
			}
		}
	}
	if len(keys) == 0 {
		return set
	}
	out := *set
	out.Samples = slices.Clone(set.Samples)
	for i := range out.Samples {
		s := &out.Samples[i]
		if s.Labels[labelDropProbe] == "" || len(keys[s.Cell]) == 0 {
			continue
		}
		m := maps.Clone(s.Metrics)
		for k := range keys[s.Cell] {
			if _, ok := m[k]; !ok {
				m[k] = 0
			}
		}
		s.Metrics = m
	}
	return &out
}

// lostByReason are the rows under Lost of a group of cells: the drops
// counted in the tap's transmit function by reason (they make up Lost),
// largest first, then the root qdisc's drops when some run had any
// (drops that never reached the tap, so not in Lost).
func (b *builder) lostByReason(cells []string) []workload.TableRow {
	peak := map[metric.Key]float64{}
	for _, cell := range cells {
		for _, s := range b.idx.byCell[cell] {
			for k, v := range s.Metrics {
				reason, fn, ok := metric.DropKey(k)
				if ok && (fn == metric.TapXmitFunc || reason == metric.DropQdisc && fn == "") {
					peak[k] = max(peak[k], v)
				}
			}
		}
	}
	qdisc := metric.Drop(metric.DropQdisc)
	var rows []workload.TableRow
	for _, k := range slices.SortedFunc(maps.Keys(peak), func(x, y metric.Key) int {
		return cmp.Or(-cmp.Compare(peak[x], peak[y]), cmp.Compare(x, y))
	}) {
		if k == qdisc {
			continue
		}
		reason, _, _ := metric.DropKey(k)
		rows = append(rows, workload.TableRow{Key: k, Label: "- " + reason})
	}
	if peak[qdisc] > 0 {
		rows = append(rows, workload.TableRow{Key: qdisc, Label: "- qdisc drops"})
	}
	return rows
}

// withDropRows puts the drop rows after the Lost row (lost_pps) of rows.
func withDropRows(rows, drops []workload.TableRow) []workload.TableRow {
	if len(drops) == 0 {
		return rows
	}
	i := slices.IndexFunc(rows, func(r workload.TableRow) bool { return r.Key == metric.LostPPS })
	if i < 0 {
		return rows
	}
	return slices.Concat(rows[:i+1], drops, rows[i+1:])
}

// dropNotes are the footnotes of the Lost by reason rows: what they
// count, and whether they add up to Lost in every run (else in how many
// not, and why).
func (b *builder) dropNotes(cells []string, drops []workload.TableRow) []string {
	if len(drops) == 0 {
		return nil
	}
	probes := map[string]bool{}
	var runs, off int
	why := map[string]int{}
	for _, cell := range cells {
		for _, s := range b.idx.byCell[cell] {
			if p := s.Labels[labelDropProbe]; p != "" {
				probes[p] = true
			}
			if c, ok := s.Labels[labelDropCheck]; ok {
				runs++
				if c != dropsAddUp {
					off++
					why[c]++
				}
			}
		}
	}
	where := strings.Join(slices.Sorted(maps.Keys(probes)), ", ")
	note := fmt.Sprintf("- REASON = the kernel's own count of the packets %s dropped with that drop reason (an eBPF program at %s, counted in the kernel), read at the same moments as Lost",
		metric.TapXmitFunc, where)
	if slices.ContainsFunc(drops, func(r workload.TableRow) bool { return r.Key == metric.Drop(metric.DropQdisc) }) {
		note += "; qdisc drops = the root qdisc's drops then (never reached the tap: not in Lost)"
	}
	notes := []string{note}
	switch {
	case runs == 0:
	case off == 0:
		notes = append(notes, fmt.Sprintf("the reasons add up to Lost in every run (%d)", runs))
	default:
		for _, c := range slices.Sorted(maps.Keys(why)) {
			notes = append(notes, fmt.Sprintf("the reasons do not add up to Lost in %d of %d runs: %s", why[c], runs, c))
		}
	}
	return notes
}
