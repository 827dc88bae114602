package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// Options configure Build.
type Options struct {
	// By is the column axis: "kernel" (default) or the name of a cell axis
	// ("backend", "qdisc", ...), whose values then become the columns.
	By string
	// Base is the column every other column is compared with; "" means
	// the first column.
	Base string
	// MinEffect is the smallest change that matters for the verdicts
	// (DefaultMinEffect when zero).
	MinEffect MinEffect
	// Noise, when not nil, is the noise of a cell's metric known from its
	// past runs (a history index: compare --noise-from), or nil; the
	// early looks of the kernel columns' verdicts use it.
	Noise func(cell, metric string) *verdict.Scale
	// Top is the number of perf report symbols per target (default 10).
	Top int
	// ProfileTop is the number of symbols of a profile delta (KindProfile:
	// two columns with perf report), the largest changes (default
	// DefaultProfileTop).
	ProfileTop int
	// Metrics restricts the comparison tables to these keys (nil = all).
	Metrics []string
	// Kinds restricts the tables to these kinds (nil = all).
	Kinds []string
	// Details asks text and markdown to show the tables marked Detail too
	// (see Table.Detail). Other formats always hold every table.
	Details bool
	// Origin is the submitting CI system's name for --format kcidb (every
	// KCIDB id starts with it and a colon).
	Origin string
}

// Report is the format-free model every renderer draws.
type Report struct {
	// Columns are the column labels (kernel labels unless Options.By says
	// otherwise), Base the one the others are compared with.
	Columns []string `json:"columns"`
	Base    string   `json:"base"`
	By      string   `json:"by"`
	// Alpha is the verdicts' overall false-DIFFERENT level
	// (verdict.Default.Alpha).
	Alpha float64 `json:"alpha"`
	// Emulated lists the columns measured under emulation (QEMU TCG).
	Emulated []string `json:"emulated,omitempty"`
	// Nested lists the columns whose datapath ran inside a VM (lab
	// kernels); the others ran on the host (the running kernel).
	Nested []string `json:"nested,omitempty"`
	// Env is each kernel's environment, by kernel label: a column's when
	// the kernels are the columns (EnvKeys).
	Env map[string]*Env `json:"env,omitempty"`
	// ColumnAxes are, by column, the axes that belong to that column
	// rather than to a row (columnAxes): with --by backend, tap+vhost's
	// pin.vhost when no tap cell has one. Rows pair cells without them;
	// the tables' context names them. Nil with the kernels as columns.
	ColumnAxes  map[string]map[string]string `json:"column_axes,omitempty"`
	kernels     []string                     // the kernels in order, the columns or not
	Tables      []*Table                     `json:"tables"`
	Summaries   []Summary                    `json:"summaries"`
	Comparisons []Comparison                 `json:"comparisons,omitempty"`
	Warnings    []string                     `json:"warnings,omitempty"`
	// VoidReruns count, per column, the samples measured a second time
	// after a void first attempt; nil when there were none.
	VoidReruns []VoidReruns `json:"void_reruns,omitempty"`
	// FaultReruns count, per column, the samples measured a second time
	// on a fresh guest after the first attempt's guest kernel faulted
	// under TCG; nil when there were none.
	FaultReruns []Reruns `json:"fault_reruns,omitempty"`
	Sources     []string `json:"sources,omitempty"`
	// Details is Options.Details: text and markdown show Detail tables.
	Details bool `json:"details"`
	// Origin is Options.Origin.
	Origin string `json:"-"`
	// LatencyRuns are the raw probes and qdisc readings of the samples
	// in the latency table, for the HTML plots (not in JSON output).
	LatencyRuns []LatencyRun `json:"-"`
}

// EnvKeys are the keys of r.Env in order: the columns, or the kernels
// when an axis is the columns (--by backend).
func (r *Report) EnvKeys() []string {
	if r.By == "" || r.By == "kernel" {
		return r.Columns
	}
	if len(r.kernels) > 0 {
		return r.kernels
	}
	return sortedKeys(r.Env)
}

// IsNested reports whether column col measured a datapath inside a VM.
func (r *Report) IsNested(col string) bool { return slices.Contains(r.Nested, col) }

// MixedNesting reports whether some columns ran their datapath inside a
// VM and others on the host.
func (r *Report) MixedNesting() bool { return len(r.Nested) > 0 && len(r.Nested) < len(r.Columns) }

// AllEmulated reports whether every column was measured under emulation.
func (r *Report) AllEmulated() bool { return len(r.Emulated) > 0 && len(r.Emulated) == len(r.Columns) }

// IsEmulated reports whether column col was measured under emulation.
func (r *Report) IsEmulated(col string) bool { return slices.Contains(r.Emulated, col) }

// Summary is the statistics of one metric of one cell in one column.
type Summary struct {
	Cell   string            `json:"cell"`
	Axes   map[string]string `json:"axes,omitempty"`
	Column string            `json:"column"`
	Metric string            `json:"metric"`
	Unit   string            `json:"unit"`
	Better string            `json:"better"`
	// Description is what the metric counts, over which interval, total
	// or per thread: a row read alone (a CSV line) says it.
	Description string `json:"description,omitempty"`
	Emulated    bool   `json:"emulated"`
	Stats       Stats  `json:"stats"`
}

// Comparison is one metric of one cell, a column against the base column.
type Comparison struct {
	Cell   string `json:"cell"`
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Better string `json:"better"`
	Base   string `json:"base"`
	New    string `json:"new"`
	// Verdict is "same" (SAME), "unknown" (UNKNOWN), or for DIFFERENT
	// "better", "worse" or "changed" (a metric without a direction); see
	// Delta.Verdict.
	Verdict string `json:"verdict"`
	Delta   Delta  `json:"delta"`
}

// Table kinds.
const (
	KindThread   = "thread"   // rows grouped by backend, sub-rows per metric, one column per label
	KindSweep    = "sweep"    // rows packet sizes, columns A, B, speedup
	KindVersus   = "versus"   // a workload's two variants side by side per row value and kernel (workload.Versus)
	KindPerfStat = "perfstat" // perf counters side by side with % change
	KindPerfSyms = "perfsyms" // perf report top symbols side by side with overhead delta
	KindCompare  = "compare"  // benchstat-style: median ± CI (or min..max), vs base, p, n
	KindHarness  = "harness"  // one row per cell, columns the Diagnostics metrics' medians
)

// Table is a format-free table: a header, rows of label cells and value
// cells, and notes. Renderers decide borders, widths and markup.
type Table struct {
	Kind  string `json:"kind"`
	Title string `json:"title"`
	// Context describes the measurement (CPU, packet count or duration,
	// threads, pinning, qdisc); text renderers put it in the header cell
	// above the label columns.
	Context string `json:"context,omitempty"`
	// LabelHeader names the label columns (used when Context is empty).
	LabelHeader []string `json:"label_header"`
	// Header names the value columns.
	Header []string `json:"header"`
	Rows   []Row    `json:"rows"`
	// Notes are footnotes: how to read the table and caveats. Cells refer
	// to them by index (Cell.Notes).
	Notes []string `json:"notes,omitempty"`
	// Metric and Unit are set when every value cell shows one metric
	// (charts use them).
	Metric string `json:"metric,omitempty"`
	Unit   string `json:"unit,omitempty"`
	// Detail tables are left out of text and markdown unless
	// Report.Details is set: the benchstat-style tables when there is
	// nothing to compare (one column), and the harness and diagnostics
	// table. JSON, CSV and HTML keep them.
	Detail bool `json:"detail,omitempty"`
}

// Row is one table row. Labels has one entry per label column; equal
// consecutive first labels form a group (merged by text renderers).
type Row struct {
	Labels []string `json:"labels"`
	Cells  []Cell   `json:"cells"`
}

// Cell is one value cell: the text to show and the numbers behind it.
type Cell struct {
	Text string `json:"text"`
	// Value is the number shown (in base units), with Stats when it is a
	// summary and Delta when it is a comparison.
	Value    *float64 `json:"value,omitempty"`
	Stats    *Stats   `json:"stats,omitempty"`
	Delta    *Delta   `json:"delta,omitempty"`
	Emulated bool     `json:"emulated,omitempty"`
	// Notes are indexes into Table.Notes.
	Notes []int `json:"notes,omitempty"`
}

// MaxColumns bounds a report's columns (kernels, or the values of the
// --by axis). Every table has a cell per row and column, so without a
// bound a history of N samples with N distinct kernels and cells makes
// N x N tables (1,000 samples: 12.6 s and 1.6 GB); with it the work grows
// linearly with the samples.
const MaxColumns = 64

// Build computes the model of set.
func Build(set *Runs, opt Options) (*Report, error) {
	if opt.Top <= 0 {
		opt.Top = 10
	}
	if opt.By == "" {
		opt.By = "kernel"
	}
	if len(set.Samples) == 0 {
		return nil, noSamples(set)
	}
	kernels := set.Kernels()
	var colAxes map[string]map[string]string
	if opt.By != "kernel" {
		var err error
		if set, colAxes, err = pivot(set, opt.By); err != nil {
			return nil, err
		}
	}
	set = withDropZeros(set)
	idx := newIndex(set)
	named := metric.Keys(opt.Metrics)
	for _, m := range named {
		if !slices.Contains(idx.keys, m) {
			return nil, fault.Input("unknown metric %q; the results have: %s", m, metric.Join(idx.keys, ", "))
		}
	}
	if cols := set.Kernels(); len(cols) > MaxColumns {
		return nil, fault.Input("%d columns (%s: %s, ...): a report compares at most %d; report fewer run directories, or choose another column axis with --by",
			len(cols), opt.By, strings.Join(cols[:3], ", "), MaxColumns)
	}
	r := &Report{Columns: set.Kernels(), By: opt.By, Alpha: verdict.Default.Alpha, Env: set.Env, Warnings: slices.Clone(set.Warnings), Sources: set.Sources, Details: opt.Details, Origin: opt.Origin, kernels: kernels, ColumnAxes: colAxes}
	r.Base = r.Columns[0]
	if opt.Base != "" {
		if !slices.Contains(r.Columns, opt.Base) {
			return nil, fault.Input("base %q is not one of the columns %s", opt.Base, strings.Join(r.Columns, ", "))
		}
		r.Base = opt.Base
		r.Columns = append([]string{opt.Base}, slices.DeleteFunc(slices.Clone(r.Columns), func(c string) bool { return c == opt.Base })...)
	}
	for _, c := range r.Columns {
		if set.Emulated(c) {
			r.Emulated = append(r.Emulated, c)
		}
		if set.Nested(c) {
			r.Nested = append(r.Nested, c)
		}
	}
	b := &builder{set: set, idx: idx, r: r, opt: opt, named: named}
	b.lab = labels{b: b}
	b.varying = b.lab.varyingAxes()
	b.summaries()
	b.sampleWarnings()
	b.reruns()
	if r.MixedNesting() {
		var bare []string
		for _, c := range r.Columns {
			if !r.IsNested(c) {
				bare = append(bare, c)
			}
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("columns differ in nesting: %s ran the datapath inside a lab VM, %s on the host; their changes include the nesting overhead",
			strings.Join(r.Nested, ", "), strings.Join(bare, ", ")))
	}
	for _, k := range []struct {
		kind string
		f    func()
	}{{KindThread, threadKind{b}.threadTables}, {KindSenders, sendersKind{b}.sendersTables},
		{KindLatency, func() { latencyKind{b}.loadLatencyRuns(); latencyKind{b}.latencyTable() }}, {KindVersus, versusKind{b}.versusTables},
		{KindSweep, sweepKind{b}.sweepTables}, {KindPerfStat, perfStatKind{b}.perfStatTables}, {KindPerfSyms, perfSymsKind{b}.perfSymTables},
		{KindCompare, compareKind{b}.compareTables}, {KindHarness, harnessKind{b}.harnessTable}} {
		if opt.Kinds == nil || slices.Contains(opt.Kinds, k.kind) {
			k.f()
		}
	}
	for _, t := range r.Tables {
		fewRunsNote(t)
		b.lab.sayEmulation(t)
		factorNote(t)
	}
	// Per-metric tables are noise when there is nothing to compare; the
	// harness's own numbers are for whoever checks the harness.
	comparing := len(r.Columns) >= 2 || opt.By != "kernel"
	for _, t := range r.Tables {
		if t.Kind == KindHarness || (t.Kind == KindCompare && !comparing) {
			t.Detail = true
		}
	}
	return r, nil
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// builder holds what every table kind reads while a report is built
// (the set, its index, the report so far and the options) and answers
// for the numbers: a cell's samples and axes, the statistics and changes
// of a metric, which keys to show, the drops under Lost, the summaries.
// labels names things; each table kind (threadKind, versusKind, ...)
// is a type of its own that embeds the builder.
type builder struct {
	set *results.Set
	idx *index
	r   *Report
	opt Options
	// named are opt.Metrics, as keys.
	named []metric.Key
	// lab names rows, columns and cells (labels).
	lab labels
	// varying is varyingAxes, computed once.
	varying []string
}

func (b *builder) cellAxes(cell string) map[string]string {
	if s := b.firstSample(cell); s != nil {
		return s.Axes
	}
	return nil
}

// summaryAxes are cell's axes in column col: cellAxes and col's own
// (Report.ColumnAxes), so that a summary read alone, a CSV line or a JSON
// summary, says tap+vhost's pin.vhost as the text's context does.
func (b *builder) summaryAxes(cell, col string) map[string]string {
	own := b.r.ColumnAxes[col]
	if len(own) == 0 {
		return b.cellAxes(cell)
	}
	axes := maps.Clone(b.cellAxes(cell))
	if axes == nil {
		axes = map[string]string{}
	}
	maps.Copy(axes, own)
	return axes
}

func (b *builder) firstSample(cell string) *results.Sample {
	if ss := b.idx.byCell[cell]; len(ss) > 0 {
		return ss[0]
	}
	return nil
}

// stats summarizes metric key of cell in column col.
func (b *builder) stats(cell, col string, key metric.Key) Stats {
	k := statKey{cell, col, key}
	st, ok := b.idx.stats[k]
	if !ok {
		st = Summarize(b.idx.values(cell, col, key), b.idx.metric(key).Rate)
		b.idx.stats[k] = st
	}
	return st
}

// scale is the history scale of key in cell for the kernel columns'
// verdicts (nil with columns by another axis: their cells differ).
func (o *Options) scale(cell string, key metric.Key) *verdict.Scale {
	if o.Noise == nil || o.By != "kernel" {
		return nil
	}
	return o.Noise(cell, string(key))
}

// delta compares metric key of cell in column col with the base column.
func (b *builder) delta(cell, col string, key metric.Key) Delta {
	k := statKey{cell, col, key}
	d, ok := b.idx.deltas[k]
	if !ok {
		d = compareStats(b.stats(cell, b.r.Base, key), b.stats(cell, col, key), b.opt.MinEffect, b.opt.scale(cell, key))
		b.idx.deltas[k] = d
	}
	return d
}

// cellMetricKeys are the metric keys cell has, of metricKeys, in its order.
func (b *builder) cellMetricKeys(cell string) []metric.Key {
	if len(b.named) == 0 {
		return b.idx.cellKeys[cell]
	}
	var out []metric.Key
	for _, k := range b.named {
		if slices.Contains(b.idx.cellKeys[cell], k) {
			out = append(out, k)
		}
	}
	return out
}

func (b *builder) metricKeys() []metric.Key {
	if len(b.named) > 0 {
		return b.named
	}
	return b.idx.keys
}

// seen is what the samples of cells hold, for a workload table's rows
// and notes.
func (b *builder) seen(cells []string) workload.Seen {
	return seenIn(cells, func(cell string) []*results.Sample { return b.idx.byCell[cell] })
}

// seenIn is what the samples of cells (samples(cell) each) hold: a
// metric some sample has > 0 (Positive), or has at all, whatever its
// value (Measured).
func seenIn(cells []string, samples func(cell string) []*results.Sample) workload.Seen {
	some := func(key metric.Key, ok func(v float64, has bool) bool) bool {
		for _, cell := range cells {
			for _, s := range samples(cell) {
				if v, has := s.Metrics[key]; ok(v, has) {
					return true
				}
			}
		}
		return false
	}
	var gens []string
	for _, cell := range cells {
		for _, s := range samples(cell) {
			if g := workload.NameOf(generatorOf(s)); g != "" && !slices.Contains(gens, g) {
				gens = append(gens, g)
			}
		}
	}
	return workload.Seen{
		Positive:   func(key metric.Key) bool { return some(key, func(v float64, _ bool) bool { return v > 0 }) },
		Measured:   func(key metric.Key) bool { return some(key, func(_ float64, has bool) bool { return has }) },
		Generators: gens,
	}
}

func ptr(v float64) *float64 { return &v }

// factorNote explains the change column's two marks that are no
// percentage, where a cell of t shows one (units.Pct).
func factorNote(t *Table) {
	var marks []string
	for _, m := range []struct{ text, note string }{
		{units.PctFromZero, units.PctFromZero + " = a change from a median of exactly 0"},
		{units.PctOver999, units.PctOver999 + " = 1000 times the base or more"},
	} {
		if slices.ContainsFunc(t.Rows, func(r Row) bool {
			return slices.ContainsFunc(r.Cells, func(c Cell) bool { return c.Delta != nil && strings.Contains(c.Text, m.text) })
		}) {
			marks = append(marks, m.note)
		}
	}
	if len(marks) > 0 {
		t.Notes = append(t.Notes, strings.Join(marks, "; "))
	}
}

// fewRunsNote marks t's change cells whose sides have too few runs for any
// verdict, and adds the notes its change cells need beyond the legend. A
// change column whose every comparison has the same n runs per side below
// the plan's first look says so once, in its header ("change, 1 run"), and
// its cells show the bare change; otherwise such cells carry "(n runs)".
// UNKNOWN cells at an early look get a note that before the first rank
// look only a change far outside the noise is called.
func fewRunsNote(t *Table) {
	var few, early [2]int // lowest and highest runs per side
	var marked []string   // headers that say the runs
	var scaled []string   // the history scales the early looks used
	decided := false      // a change cell reached a look of the plan
	see := func(r *[2]int, n int) {
		if r[0] == 0 || n < r[0] {
			r[0] = n
		}
		r[1] = max(r[1], n)
	}
	ncol := len(t.Header)
	for _, row := range t.Rows {
		ncol = max(ncol, len(row.Cells))
	}
	for j := range ncol {
		var col [2]int
		uniform := true
		for _, row := range t.Rows {
			if j >= len(row.Cells) {
				continue
			}
			d := row.Cells[j].Delta
			if d == nil || d.Base.N == 0 || d.New.N == 0 {
				continue
			}
			n := min(d.Base.N, d.New.N)
			if sc := d.Verdict.Scale; sc != "" && !slices.Contains(scaled, sc) {
				scaled = append(scaled, sc)
			}
			switch v := d.Verdict; {
			case d.TooFew:
				see(&few, n)
				see(&col, n)
			case v.Verdict == verdict.Unknown && v.Look < verdict.Default.Early:
				see(&early, n)
				uniform, decided = false, true
			default:
				uniform, decided = false, true
			}
		}
		if !uniform || col[0] == 0 || col[0] != col[1] || j >= len(t.Header) {
			continue
		}
		t.Header[j] += ", " + units.Plural(col[0], "run")
		marked = append(marked, t.Header[j])
		for _, row := range t.Rows {
			if j >= len(row.Cells) {
				continue
			}
			// A side without runs keeps its "-": its median is no
			// number, and a change to it would read as -100%.
			if d := row.Cells[j].Delta; d != nil && d.TooFew && d.Base.N > 0 && d.New.N > 0 {
				row.Cells[j].Text = d.pctText()
			}
		}
	}
	runs := func(r [2]int) string {
		if r[0] == r[1] {
			return units.Plural(r[0], "run")
		}
		return fmt.Sprintf("%d-%d runs", r[0], r[1])
	}
	if few[0] > 0 && !decided {
		dropVerdictLegend(t)
	}
	if few[0] > 0 {
		what := "(" + runs(few) + ")"
		if len(marked) > 0 {
			what = strings.Join(marked, ", ")
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%s = %s per side: a change without a verdict; from %d runs per side a change far outside the noise is called DIFFERENT, from %d SAME too (docs/compare.md)",
			what, runs(few), verdict.Default.FirstN(), verdict.Default.RankN()))
	}
	if early[0] > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("? at %s per side: below %d runs per side only a change far outside the noise is called; add repetitions or use `vnetbench run --until-decided` (docs/compare.md)",
			runs(early), verdict.Default.RankN()))
	}
	t.Notes = append(t.Notes, scaleNotes(scaled)...)
}

// dropVerdictLegend takes the legend of the verdict marks (changeLegend)
// out of t's notes: none of its changes has a verdict, so its bare changes
// are not DIFFERENT, and the few-runs note says what they are.
func dropVerdictLegend(t *Table) {
	t.Notes = slices.Clone(t.Notes)
	for i, n := range t.Notes {
		t.Notes[i] = strings.ReplaceAll(n, ": "+changeLegend, "")
	}
}

// scaleNotes says which history scales the early looks used.
func scaleNotes(scaled []string) []string {
	switch len(scaled) {
	case 0:
		return nil
	case 1:
		return []string{"early looks (3, 6 runs per side) with " + scaled[0] + " (--noise-from)"}
	}
	return []string{fmt.Sprintf("early looks (3, 6 runs per side) with the noise of each cell's past runs (--noise-from), e.g. %s", scaled[0])}
}

// noSamples says why set has nothing to report: every sample failed
// (with the first error), or the run measured nothing, naming the
// inputs. It said "no samples to report (only warmups, or empty
// results)" also for a run whose every sample had failed.
func noSamples(set *Runs) error {
	from := strings.Join(set.Sources, ", ")
	if from == "" {
		from = "the input"
	}
	if n := len(set.Failed); n > 0 {
		f := set.Failed[0]
		first, _, _ := strings.Cut(f.Error, "\n")
		return fault.Input("%s: no measured samples: all %d failed (first: %s on %s rep %d: %s); results.jsonl holds each error, and 'vnetbench run SCENARIO --resume -o DIR' runs them again", from, n, f.Cell, f.Kernel, f.Rep+1, first)
	}
	return fault.Input("%s: no samples to report (an empty results.jsonl, or only warmups): the run measured nothing", from)
}
