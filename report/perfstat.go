package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
)

// perfTarget returns the event and target of a perf metric key in s.
func perfTarget(s *results.Sample, key metric.Key) (event, target string, ok bool) {
	ev, tg, ok := results.SplitPerf(key)
	if ok && tg == "" {
		tg = s.Labels["target"]
	}
	return ev, tg, ok
}

// perfRow is a row of a perf stat table: a perf metric key, its target
// and event.
type perfRow struct {
	key           metric.Key
	target, event string
}

// perfStatNote says what a perf stat table's counts cover: perf stat
// runs until the end of the measurement window on a target's threads
// (-t) or process (-p) and counts them together; it starts with the
// window, or for a generator's threads once they exist (runner
// startPerf).
const perfStatNote = "each count = perf stat over the measurement window (a generator's threads from when they start), all of the target's threads added up"

// perfStatKind builds the tables of KindPerfStat: perf stat's counters of
// each cell, by target and event.
type perfStatKind struct{ *builder }

func (b perfStatKind) perfStatTables() {
	for _, cell := range b.idx.cells {
		var rows []perfRow
		seen := map[metric.Key]bool{}
		for _, o := range b.idx.byCell[cell] {
			for k := range o.Metrics {
				if ev, tg, ok := perfTarget(o, k); ok && !seen[k] {
					seen[k] = true
					rows = append(rows, perfRow{k, tg, ev})
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		slices.SortFunc(rows, func(x, y perfRow) int {
			return cmp.Or(cmp.Compare(x.target, y.target), cmp.Compare(perfEventRank(x.event), perfEventRank(y.event)), cmp.Compare(x.event, y.event))
		})
		multiplexed := false
		t := &Table{Kind: KindPerfStat, Title: "perf stat " + cell, Context: "perf stat, " + cell, LabelHeader: []string{"target", "event"}}
		for _, c := range b.r.Columns {
			t.Header = append(t.Header, b.lab.colHeader(c))
		}
		t.Header = append(t.Header, b.lab.changeHeaders("change")...)
		for _, rw := range rows {
			m := b.idx.metric(rw.key)
			label := rw.event
			if m.Unit != "count" && m.Unit != "" {
				label += " (" + m.Unit + ")"
			}
			r := Row{Labels: []string{cmp.Or(rw.target, "-"), label}}
			for _, col := range b.r.Columns {
				st := b.stats(cell, col, rw.key)
				if st.N == 0 {
					r.Cells = append(r.Cells, Cell{Text: "-"})
					continue
				}
				text := units.Grouped(st.Median)
				if f, ok := b.perfRunning(cell, col, rw.key); ok {
					text += fmt.Sprintf(" (%.2f%%)", 100*f)
					multiplexed = true
				}
				r.Cells = append(r.Cells, Cell{Text: text, Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
			}
			for _, col := range b.r.Columns[1:] {
				d := b.delta(cell, col, rw.key)
				c := Cell{Text: d.DeltaString(), Delta: &d}
				if d.Different() {
					c.Value = ptr(d.Pct)
				}
				r.Cells = append(r.Cells, c)
			}
			t.Rows = append(t.Rows, r)
		}
		note := "medians of " + b.lab.repsRange([]string{cell}) + " runs"
		if r := b.lab.repsRange([]string{cell}); r == "1" {
			note = "1 run"
		}
		if len(b.r.Columns) > 1 {
			note += fmt.Sprintf("; change vs %s: %s", b.r.Base, changeLegend)
		}
		t.Notes = append(t.Notes, note, perfStatNote)
		if multiplexed {
			t.Notes = append(t.Notes, "(NN%) = the share of the time the counter ran, the least over the runs, where below 100%: the events were multiplexed on the PMU and perf scaled the count up")
		}
		var unsupported []string
		for _, o := range b.idx.byCell[cell] {
			for _, ev := range strings.Split(o.Labels["perf_unsupported"], ",") {
				if ev != "" && !slices.Contains(unsupported, ev) {
					unsupported = append(unsupported, ev)
				}
			}
		}
		if len(unsupported) > 0 {
			t.Notes = append(t.Notes, "not supported on this machine (no hardware PMU?): "+strings.Join(unsupported, ", "))
		}
		t.Notes = append(t.Notes, b.lab.nestingNotes()...)
		var hybrid []string
		for _, o := range b.idx.byCell[cell] {
			if h := o.Labels["perf_hybrid"]; h != "" && !slices.Contains(hybrid, h) {
				hybrid = append(hybrid, h)
			}
		}
		if len(hybrid) > 0 {
			t.Notes = append(t.Notes, "hybrid CPU: each counter is the sum over the core types' PMUs ("+strings.Join(hybrid, ", ")+"), each PMU's count unscaled (from the time the threads ran on that core type)")
		}
		if ipc := b.ipcNote(cell); ipc != "" {
			t.Notes = append(t.Notes, ipc)
		}
		if slices.ContainsFunc(rows, func(r perfRow) bool { return r.target == "qemu" }) {
			if n := b.qemuTargetNote(cell); n != "" {
				t.Notes = append(t.Notes, n)
			}
		}
		b.r.Tables = append(b.r.Tables, t)
	}
}

// perfRunning returns the least share of the time perf stat's counter of
// key was running over the runs of cell in column col, when one was
// multiplexed (below 1).
func (b perfStatKind) perfRunning(cell, col string, key metric.Key) (float64, bool) {
	least, ok := 1.0, false
	for _, s := range b.idx.byCol[cellCol{cell, col}] {
		if f, has := s.PerfRunning[key]; has && f < least {
			least, ok = f, true
		}
	}
	return least, ok
}

// ipcNote derives instructions per cycle per target when both counters
// are present.
func (b perfStatKind) ipcNote(cell string) string {
	var parts []string
	targets := map[string]bool{}
	for _, o := range b.idx.byCell[cell] {
		for k := range o.Metrics {
			if ev, tg, ok := results.SplitPerf(k); ok && ev == "cycles" {
				targets[tg] = true
			}
		}
	}
	for _, tg := range sortedKeys(targets) {
		var cols []string
		for _, col := range b.r.Columns {
			c := b.stats(cell, col, results.PerfKey("cycles", tg))
			in := b.stats(cell, col, results.PerfKey("instructions", tg))
			if c.N == 0 || in.N == 0 || c.Median == 0 {
				continue
			}
			cols = append(cols, fmt.Sprintf("%s %.2f", col, in.Median/c.Median))
		}
		if len(cols) > 0 {
			parts = append(parts, fmt.Sprintf("IPC %s: %s", cmp.Or(tg, "all"), strings.Join(cols, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

func perfEventRank(ev string) int {
	order := []string{"task-clock", "cpus_utilized", "context-switches", "cpu-migrations", "page-faults", "cycles", "instructions", "ipc", "branches", "branch-misses"}
	if i := slices.Index(order, ev); i >= 0 {
		return i
	}
	return len(order)
}

// qemuTargetDesc says which threads a qemu_target label (runner's
// qemuTargetLabel) counted: "qemu" alone, a plain tap's, read "qemu =
// perf -p QEMU: qemu" and said nothing.
func qemuTargetDesc(label string) string {
	switch label {
	case "qemu+vhost":
		return "its vCPU and I/O threads and its vhost-net workers (threads of QEMU on Linux 6.4+)"
	case "qemu":
		return "its vCPU and I/O threads (a plain tap: no vhost-net worker)"
	case "qemu (vhost kthreads apart)":
		return "its vCPU and I/O threads, not the vhost-net workers (kernel threads before Linux 6.4; perf@vhost counts them)"
	}
	return label
}

// qemuTargetNote says what the qemu target (perf -p QEMU) counted, from
// the samples' qemu_target label: with the vhost-net workers where they
// are threads of QEMU (Linux 6.4+), without them where they are kernel
// threads (older kernels). Columns that differ are not comparable.
func (b perfStatKind) qemuTargetNote(cell string) string {
	byCol := map[string][]string{}
	var all []string
	for _, col := range b.r.Columns {
		for _, s := range b.idx.byCol[cellCol{cell, col}] {
			l := s.Labels["qemu_target"]
			if l != "" && !slices.Contains(byCol[col], l) {
				byCol[col] = append(byCol[col], l)
			}
			if l != "" && !slices.Contains(all, l) {
				all = append(all, l)
			}
		}
	}
	switch {
	case len(all) == 0:
		return ""
	case len(all) == 1:
		return "qemu = perf -p QEMU: " + qemuTargetDesc(all[0])
	}
	var parts []string
	for _, col := range b.r.Columns {
		if len(byCol[col]) > 0 {
			parts = append(parts, col+": "+strings.Join(byCol[col], ", "))
		}
	}
	return "WARNING: perf@qemu counts different threads per column (" + strings.Join(parts, "; ") + "): vhost-net workers are threads of QEMU on Linux 6.4+ and kernel threads before, so its rows are not comparable; compare perf@vhost and perf@vcpu instead"
}
