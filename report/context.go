package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/workload"
)

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

// labels names what the tables show: the row axis and a row's label, a
// cell's context, column headers and their legends, the notes every
// table kind shares, and the groups of cells a table draws. It reads the
// builder's set, index and report; the numbers are the builder's.
type labels struct {
	b *builder
	// only, when set, is the one column a table shows (a Versus table
	// is one kernel's): the other columns' own axes are not its context.
	only string
}

// rowAxis is the axis whose values group the rows of thread tables: the
// backend, or the kernel when the backend is the column axis.
func (lb labels) rowAxis() string {
	if lb.b.opt.By == "backend" {
		return "kernel"
	}
	return "backend"
}

func (lb labels) rowLabel(s *results.Sample) string {
	if ax := lb.rowAxis(); ax != "backend" {
		return s.Axes[ax]
	}
	return backendName(backendOf(s))
}

func backendOf(s *results.Sample) string {
	if b, ok := s.Axes["backend"]; ok {
		return b
	}
	b, _, _ := strings.Cut(s.Cell, "/")
	return b
}

// groupKey is the cell's axes minus the listed ones, as a stable string.
func groupKey(s *results.Sample, without ...string) string {
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

// generatorOf is the sample's generator: its label, else its axis.
func generatorOf(s *results.Sample) string {
	if g := s.Labels["generator"]; g != "" {
		return g
	}
	return s.Axes["generator"]
}

// threadsKeys are the keys (labels, or axes ending ".KEY") that count a
// workload's threads or streams: "threads", "parallel".
func threadsKeys() []string {
	var out []string
	tables, _ := workload.Tables()
	for _, t := range tables {
		if t.ThreadsKey != "" && !slices.Contains(out, t.ThreadsKey) {
			out = append(out, t.ThreadsKey)
		}
	}
	return out
}

// threadsOf is how many threads sent sample s's traffic: its "threads"
// label, else its per-thread results, else the axis of tab's ThreadsKey
// (a lab's pktgen samples carry the axis and the threads, not the label).
func threadsOf(s *results.Sample, tab workload.Table) int {
	if n, _ := strconv.Atoi(s.Labels["threads"]); n > 0 {
		return n
	}
	if len(s.Threads) > 1 {
		return len(s.Threads)
	}
	if tab.ThreadsKey == "" {
		return 0
	}
	// The generator's own axis first, then the key alone, then any
	// "....KEY" axis in key order: never the map's random order.
	for _, k := range []string{"generator." + s.Axes["generator"] + "." + tab.ThreadsKey, tab.ThreadsKey} {
		if v, ok := s.Axes[k]; ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Axes)) {
		if strings.HasSuffix(k, "."+tab.ThreadsKey) {
			n, _ := strconv.Atoi(s.Axes[k])
			return n
		}
	}
	return 0
}

// threadsNoun names the threads of workload gen: "threads", "streams".
func threadsNoun(gen string) string {
	if w, ok := workload.Lookup(gen); ok {
		if t, ok := w.(workload.Tabler); ok && t.Table().ThreadsNoun != "" {
			return t.Table().ThreadsNoun
		}
	}
	return "threads"
}

// context describes a group of cells for a table header.
func (lb labels) context(s *results.Sample, withSize bool) string {
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
	gen := generatorOf(s)
	if gen == "" {
		gen = "benchmark"
	}
	if w := workload.NameOf(gen); w != "" {
		gen = w // "pktgen-t4" in a benchmark name is pktgen
	}
	head := gen
	if g := l("guest"); g != "" {
		head += " to " + g
	}
	parts = append(parts, head)
	if cpu := lb.cpus(); cpu != "" {
		parts = append(parts, cpu)
	}
	if c := l("count"); c != "" && c != "0" {
		if n, err := strconv.ParseFloat(c, 64); err == nil {
			c = units.Count(n)
		}
		parts = append(parts, c+" packets")
	} else if d := l("duration"); d != "" {
		parts = append(parts, d)
	}
	t := l(threadsKeys()...)
	if t == "" && len(s.Threads) > 0 {
		t = strconv.Itoa(len(s.Threads))
	}
	if t != "" {
		unit := threadsNoun(gen)
		if t == "1" {
			unit = strings.TrimSuffix(unit, "s")
		}
		parts = append(parts, t+" "+unit)
	}
	if ps := l("pkt_size"); ps != "" && withSize {
		parts = append(parts, units.Bytes(ps)+" packets")
	}
	for _, ck := range contextKeys(gen) {
		if v, ok := s.Axes["generator."+gen+"."+ck.Key]; ok {
			if f := ck.Format(v); f != "" { // "": the default, not said
				parts = append(parts, f)
			}
		}
	}
	parts = append(parts, lb.pins(s)...)
	if q := l("qdisc"); q != "" {
		parts = append(parts, "qdisc "+q)
	}
	// Axes that tell this table from the report's others and are not said
	// above (pktgen mode, xmit mode, burst, queues, ...): "mode script".
	for _, k := range lb.b.varying {
		if v := s.Axes[k]; v != "" {
			parts = append(parts, k[strings.LastIndex(k, ".")+1:]+" "+v)
		}
	}
	return strings.Join(append(parts, lb.columnAxesText(false)...), ", ")
}

// pins is pinText of s, then the columns' own pins (Report.ColumnAxes),
// each naming its column: "vhost pinned to CPU 0 (tap+vhost)". The
// row's "unpinned" (its generator and vCPUs) is left out beside a
// column's pin, as pinText leaves it out beside a pin of the cell's.
func (lb labels) pins(s *results.Sample) []string {
	own, cols := pinText(s), lb.columnAxesText(true)
	if len(cols) > 0 && slices.Equal(own, []string{"unpinned"}) {
		own = nil
	}
	return append(own, cols...)
}

// columnAxesText describes Report.ColumnAxes, pin axes or the others,
// in column order, each part naming its column: "vhost pinned to CPU 0
// (tap+vhost)", "txqueuelen 1000 (tap)".
func (lb labels) columnAxesText(pin bool) []string {
	var out []string
	for _, c := range lb.b.r.Columns {
		if lb.only != "" && c != lb.only {
			continue
		}
		ax := lb.b.r.ColumnAxes[c]
		for _, k := range sortedKeys(ax) {
			what, isPin := strings.CutPrefix(k, "pin.")
			switch {
			case isPin != pin:
			case !isPin:
				out = append(out, k[strings.LastIndex(k, ".")+1:]+" "+ax[k]+" ("+c+")")
			case ax[k] == "none":
				out = append(out, what+" unpinned ("+c+")")
			default:
				out = append(out, what+" pinned to CPU "+ax[k]+" ("+c+")")
			}
		}
	}
	return out
}

// cpus names the CPU the report's samples ran on: one model when every
// kernel's environment names the same one, else each in order ("AMD EPYC
// / Xeon"). A table comparing runs from two machines named
// only its first column's CPU, as if both had run there.
func (lb labels) cpus() string {
	var names []string
	for _, k := range lb.b.r.EnvKeys() {
		if env := lb.b.set.Env[k]; env != nil && env.CPUModel != "" {
			if n := shortCPU(env.CPUModel); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return strings.Join(names, " / ")
}

// contextKeys are the keys the table of workload gen states in its header
// (workload.Table.Context).
func contextKeys(gen string) []workload.ContextKey {
	if w, ok := workload.Lookup(gen); ok {
		if t, ok := w.(workload.Tabler); ok {
			return t.Table().Context
		}
	}
	return nil
}

// described are the axes context states in its own words, or that are
// rows or columns of the tables.
func (lb labels) described(k string) bool {
	switch k {
	case "backend", "generator", "qdisc", "kernel", lb.rowAxis():
		return true
	}
	if rest, ok := strings.CutPrefix(k, "generator."); ok {
		gen, key, _ := strings.Cut(rest, ".")
		for _, ck := range contextKeys(gen) {
			if ck.Key == key {
				return true
			}
		}
	}
	if strings.HasPrefix(k, "pin.") || strings.HasPrefix(k, "guest") || isVersusAxis(k) {
		return true
	}
	for _, suf := range append(threadsKeys(), "pkt_size", "count", "duration") {
		if k == suf || strings.HasSuffix(k, "."+suf) {
			return true
		}
	}
	return false
}

// varyingAxes are the axis keys with more than one value in the set that
// context does not describe otherwise, sorted.
func (lb labels) varyingAxes() []string {
	vals := map[string]map[string]bool{}
	for i := range lb.b.set.Samples {
		for k, v := range lb.b.set.Samples[i].Axes {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][v] = true
		}
	}
	var out []string
	for _, k := range sortedKeys(vals) {
		if len(vals[k]) > 1 && !lb.described(k) {
			out = append(out, k)
		}
	}
	return out
}

// pinText describes CPU pinning from Labels["pin"] ("vhost:0"; present
// and empty = unpinned) or the runner's "pin.<target>" axes ("none" =
// unpinned).
func pinText(s *results.Sample) []string {
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
// "Intel(R) Core(TM) i5-6300HQ CPU @ 2.30GHz" -> "Core i5-6300HQ". QEMU's
// own models keep their "CPU" and lose their model version: "QEMU TCG CPU
// version 2.5+" -> "QEMU TCG CPU", not "QEMU TCG version 2.5+", which
// reads as a QEMU version.
func shortCPU(m string) string {
	if strings.HasPrefix(m, "QEMU ") {
		if i := strings.Index(m, " version "); i >= 0 {
			m = m[:i]
		}
		return strings.Join(strings.Fields(m), " ")
	}
	m = strings.NewReplacer("(R)", "", "(TM)", "", "(tm)", "").Replace(m)
	m = strings.NewReplacer("Intel ", "", " CPU", "", " Processor", "").Replace(m)
	if i := strings.Index(m, " @ "); i >= 0 {
		m = m[:i]
	}
	return strings.Join(strings.Fields(m), " ")
}

// changeHeaders are the headers of a table's change columns, one per
// column after the first (the base): word ("change", "delta",
// "speedup") alone when there is one, else "COLUMN word".
func (lb labels) changeHeaders(word string) []string {
	var out []string
	for _, c := range lb.b.r.Columns[1:] {
		h := word
		if len(lb.b.r.Columns) > 2 {
			h = c + " " + word
		}
		out = append(out, h)
	}
	return out
}

func (lb labels) colHeader(col string) string {
	var marks []string
	if lb.b.r.IsEmulated(col) && !lb.b.r.AllEmulated() {
		marks = append(marks, "TCG")
	}
	if lb.b.r.IsNested(col) && lb.b.r.MixedNesting() {
		marks = append(marks, "nested")
	}
	if len(marks) == 0 {
		return col
	}
	return col + " (" + strings.Join(marks, ", ") + ")"
}

// The legends of the columns' marks. A mark every column shares would say
// nothing about a column and widen every header: it is left out of the
// headers (colHeader) and said once, by allEmulatedNote or allNestedNote.
const (
	emulatedNote    = "(TCG) = emulated: QEMU without KVM; the numbers measure the emulator, not the kernel"
	allEmulatedNote = "every column ran under QEMU TCG, without KVM: the numbers measure the emulator, not the kernel"
)

// sayEmulation gives t the emulation legend when any of its columns ran
// under TCG and t does not say so yet: every table says whether its
// numbers were measured under emulation, as a table is quoted alone.
// With some columns emulated and no "(TCG)" mark in t's header (perf
// stat's tables), the legend names them.
func (lb labels) sayEmulation(t *Table) {
	r := lb.b.r
	note := ""
	switch {
	case r.AllEmulated():
		note = allEmulatedNote
	case len(r.Emulated) == 0:
		return
	case slices.ContainsFunc(t.Header, func(h string) bool { return strings.Contains(h, "(TCG") }):
		note = emulatedNote
	default:
		note = "emulated (QEMU TCG, no KVM): " + strings.Join(r.Emulated, ", ") + "; their numbers measure the emulator, not the kernel"
	}
	if !slices.Contains(t.Notes, note) {
		t.Notes = append(t.Notes, note)
	}
}

// nestedNote is the legend of a nested column, allNestedNote says that
// every column is; mixedNestingNote warns that a table compares a
// datapath inside a VM with the host's own.
const (
	nestedNote       = "(nested) = a lab kernel: its datapath ran inside a lab VM, the guest is a VM inside that VM"
	allNestedNote    = "every column is a lab kernel: its datapath ran inside a lab VM, the guest is a VM inside that VM"
	mixedNestingNote = "WARNING: the columns differ in nesting (lab kernels run their datapath inside a VM, the running kernel on the host): a change between them includes the nesting overhead, not only the kernels' difference"
)

// emulatedLegend and nestedLegend are the legends of column col's marks:
// "" when it has none.
func (lb labels) emulatedLegend(col string) string {
	switch {
	case !lb.b.r.IsEmulated(col):
		return ""
	case lb.b.r.AllEmulated():
		return allEmulatedNote
	}
	return emulatedNote
}

func (lb labels) nestedLegend(col string) string {
	switch {
	case !lb.b.r.IsNested(col):
		return ""
	case lb.b.r.MixedNesting():
		return nestedNote
	}
	return allNestedNote
}

// nestingNotes are the nested legend and the mixed-nesting warning
// (columnNotes without the emulation legend).
func (lb labels) nestingNotes() []string {
	var out []string
	switch {
	case lb.b.r.MixedNesting():
		out = append(out, nestedNote, mixedNestingNote)
	case len(lb.b.r.Nested) > 0:
		out = append(out, allNestedNote)
	}
	return out
}

// columnNotes are the legends of the columns' marks: emulated (TCG),
// nested, and the warning when the columns differ in nesting.
func (lb labels) columnNotes() []string {
	var out []string
	switch {
	case lb.b.r.AllEmulated():
		out = append(out, allEmulatedNote)
	case len(lb.b.r.Emulated) > 0:
		out = append(out, emulatedNote)
	}
	return append(out, lb.nestingNotes()...)
}

// runsNote is a thread or versus table's first note: the runs behind each
// cell and the largest spread of its first row's metric, or "1 run per
// cell" when there is no spread to tell.
func (lb labels) runsNote(cells []string, label string, maxCV float64) string {
	r := lb.repsRange(cells)
	if r == "1" {
		return "1 run per cell"
	}
	return fmt.Sprintf("median of %s runs per cell; %s varies by at most %.1f%% (CV)", r, label, maxCV*100)
}

// medianOf is "median of N runs" (or of "3-5"), "1 run" when every cell
// has one: a note said "median of 1 runs per cell".
func (lb labels) medianOf(cells []string) string {
	if r := lb.repsRange(cells); r != "1" {
		return "median of " + r + " runs"
	}
	return "1 run"
}

// repsRange is the runs per cell of cells in every column: "5" or "3-5".
func (lb labels) repsRange(cells []string) string {
	lo, hi := math.MaxInt, 0
	for _, cell := range cells {
		for _, col := range lb.b.r.Columns {
			if n := len(lb.b.idx.byCol[cellCol{cell, col}]); n > 0 {
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
func (lb labels) groupCells(keep func(*results.Sample) bool, without ...string) (map[string][]string, []string) {
	groups := map[string][]string{}
	var order []string
	seen := map[string]bool{}
	for i := range lb.b.set.Samples {
		s := &lb.b.set.Samples[i]
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

// rowGroup is one thread-style table's cells: sig is the axes its rows
// share (the cells' axes without the row axis), full the cell that has
// all of them.
type rowGroup struct {
	key   string // sig as a stable string (the table's title)
	sig   map[string]string
	full  string
	cells []string
	first int // earliest appearance of a member cell
}

// groupRows groups the cells whose samples pass keep into thread-style
// tables: one per combination of the axes other than the row axis, where
// an axis a cell lacks does not split it from the others. A plain TAP
// cell has no pin.vhost (it has no vhost worker), so it joins the
// TAP+vhost-net cells of every pin.vhost value as their TAP row; a sample
// that lacks an axis others have (an older run, a benchfmt file) joins
// the groups it agrees with on the axes it has. Tables come in order of
// their cells' first appearance; rows (cells) in backend order, TAP
// first, when the backend is the row axis.
func (lb labels) groupRows(keep func(*results.Sample) bool, row string) []*rowGroup {
	type cand struct {
		cell string
		axes map[string]string
		at   int
	}
	var cands []cand
	seen := map[string]bool{}
	for i := range lb.b.set.Samples {
		s := &lb.b.set.Samples[i]
		if seen[s.Cell] || !keep(s) {
			continue
		}
		seen[s.Cell] = true
		axes := map[string]string{}
		for k, v := range s.Axes {
			if k != row {
				axes[k] = v
			}
		}
		if len(s.Axes) == 0 {
			axes["cell"] = s.Cell // no axes (benchfmt without key=value parts): its own table
		}
		cands = append(cands, cand{s.Cell, axes, len(cands)})
	}
	// Cells with more axes first: they define the tables; cells that lack
	// some join every table they agree with.
	order := slices.Clone(cands)
	slices.SortStableFunc(order, func(a, b cand) int { return len(b.axes) - len(a.axes) })
	//
	// A cell joins the groups whose axes include its own. To
	// find them without comparing every cell with every group (quadratic
	// with thousands of cells), the groups are indexed by their values on
	// each set of axis names some cell has: a cell then looks its own
	// values up. Cells have few distinct sets of axis names.
	var groups []*rowGroup
	type projection struct {
		names []string
		byKey map[string][]*rowGroup // the groups' values on names -> groups, in creation order
	}
	projections := map[string]*projection{}
	project := func(axes map[string]string, names []string) (string, bool) {
		var k strings.Builder
		for _, n := range names {
			v, ok := axes[n]
			if !ok {
				return "", false
			}
			k.WriteString(n + "\x00" + v + "\x00")
		}
		return k.String(), true
	}
	add := func(p *projection, g *rowGroup) {
		if k, ok := project(g.sig, p.names); ok {
			p.byKey[k] = append(p.byKey[k], g)
		}
	}
	for _, c := range order {
		names := sortedKeys(c.axes)
		id := strings.Join(names, "\x00")
		p := projections[id]
		if p == nil {
			p = &projection{names: names, byKey: map[string][]*rowGroup{}}
			for _, g := range groups {
				add(p, g)
			}
			projections[id] = p
		}
		k, _ := project(c.axes, names)
		matches := p.byKey[k]
		for _, g := range matches {
			g.cells = append(g.cells, c.cell)
			g.first = min(g.first, c.at)
		}
		if len(matches) == 0 {
			g := &rowGroup{key: axesString(c.axes), sig: c.axes, full: c.cell, cells: []string{c.cell}, first: c.at}
			groups = append(groups, g)
			for _, p := range projections {
				add(p, g)
			}
		}
	}
	at := map[string]int{}
	for _, c := range cands {
		at[c.cell] = c.at
	}
	for _, g := range groups {
		slices.SortStableFunc(g.cells, func(x, y string) int {
			if row == "backend" {
				if d := backendRank(lb.b.cellAxes(x)["backend"]) - backendRank(lb.b.cellAxes(y)["backend"]); d != 0 {
					return d
				}
			}
			return at[x] - at[y]
		})
	}
	slices.SortStableFunc(groups, func(x, y *rowGroup) int { return x.first - y.first })
	return groups
}

func axesString(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// backendRank orders rows as the netdev thread's tables do: TAP, then
// TAP+vhost-net, then anything else.
func backendRank(b string) int {
	switch b {
	case "tap":
		return 0
	case "tap+vhost":
		return 1
	}
	return 2
}
