package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Options configure Build.
type Options struct {
	// By is the column axis: "kernel" (default) or the name of a cell axis
	// ("backend", "qdisc", ...), whose values then become the columns.
	By string
	// Base is the column every other column is compared with; "" means
	// the first column.
	Base string
	// Alpha is the significance level (DefaultAlpha when 0).
	Alpha float64
	// Top is the number of perf report symbols per target (default 10).
	Top int
	// Metrics restricts the comparison tables to these keys (nil = all).
	Metrics []string
	// Kinds restricts the tables to these kinds (nil = all).
	Kinds []string
	// Details asks text and markdown to show the tables marked Detail too
	// (see Table.Detail). Other formats always hold every table.
	Details bool
}

// Report is the format-free model every renderer draws.
type Report struct {
	// Columns are the column labels (kernel labels unless Options.By says
	// otherwise), Base the one the others are compared with.
	Columns []string `json:"columns"`
	Base    string   `json:"base"`
	By      string   `json:"by"`
	Alpha   float64  `json:"alpha"`
	// Emulated lists the columns measured under emulation (QEMU TCG).
	Emulated    []string        `json:"emulated,omitempty"`
	Env         map[string]*Env `json:"env,omitempty"`
	Tables      []*Table        `json:"tables"`
	Summaries   []Summary       `json:"summaries"`
	Comparisons []Comparison    `json:"comparisons,omitempty"`
	Warnings    []string        `json:"warnings,omitempty"`
	Sources     []string        `json:"sources,omitempty"`
	// Details is Options.Details: text and markdown show Detail tables.
	Details bool `json:"details"`
}

// IsEmulated reports whether column col was measured under emulation.
func (r *Report) IsEmulated(col string) bool { return slices.Contains(r.Emulated, col) }

// Summary is the statistics of one metric of one cell in one column.
type Summary struct {
	Cell     string            `json:"cell"`
	Axes     map[string]string `json:"axes,omitempty"`
	Column   string            `json:"column"`
	Metric   string            `json:"metric"`
	Unit     string            `json:"unit"`
	Better   string            `json:"better"`
	Emulated bool              `json:"emulated"`
	Stats    Stats             `json:"stats"`
}

// Comparison is one metric of one cell, a column against the base column.
type Comparison struct {
	Cell   string `json:"cell"`
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Better string `json:"better"`
	Base   string `json:"base"`
	New    string `json:"new"`
	// Verdict is "~" (no significant change), "better", "worse" or
	// "changed" (significant, metric without a direction).
	Verdict string `json:"verdict"`
	Delta   Delta  `json:"delta"`
}

// Table kinds.
const (
	KindThread   = "thread"   // rows grouped by backend, sub-rows per metric, one column per label
	KindSweep    = "sweep"    // rows packet sizes, columns A, B, speedup
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

// Build computes the model of set.
func Build(set *Set, opt Options) (*Report, error) {
	if opt.Alpha <= 0 {
		opt.Alpha = DefaultAlpha
	}
	if opt.Top <= 0 {
		opt.Top = 10
	}
	if opt.By == "" {
		opt.By = "kernel"
	}
	if len(set.Samples) == 0 {
		return nil, inputErrorf("no samples to report (only warmups, or empty results)")
	}
	if opt.By != "kernel" {
		var err error
		if set, err = pivot(set, opt.By); err != nil {
			return nil, err
		}
	}
	for _, m := range opt.Metrics {
		if err := set.checkMetric(m); err != nil {
			return nil, err
		}
	}
	r := &Report{Columns: set.Kernels(), By: opt.By, Alpha: opt.Alpha, Env: set.Env, Warnings: slices.Clone(set.Warnings), Sources: set.Sources, Details: opt.Details}
	r.Base = r.Columns[0]
	if opt.Base != "" {
		if !slices.Contains(r.Columns, opt.Base) {
			return nil, inputErrorf("base %q is not one of the columns %s", opt.Base, strings.Join(r.Columns, ", "))
		}
		r.Base = opt.Base
		r.Columns = append([]string{opt.Base}, slices.DeleteFunc(slices.Clone(r.Columns), func(c string) bool { return c == opt.Base })...)
	}
	for _, c := range r.Columns {
		if set.Emulated(c) {
			r.Emulated = append(r.Emulated, c)
		}
	}
	b := &builder{set: set, r: r, opt: opt}
	b.varying = b.varyingAxes()
	b.summaries()
	b.sampleWarnings()
	for _, k := range []struct {
		kind string
		f    func()
	}{{KindThread, b.threadTables}, {KindSweep, b.sweepTables}, {KindPerfStat, b.perfStatTables}, {KindPerfSyms, b.perfSymTables}, {KindCompare, b.compareTables}, {KindHarness, b.harnessTable}} {
		if opt.Kinds == nil || slices.Contains(opt.Kinds, k.kind) {
			k.f()
		}
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

// checkMetric reports an InputError for a key no sample has.
func (set *Set) checkMetric(key string) error {
	keys := set.MetricKeys()
	if slices.Contains(keys, key) {
		return nil
	}
	return inputErrorf("unknown metric %q; the results have: %s", key, strings.Join(keys, ", "))
}

// pivot makes axis the column axis: each sample's Kernel becomes the axis
// value and the kernel label moves into the cell name.
func pivot(set *Set, axis string) (*Set, error) {
	out := &Set{Env: map[string]*Env{}, Sources: set.Sources, Warnings: set.Warnings}
	for _, s := range set.Samples {
		v, ok := s.Axes[axis]
		if !ok {
			return nil, inputErrorf("--by %s: cell %s has no axis %q; use --by kernel or one of its axes (%s)", axis, s.Cell, axis, strings.Join(sortedKeys(s.Axes), ", "))
		}
		var parts []string
		for _, p := range strings.Split(s.Cell, "/") {
			if p != v {
				parts = append(parts, p)
			}
		}
		axes := map[string]string{"kernel": s.Kernel}
		for k, x := range s.Axes {
			if k != axis {
				axes[k] = x
			}
		}
		if e := set.Env[s.Kernel]; e != nil {
			out.Env[v] = e
		}
		s.Cell = s.Kernel + ":" + strings.Join(parts, "/")
		s.Kernel = v
		s.Axes = axes
		out.Samples = append(out.Samples, s)
	}
	return out, nil
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

type builder struct {
	set *Set
	r   *Report
	opt Options
	// varying is varyingAxes, computed once.
	varying []string
}

func (b *builder) cellAxes(cell string) map[string]string {
	for _, s := range b.set.Samples {
		if s.Cell == cell {
			return s.Axes
		}
	}
	return nil
}

func (b *builder) firstSample(cell string) *Sample {
	for i := range b.set.Samples {
		if b.set.Samples[i].Cell == cell {
			return &b.set.Samples[i]
		}
	}
	return nil
}

func metricOf(key string) Metric {
	if m, ok := Lookup(key); ok {
		return m
	}
	return goUnitMetric(key)
}

// goUnitMetric describes units of other tools' benchfmt files.
func goUnitMetric(unit string) Metric {
	m := Metric{Key: unit, Unit: unit, Better: Neutral}
	switch {
	case unit == "ns/op" || unit == "sec/op" || unit == "B/op" || unit == "allocs/op":
		m.Better = LowerIsBetter
	case strings.HasSuffix(unit, "B/s") || strings.HasSuffix(unit, "/s"):
		m.Better, m.Rate = HigherIsBetter, true
	}
	return m
}

func (b *builder) stats(cell, col, key string) Stats {
	return Summarize(b.set.Values(cell, col, key), metricOf(key).Rate)
}

func (b *builder) delta(cell, col, key string) Delta {
	return Compare(b.set.Values(cell, b.r.Base, key), b.set.Values(cell, col, key), metricOf(key).Rate, b.opt.Alpha)
}

func verdict(d *Delta, better Direction) string {
	if !d.Significant {
		return "~"
	}
	switch {
	case better == HigherIsBetter && d.New.Median > d.Base.Median, better == LowerIsBetter && d.New.Median < d.Base.Median:
		return "better"
	case better == Neutral:
		return "changed"
	}
	return "worse"
}

func (b *builder) metricKeys() []string {
	if len(b.opt.Metrics) > 0 {
		return b.opt.Metrics
	}
	return b.set.MetricKeys()
}

func (b *builder) summaries() {
	for _, cell := range b.set.Cells() {
		for _, key := range b.metricKeys() {
			m := metricOf(key)
			for _, col := range b.r.Columns {
				vals := b.set.Values(cell, col, key)
				if len(vals) == 0 {
					continue
				}
				b.r.Summaries = append(b.r.Summaries, Summary{Cell: cell, Axes: b.cellAxes(cell), Column: col, Metric: key,
					Unit: m.Unit, Better: m.Better.String(), Emulated: b.r.IsEmulated(col), Stats: Summarize(vals, m.Rate)})
				if col == b.r.Base || len(b.set.Values(cell, b.r.Base, key)) == 0 {
					continue
				}
				d := b.delta(cell, col, key)
				b.r.Comparisons = append(b.r.Comparisons, Comparison{Cell: cell, Metric: key, Unit: m.Unit, Better: m.Better.String(),
					Base: b.r.Base, New: col, Verdict: verdict(&d, m.Better), Delta: d})
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
		count int
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
				e = &entry{key: k, first: w, texts: map[string]bool{}}
				byKey[k] = e
				entries = append(entries, e)
			}
			e.texts[w] = true
			e.count++
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
		m := &merged{text: e.first, where: [][2]string{where}, count: e.count, of: runs[where]}
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

// ---- formatting helpers (shared by the model's cell texts) ----

// scaleFor picks a display scale for values of unit around v.
func scaleFor(unit string, v float64) (div float64, suffix string) {
	switch unit {
	case "pps":
		if v >= 1e7 {
			return 1e6, "Mpps"
		}
		return 1e3, "Kpps"
	case "bit/s":
		if v >= 1e9 {
			return 1e9, "Gbit/s"
		}
		return 1e6, "Mbit/s"
	}
	return 1, ""
}

// num formats v with at least 3 significant digits and no exponent.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// grouped formats an integer-ish value with thousands separators, as perf
// does.
func grouped(v float64) string {
	if math.Abs(v) < 1000 && v != math.Trunc(v) {
		return num(v)
	}
	s := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if v < 0 {
		return "-" + string(out)
	}
	return string(out)
}

// si formats v with an SI prefix (k, M, G), benchstat style.
func si(v float64) string {
	a := math.Abs(v)
	for _, p := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= p.f {
			x := v / p.f
			return strconv.FormatFloat(x, 'f', 4-len(strconv.FormatFloat(math.Abs(math.Trunc(x)), 'f', 0, 64)), 64) + p.s
		}
	}
	if a >= 1000 || a == math.Trunc(a) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// pct formats a percent change: "+5.30%", "+1.16e+08%" for huge changes
// (from a base near 0), "+inf%" from a base of exactly 0.
func pct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case math.IsInf(v, 1):
		return "+inf%"
	case math.IsInf(v, -1):
		return "-inf%"
	case math.Abs(v) >= 1e4:
		return fmt.Sprintf("%+.3g%%", v)
	}
	return fmt.Sprintf("%+.2f%%", v)
}

func ptr(v float64) *float64 { return &v }

// backendName is the display name of a backend axis value.
func backendName(b string) string {
	switch b {
	case "tap":
		return "TAP"
	case "tap+vhost":
		return "TAP + vhost-net"
	}
	return b
}

// rowAxis is the axis whose values group the rows of thread tables: the
// backend, or the kernel when the backend is the column axis.
func (b *builder) rowAxis() string {
	if b.opt.By == "backend" {
		return "kernel"
	}
	return "backend"
}

func (b *builder) rowLabel(s *Sample) string {
	if ax := b.rowAxis(); ax != "backend" {
		return s.Axes[ax]
	}
	return backendName(backendOf(s))
}

func backendOf(s *Sample) string {
	if b, ok := s.Axes["backend"]; ok {
		return b
	}
	b, _, _ := strings.Cut(s.Cell, "/")
	return b
}

// groupKey is the cell's axes minus the listed ones, as a stable string.
func groupKey(s *Sample, without ...string) string {
	var parts []string
	for _, k := range sortedKeys(s.Axes) {
		if !slices.Contains(without, k) {
			parts = append(parts, k+"="+s.Axes[k])
		}
	}
	if len(parts) == 0 && len(s.Axes) == 0 {
		// No axes (benchfmt without key=value parts): the cell is its own group.
		return "cell=" + s.Cell
	}
	return strings.Join(parts, ",")
}

// context describes a group of cells for a table header.
func (b *builder) context(s *Sample, withSize bool) string {
	// l finds a fact in the labels, then the axes, then axes named
	// "<anything>.<key>" (the runner's "generator.pktgen.count").
	l := func(keys ...string) string {
		for _, k := range keys {
			if v := s.Labels[k]; v != "" {
				return v
			}
			if v := s.Axes[k]; v != "" {
				return v
			}
		}
		for _, k := range keys {
			for _, ak := range sortedKeys(s.Axes) {
				if strings.HasSuffix(ak, "."+k) && s.Axes[ak] != "" {
					return s.Axes[ak]
				}
			}
		}
		return ""
	}
	var parts []string
	gen := s.Labels["generator"]
	if gen == "" {
		gen = s.Axes["generator"]
	}
	if gen == "" {
		gen = "benchmark"
	}
	for _, g := range []string{"pktgen", "trafgen", "iperf3"} {
		if strings.HasPrefix(gen, g) {
			gen = g
		}
	}
	head := gen
	if g := l("guest"); g != "" {
		head += " to " + g
	}
	parts = append(parts, head)
	if env := b.set.Env[s.Kernel]; env != nil && env.CPUModel != "" {
		parts = append(parts, shortCPU(env.CPUModel))
	}
	if c := l("count"); c != "" && c != "0" {
		if n, err := strconv.ParseFloat(c, 64); err == nil {
			c = countText(n)
		}
		parts = append(parts, c+" packets")
	} else if d := l("duration"); d != "" {
		parts = append(parts, d)
	}
	t := l("threads", "parallel")
	if t == "" && len(s.Threads) > 0 {
		t = strconv.Itoa(len(s.Threads))
	}
	if t != "" {
		unit := "threads"
		if gen == "iperf3" {
			unit = "streams"
		}
		if t == "1" {
			unit = strings.TrimSuffix(unit, "s")
		}
		parts = append(parts, t+" "+unit)
	}
	if ps := l("pkt_size"); ps != "" && withSize {
		parts = append(parts, ps+" B packets")
	}
	parts = append(parts, pinText(s)...)
	if q := l("qdisc"); q != "" {
		parts = append(parts, "qdisc "+q)
	}
	// Axes that tell this table from the report's others and are not said
	// above (pktgen mode, xmit mode, burst, queues, ...): "mode script".
	for _, k := range b.varying {
		if v := s.Axes[k]; v != "" {
			parts = append(parts, k[strings.LastIndex(k, ".")+1:]+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// described are the axes context states in its own words, or that are
// rows or columns of the tables.
func (b *builder) described(k string) bool {
	switch k {
	case "backend", "generator", "qdisc", "kernel", b.rowAxis():
		return true
	}
	if strings.HasPrefix(k, "pin.") || strings.HasPrefix(k, "guest") {
		return true
	}
	for _, suf := range []string{"threads", "parallel", "pkt_size", "count", "duration"} {
		if k == suf || strings.HasSuffix(k, "."+suf) {
			return true
		}
	}
	return false
}

// varyingAxes are the axis keys with more than one value in the set that
// context does not describe otherwise, sorted.
func (b *builder) varyingAxes() []string {
	vals := map[string]map[string]bool{}
	for i := range b.set.Samples {
		for k, v := range b.set.Samples[i].Axes {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	var out []string
	for _, k := range sortedKeys(vals) {
		if len(vals[k]) > 1 && !b.described(k) {
			out = append(out, k)
		}
	}
	return out
}

// pinText describes CPU pinning from Labels["pin"] ("vhost:0"; present
// and empty = unpinned) or the runner's "pin.<target>" axes ("none" =
// unpinned).
func pinText(s *Sample) []string {
	if p, ok := s.Labels["pin"]; ok {
		if p == "" {
			return []string{"unpinned"}
		}
		if what, cpus, ok := strings.Cut(p, ":"); ok {
			return []string{what + " pinned to CPU " + cpus}
		}
		return []string{"pinned " + p}
	}
	var out []string
	seen := false
	for _, k := range sortedKeys(s.Axes) {
		what, ok := strings.CutPrefix(k, "pin.")
		if !ok {
			continue
		}
		seen = true
		if v := s.Axes[k]; v != "" && v != "none" {
			out = append(out, what+" pinned to CPU "+v)
		}
	}
	if seen && len(out) == 0 {
		return []string{"unpinned"}
	}
	return out
}

// shortCPU trims vendor noise from a CPU model name:
// "Intel(R) Core(TM) i5-6300HQ CPU @ 2.30GHz" -> "Core i5-6300HQ".
func shortCPU(m string) string {
	m = strings.NewReplacer("(R)", "", "(TM)", "", "(tm)", "").Replace(m)
	m = strings.NewReplacer("Intel ", "", " CPU", "", " Processor", "").Replace(m)
	if i := strings.Index(m, " @ "); i >= 0 {
		m = m[:i]
	}
	return strings.Join(strings.Fields(m), " ")
}

func (b *builder) colHeader(col string) string {
	if b.r.IsEmulated(col) {
		return col + " (TCG)"
	}
	return col
}

const emulatedNote = "(TCG) = emulated: QEMU without KVM; the numbers measure the emulator, not the kernel"

// countText writes a packet count the way people say it: 10M, 2.5M, 100k.
func countText(n float64) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if n >= p.f {
			return strconv.FormatFloat(n/p.f, 'f', -1, 64) + p.s
		}
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}

// rateText formats a median for a thread table: pps in Kpps (plain pps
// below 1 Kpps), bit/s in Gbit/s or Mbit/s, counts as numbers.
func rateText(unit string, v float64) string {
	switch unit {
	case "pps":
		if math.Abs(v) < 1000 {
			return strconv.FormatFloat(v, 'f', 0, 64) + " pps"
		}
		return num(v/1e3) + " Kpps"
	case "bit/s":
		div, suf := scaleFor(unit, v)
		return num(v/div) + " " + suf
	}
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return num(v)
}

// ---- thread-style tables ----

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
		groups, order := b.groupCells(func(s *Sample) bool {
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
					m := metricOf(tm.key)
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

// anyPositive reports whether a sample of one of cells has metric key > 0.
func (b *builder) anyPositive(cells []string, key string) bool {
	for i := range b.set.Samples {
		s := &b.set.Samples[i]
		if s.Metrics[key] > 0 && slices.Contains(cells, s.Cell) {
			return true
		}
	}
	return false
}

func (b *builder) repsRange(cells []string) string {
	lo, hi := math.MaxInt, 0
	for _, cell := range cells {
		for _, col := range b.r.Columns {
			n := 0
			for i := range b.set.Samples {
				if b.set.Samples[i].Cell == cell && b.set.Samples[i].Kernel == col {
					n++
				}
			}
			if n > 0 {
				lo, hi = min(lo, n), max(hi, n)
			}
		}
	}
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// groupCells groups the cells whose samples pass keep by their axes
// without the listed axes; order is by first appearance.
func (b *builder) groupCells(keep func(*Sample) bool, without ...string) (map[string][]string, []string) {
	groups := map[string][]string{}
	var order []string
	seen := map[string]bool{}
	for i := range b.set.Samples {
		s := &b.set.Samples[i]
		if seen[s.Cell] || !keep(s) {
			continue
		}
		seen[s.Cell] = true
		k := groupKey(s, without...)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s.Cell)
	}
	return groups, order
}

// ---- size sweep ----

func sizeOf(s *Sample) (int, bool) {
	v, ok := s.Axes["pkt_size"]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func (b *builder) inSweep(s *Sample) bool {
	if _, ok := sizeOf(s); !ok {
		return false
	}
	sizes := map[string]bool{}
	k := groupKey(s, "pkt_size")
	for i := range b.set.Samples {
		o := &b.set.Samples[i]
		if _, ok := sizeOf(o); ok && groupKey(o, "pkt_size") == k {
			sizes[o.Axes["pkt_size"]] = true
		}
	}
	return len(sizes) >= 2
}

func (b *builder) sweepTables() {
	groups, order := b.groupCells(b.inSweep, "pkt_size")
	for _, gk := range order {
		cells := groups[gk]
		slices.SortStableFunc(cells, func(x, y string) int {
			a, _ := sizeOf(b.firstSample(x))
			c, _ := sizeOf(b.firstSample(y))
			return cmp.Compare(a, c)
		})
		for _, key := range []string{"tx_pps", "throughput_bps"} {
			if len(b.set.Values(cells[0], b.r.Base, key)) == 0 {
				continue
			}
			m := metricOf(key)
			first := b.firstSample(cells[0])
			div, suf := scaleFor(m.Unit, b.stats(cells[0], b.r.Base, key).Median)
			t := &Table{Kind: KindSweep, Title: "size sweep, " + backendName(backendOf(first)) + ", " + b.context(first, false),
				LabelHeader: []string{"size (B)"}, Metric: key, Unit: suf}
			for _, c := range b.r.Columns {
				t.Header = append(t.Header, b.colHeader(c)+" "+suf)
			}
			for _, c := range b.r.Columns[1:] {
				h := "speedup"
				if len(b.r.Columns) > 2 {
					h = c + " speedup"
				}
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
					row.Cells = append(row.Cells, Cell{Text: num(st.Median / div), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
				}
				for _, col := range b.r.Columns[1:] {
					d := b.delta(cell, col, key)
					c := Cell{Text: d.DeltaString(), Delta: &d}
					if d.Significant {
						c.Value = ptr(d.Pct)
					}
					row.Cells = append(row.Cells, c, Cell{Text: fmt.Sprintf("%.3f", d.P), Value: ptr(d.P)})
				}
				t.Rows = append(t.Rows, row)
			}
			t.Notes = append(t.Notes, fmt.Sprintf("%s in %s, median of %s runs; speedup = change of the median vs %s, ~ = not significant (Mann-Whitney U, alpha %v)",
				key, suf, b.repsRange(cells), b.r.Base, b.opt.Alpha))
			if len(b.r.Emulated) > 0 {
				t.Notes = append(t.Notes, emulatedNote)
			}
			b.r.Tables = append(b.r.Tables, t)
		}
	}
}

// ---- perf stat ----

// perfTarget returns the event and target of a perf metric key in s.
func perfTarget(s *Sample, key string) (event, target string, ok bool) {
	ev, tg, ok := SplitPerf(key)
	if ok && tg == "" {
		tg = s.Labels["target"]
	}
	return ev, tg, ok
}

func (b *builder) perfStatTables() {
	for _, cell := range b.set.Cells() {
		s := b.firstSample(cell)
		type row struct{ key, target, event string }
		var rows []row
		seen := map[string]bool{}
		for i := range b.set.Samples {
			o := &b.set.Samples[i]
			if o.Cell != cell {
				continue
			}
			for k := range o.Metrics {
				if ev, tg, ok := perfTarget(o, k); ok && !seen[k] {
					seen[k] = true
					rows = append(rows, row{k, tg, ev})
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		slices.SortFunc(rows, func(x, y row) int {
			return cmp.Or(cmp.Compare(x.target, y.target), cmp.Compare(perfEventRank(x.event), perfEventRank(y.event)), cmp.Compare(x.event, y.event))
		})
		t := &Table{Kind: KindPerfStat, Title: "perf stat " + cell, Context: "perf stat, " + cell, LabelHeader: []string{"target", "event"}}
		for _, c := range b.r.Columns {
			t.Header = append(t.Header, b.colHeader(c))
		}
		for _, c := range b.r.Columns[1:] {
			h := "change"
			if len(b.r.Columns) > 2 {
				h = c + " change"
			}
			t.Header = append(t.Header, h)
		}
		for _, rw := range rows {
			m := metricOf(rw.key)
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
				r.Cells = append(r.Cells, Cell{Text: grouped(st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
			}
			for _, col := range b.r.Columns[1:] {
				d := b.delta(cell, col, rw.key)
				c := Cell{Text: d.DeltaString(), Delta: &d}
				if d.Significant {
					c.Value = ptr(d.Pct)
				}
				r.Cells = append(r.Cells, c)
			}
			t.Rows = append(t.Rows, r)
		}
		note := fmt.Sprintf("medians of %s runs", b.repsRange([]string{cell}))
		if len(b.r.Columns) > 1 {
			note += fmt.Sprintf("; change vs %s, ~ = not significant (Mann-Whitney U, alpha %v)", b.r.Base, b.opt.Alpha)
		}
		t.Notes = append(t.Notes, note)
		var unsupported []string
		for i := range b.set.Samples {
			if o := &b.set.Samples[i]; o.Cell == cell {
				for _, ev := range strings.Split(o.Labels["perf_unsupported"], ",") {
					if ev != "" && !slices.Contains(unsupported, ev) {
						unsupported = append(unsupported, ev)
					}
				}
			}
		}
		if len(unsupported) > 0 {
			t.Notes = append(t.Notes, "not supported on this machine (no hardware PMU?): "+strings.Join(unsupported, ", "))
		}
		if ipc := b.ipcNote(cell); ipc != "" {
			t.Notes = append(t.Notes, ipc)
		}
		_ = s
		b.r.Tables = append(b.r.Tables, t)
	}
}

// ipcNote derives instructions per cycle per target when both counters
// are present.
func (b *builder) ipcNote(cell string) string {
	var parts []string
	targets := map[string]bool{}
	for i := range b.set.Samples {
		o := &b.set.Samples[i]
		if o.Cell != cell {
			continue
		}
		for k := range o.Metrics {
			if ev, tg, ok := SplitPerf(k); ok && ev == "cycles" {
				targets[tg] = true
			}
		}
	}
	for _, tg := range sortedKeys(targets) {
		suffix := ""
		if tg != "" {
			suffix = "@" + tg
		}
		var cols []string
		for _, col := range b.r.Columns {
			c := b.stats(cell, col, "perf.cycles"+suffix)
			in := b.stats(cell, col, "perf.instructions"+suffix)
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

// ---- perf report top symbols ----

func (b *builder) perfSymTables() {
	for _, cell := range b.set.Cells() {
		// overhead[target][symbol][column] -> values over reps
		type key struct{ target, sym string }
		vals := map[key]map[string][]float64{}
		reps := map[string]int{}
		var targets []string
		for i := range b.set.Samples {
			s := &b.set.Samples[i]
			if s.Cell != cell || len(s.Symbols) == 0 {
				continue
			}
			reps[s.Kernel]++
			for _, sym := range s.Symbols {
				k := key{cmp.Or(sym.Target, s.Labels["target"]), sym.Symbol}
				if !slices.Contains(targets, k.target) {
					targets = append(targets, k.target)
				}
				if vals[k] == nil {
					vals[k] = map[string][]float64{}
				}
				vals[k][s.Kernel] = append(vals[k][s.Kernel], sym.Overhead)
			}
		}
		if len(vals) == 0 {
			continue
		}
		sort.Strings(targets)
		// A symbol absent from a sample's top list counts as 0 there.
		median := func(k key, col string) float64 {
			v := slices.Clone(vals[k][col])
			for len(v) < reps[col] {
				v = append(v, 0)
			}
			if len(v) == 0 {
				return math.NaN()
			}
			return Summarize(v, false).Median
		}
		maxOverhead := func(k key) float64 {
			best := 0.0
			for _, col := range b.r.Columns {
				if m := median(k, col); !math.IsNaN(m) {
					best = max(best, m)
				}
			}
			return best
		}
		for _, tg := range targets {
			var syms []key
			for k := range vals {
				if k.target == tg {
					syms = append(syms, k)
				}
			}
			slices.SortFunc(syms, func(x, y key) int {
				return cmp.Or(-cmp.Compare(maxOverhead(x), maxOverhead(y)), cmp.Compare(x.sym, y.sym))
			})
			if len(syms) > b.opt.Top {
				syms = syms[:b.opt.Top]
			}
			t := &Table{Kind: KindPerfSyms, Title: "perf report " + cell + " " + tg,
				Context: fmt.Sprintf("perf report top %d, %s, target %s", b.opt.Top, cell, cmp.Or(tg, "-")), LabelHeader: []string{"symbol"}}
			for _, c := range b.r.Columns {
				t.Header = append(t.Header, b.colHeader(c))
			}
			for _, c := range b.r.Columns[1:] {
				h := "delta"
				if len(b.r.Columns) > 2 {
					h = c + " delta"
				}
				t.Header = append(t.Header, h)
			}
			for _, k := range syms {
				r := Row{Labels: []string{k.sym}}
				for _, col := range b.r.Columns {
					m := median(k, col)
					if math.IsNaN(m) {
						r.Cells = append(r.Cells, Cell{Text: "-"})
						continue
					}
					r.Cells = append(r.Cells, Cell{Text: fmt.Sprintf("%.2f%%", m), Value: ptr(m), Emulated: b.r.IsEmulated(col)})
				}
				base := median(k, b.r.Base)
				for _, col := range b.r.Columns[1:] {
					m := median(k, col)
					if math.IsNaN(m) || math.IsNaN(base) {
						r.Cells = append(r.Cells, Cell{Text: "-"})
						continue
					}
					r.Cells = append(r.Cells, Cell{Text: fmt.Sprintf("%+.2f", m-base), Value: ptr(m - base)})
				}
				t.Rows = append(t.Rows, r)
			}
			t.Notes = append(t.Notes, "overhead = median share of samples in percent; delta in percentage points vs "+b.r.Base+"; a symbol missing from a run's top list counts as 0")
			b.r.Tables = append(b.r.Tables, t)
		}
	}
}

// ---- benchstat-style comparison ----

func (b *builder) compareTables() {
	for _, key := range b.metricKeys() {
		if strings.HasPrefix(key, PerfPrefix) && len(b.opt.Metrics) == 0 {
			continue // shown by the perf stat tables
		}
		if IsDiagnostic(key) && !slices.Contains(b.opt.Metrics, key) {
			continue // shown by the harness and diagnostics table
		}
		m := metricOf(key)
		var cells []string
		for _, cell := range b.set.Cells() {
			for _, col := range b.r.Columns {
				if len(b.set.Values(cell, col, key)) > 0 {
					cells = append(cells, cell)
					break
				}
			}
		}
		if len(cells) == 0 {
			continue
		}
		t := &Table{Kind: KindCompare, Title: fmt.Sprintf("%s (%s, %s is better)", key, m.Unit, m.Better), Metric: key, Unit: m.Unit,
			LabelHeader: []string{key}}
		if m.Better == Neutral {
			t.Title = fmt.Sprintf("%s (%s)", key, m.Unit)
		}
		for i, c := range b.r.Columns {
			t.Header = append(t.Header, b.colHeader(c))
			if i > 0 {
				h := "vs base"
				if len(b.r.Columns) > 2 {
					h = "vs " + b.r.Base
				}
				t.Header = append(t.Header, h, "p, n")
			}
		}
		note := func(msg string) int {
			if i := slices.Index(t.Notes, msg); i >= 0 {
				return i
			}
			t.Notes = append(t.Notes, msg)
			return len(t.Notes) - 1
		}
		// With one column there is no "p, n" column: the cells say n.
		withN := len(b.r.Columns) == 1
		ranges, cis := false, false
		for _, cell := range cells {
			r := Row{Labels: []string{cell}}
			for i, col := range b.r.Columns {
				st := b.stats(cell, col, key)
				c := Cell{Text: "-"}
				if st.N > 0 {
					c = Cell{Text: spreadText(&st, withN), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)}
					if st.CIFinite() {
						cis = true
					} else {
						ranges = true
					}
					for _, w := range st.Warnings {
						if strings.Contains(w, "confidence interval") {
							continue // the range note below says it once
						}
						c.Notes = append(c.Notes, note(w))
					}
				}
				r.Cells = append(r.Cells, c)
				if i == 0 {
					continue
				}
				if st.N == 0 || len(b.set.Values(cell, b.r.Base, key)) == 0 {
					r.Cells = append(r.Cells, Cell{Text: "-"}, Cell{Text: "-"})
					continue
				}
				d := b.delta(cell, col, key)
				dc := Cell{Text: d.DeltaString(), Delta: &d}
				if d.Significant {
					dc.Value = ptr(d.Pct)
				}
				for _, w := range d.Warnings {
					dc.Notes = append(dc.Notes, note(w))
				}
				r.Cells = append(r.Cells, dc, Cell{Text: d.PString(), Value: ptr(d.P)})
			}
			t.Rows = append(t.Rows, r)
		}
		// Legends come after the numbered notes cells refer to.
		if cis {
			t.Notes = append(t.Notes, fmt.Sprintf("± = %.0f%% confidence interval of the median", 100*Confidence))
		}
		if ranges {
			t.Notes = append(t.Notes, fmt.Sprintf("(lo..hi) = min..max of the runs: fewer than %d runs give no %.0f%% confidence interval of the median", minCIRuns, 100*Confidence))
		}
		b.r.Tables = append(b.r.Tables, t)
	}
}

// minCIRuns is the smallest sample for which benchmath gives a finite
// confidence interval of the median at level Confidence.
const minCIRuns = 6

// spreadText is the median with its honest spread: benchstat's
// "median ± CI%" when the confidence interval is finite, else the range
// of the runs, "11.88k (n=2, 9.70..14.1k)" (n only when withN).
func spreadText(st *Stats, withN bool) string {
	if st.CIFinite() {
		ci := "0%"
		if st.Median != 0 {
			ci = fmt.Sprintf("%.0f%%", 100*math.Max(st.Hi/st.Median-1, 1-st.Lo/st.Median))
		}
		return si(st.Median) + " ± " + ci
	}
	var in []string
	if withN {
		in = append(in, fmt.Sprintf("n=%d", st.N))
	}
	if st.N > 1 {
		// 3 significant digits, more when they would hide the spread.
		lo, hi := siDigits(st.Min, 3), siDigits(st.Max, 3)
		for d := 4; lo == hi && st.Min != st.Max && d <= 6; d++ {
			lo, hi = siDigits(st.Min, d), siDigits(st.Max, d)
		}
		if p := siPrefix(hi); p != "" && siPrefix(lo) == p {
			lo = strings.TrimSuffix(lo, p)
		}
		in = append(in, lo+".."+hi)
	}
	if len(in) == 0 {
		return si(st.Median)
	}
	return si(st.Median) + " (" + strings.Join(in, ", ") + ")"
}

// siDigits is si with the given number of significant digits.
func siDigits(v float64, digits int) string {
	a := math.Abs(v)
	for _, p := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= p.f {
			x := v / p.f
			return strconv.FormatFloat(x, 'f', max(0, digits-len(strconv.FormatFloat(math.Abs(math.Trunc(x)), 'f', 0, 64))), 64) + p.s
		}
	}
	if a == math.Trunc(a) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', digits, 64)
}

// siPrefix is the SI prefix letter s ends with, or "".
func siPrefix(s string) string {
	if s != "" && strings.ContainsRune("kMGT", rune(s[len(s)-1])) {
		return s[len(s)-1:]
	}
	return ""
}

// ---- harness and diagnostics ----

// harnessTable shows the Diagnostics metrics: one row per cell (and
// column), one column per metric, medians.
func (b *builder) harnessTable() {
	have := b.metricKeys()
	var keys []string
	for _, k := range Diagnostics {
		if slices.Contains(have, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	multi := len(b.r.Columns) > 1
	t := &Table{Kind: KindHarness, Title: "harness and diagnostics", LabelHeader: []string{"cell"}}
	if multi {
		t.LabelHeader = append(t.LabelHeader, b.r.By)
	} else {
		t.Title += ", " + b.colHeader(b.r.Columns[0])
	}
	var legend []string
	for _, k := range keys {
		h := diagnosticHeaders[k]
		t.Header = append(t.Header, h[0])
		legend = append(legend, h[0]+" = "+k+" "+h[1])
	}
	var cells []string
	for _, cell := range b.set.Cells() {
		for _, col := range b.r.Columns {
			row := Row{Labels: []string{cell}}
			if multi {
				row.Labels = append(row.Labels, b.colHeader(col))
			}
			found := false
			for _, k := range keys {
				st := b.stats(cell, col, k)
				if st.N == 0 {
					row.Cells = append(row.Cells, Cell{Text: "-"})
					continue
				}
				found = true
				row.Cells = append(row.Cells, Cell{Text: diagnosticText(k, st.Median), Value: ptr(st.Median), Stats: &st, Emulated: b.r.IsEmulated(col)})
			}
			if found {
				t.Rows = append(t.Rows, row)
				if !slices.Contains(cells, cell) {
					cells = append(cells, cell)
				}
			}
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	t.Notes = append(t.Notes, fmt.Sprintf("medians of %s runs; %s", b.repsRange(cells), strings.Join(legend, "; ")))
	if multi && len(b.r.Emulated) > 0 {
		t.Notes = append(t.Notes, emulatedNote)
	}
	b.r.Tables = append(b.r.Tables, t)
}

// diagnosticHeaders are the harness table's short column headers and what
// they mean.
var diagnosticHeaders = map[string][2]string{
	"harness_cpu_frac":     {"harness", "(its own CPU, % of a core)"},
	"cell_overhead_s":      {"overhead", "(setup + teardown)"},
	"generator_busy_frac":  {"gen busy", "(< 90%: may not saturate)"},
	"iperf3_host_cpu_frac": {"iperf3 CPU", "(host CPU of the sender)"},
	"qdisc_drops":          {"qdisc drops", "(tap root qdisc)"},
	"tx_packets":           {"tx pkts", "(in the window)"},
	"tap_tx_pps":           {"tap tx", "(cross-check of tx_pps)"},
}

// diagnosticText formats a harness table value.
func diagnosticText(key string, v float64) string {
	switch metricOf(key).Unit {
	case "fraction":
		return num(100*v) + "%"
	case "s":
		return num(v) + " s"
	case "pps":
		return rateText("pps", v)
	case "count":
		return si(v)
	}
	return num(v)
}
