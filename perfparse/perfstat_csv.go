package perfparse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// csvSep returns the -x separator of perf stat CSV lines, or "". perf
// takes any string (-x, -x';' or -x '|;', -x ' : '): the candidates are
// the punctuation after a number in the first lines, and the one that
// reads the most lines as counters wins (";" splits -x ';;' lines into
// empty units and CPU labels read as events, which do not count; of two
// that read as many, the shorter: "," over ",," for "884,,cache-misses").
// Separators of spaces only are not tried: they are the text format.
func csvSep(lines ...string) string {
	var content []string
	for _, l := range lines {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
			content = append(content, s)
		}
		if len(content) == 16 {
			break
		}
	}
	best, bestN := "", 0
	for _, sep := range sepCandidates(content) {
		n := 0
		for _, s := range content {
			if csvLineFits(s, sep) {
				n++
			}
		}
		if n > bestN {
			best, bestN = sep, n
		}
	}
	return best
}

// sepCandidates returns the strings of 1 to 4 punctuation or space
// characters that follow a number (or "<not counted>") in the lines.
func sepCandidates(lines []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range lines {
		for i := 0; i < len(s); i++ {
			if !(isDigit(s[i]) || s[i] == '>') || i+1 < len(s) && (isDigit(s[i+1]) || s[i+1] == '.') {
				continue // not the end of a number
			}
			for k := i + 1; k < len(s) && k <= i+4 && isSepByte(s[k]); k++ {
				// Spaces align the text layout, but a tab is only
				// ever -x's ("-x $'\t'", as tab-separated tools
				// want it).
				if c := s[i+1 : k+1]; !seen[c] && (strings.TrimSpace(c) != "" || c == "\t") {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// isSepByte reports whether c can be part of a -x separator as this
// parser detects it: not a letter, digit, or a character of numbers and
// event names.
func isSepByte(c byte) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || strings.IndexByte("._<>-/=@{}", c) >= 0)
}

// csvFields splits a -x line at sep and rejoins the event names it split.
func csvFields(s, sep string) []string {
	return joinEventTerms(strings.Split(s, sep), sep)
}

// csvLineFits reports whether s, split at sep, reads as a counter line
// with a plausible unit and event name: one that does not hold a further
// field (a longer separator's half, e.g. ";msec" for -x '|;') or a
// place label (CPU0, read as the event where -x ';;' was split at ';').
func csvLineFits(s, sep string) bool {
	f := csvFields(s, sep)
	if vi := csvValueIndex(f); vi >= 0 {
		u := strings.TrimSpace(f[vi+1])
		if (u == "" || reUnitField().MatchString(u)) && csvEventFits(f, vi+2, sep) {
			return true
		}
	}
	vi := csvOldValueIndex(f)
	return vi >= 0 && csvEventFits(f, vi+1, sep)
}

// csvEventFits reports whether f[ei] (rejoined where -x: split it) is a
// plausible event name.
func csvEventFits(f []string, ei int, sep string) bool {
	f = joinColonEvent(f, ei, sep)
	ev := strings.TrimSpace(f[ei])
	if !isEventName(ev) || knownUnits[ev] || reAggrID().MatchString(ev) || strings.HasPrefix(ev, "CPU") && isPlainNum(ev[3:]) {
		return false
	}
	for _, piece := range strings.FieldsFunc(ev, func(r rune) bool { return strings.ContainsRune(sep, r) }) {
		if isPlainNum(piece) {
			return false // "context-switches,42719050" for -x ',,'
		}
	}
	return true
}

// reUnitField is a unit perf prints between value and event ("msec",
// "Joules", "MiB", "%" units of some PMUs).
var reUnitField = lazyRegexp(`^[A-Za-z%][A-Za-z0-9%/ ]*$`)

// reEventSuffix is what follows a ':' inside an event name: modifiers
// ("cycles:u", "cpu-clock:ppp") or a tracepoint's name
// ("sched:sched_switch").
var reEventSuffix = lazyRegexp(`^[A-Za-z_][\w.-]*$`)

// joinColonEvent rejoins the event f[ei] that a separator made of ':'
// split ("context-switches:u" read as "context-switches", "u" with -x:):
// a non-numeric field after the event is its rest, where runtime would
// follow. (A -G cgroup after the event would be joined too; perf's -x:
// output cannot tell the two apart.)
func joinColonEvent(f []string, ei int, sep string) []string {
	if strings.Trim(sep, " ") != ":" {
		return f
	}
	for n := 0; n < 2 && ei+1 < len(f); n++ {
		next := strings.TrimSpace(f[ei+1])
		if !reEventSuffix().MatchString(next) {
			break
		}
		j := append(append([]string{}, f[:ei]...), f[ei]+sep+f[ei+1])
		f = append(j, f[ei+2:]...)
	}
	return f
}

// csvValueIndex finds the counter-value field: a number (or <not ...>)
// followed by a unit (non-numeric, maybe empty) and an event name.
func csvValueIndex(f []string) int {
	for i := 0; i+2 < len(f) && i < 4; i++ {
		v := strings.TrimSpace(f[i])
		if !(isNotValue(v) || isPlainNum(v)) {
			continue
		}
		u, ev := strings.TrimSpace(f[i+1]), strings.TrimSpace(f[i+2])
		if isPlainNum(u) || isNotValue(u) || ev == "" || isPlainNum(ev) || strings.ContainsAny(ev, " ") && !strings.Contains(ev, "/") {
			continue
		}
		return i
	}
	return -1
}

// reAggrID matches the aggregation labels of --per-socket ("S0"), -die
// ("S0-D0"), -core ("S0-D0-C1"), -cache ("S0-D0-L3-ID0"), -cluster (perf
// 6.7: "S56-D0-CLS158") and -node ("N0").
var reAggrID = lazyRegexp(`^(S\d+(-D\d+)?(-C\d+|-CLS\d+|-L\d+-ID\d+)?|N\d+|D\d+|C\d+)$`)

func parsePerfStatCSV(lines []string) (*PerfStat, error) {
	if sep := metricOnlySep(lines); sep != "" {
		return parsePerfStatMetricOnly(lines, sep)
	}
	st := &PerfStat{Format: "csv", Rows: []PerfStatRow{}}
	sep := ""
	noUnit := false
	for i, l := range lines {
		ln := i + 1
		s := strings.TrimSpace(l)
		if err := startedAgain(s, len(st.Rows), ln); err != nil {
			return nil, err
		}
		if s == "" || strings.HasPrefix(s, "#") {
			continue // "# started on ..." from -o
		}
		if sep == "" {
			if sep = csvSep(lines[i:]...); sep == "" {
				return nil, errorf(ln, "perf stat -x: cannot find value,unit,event fields in %q", clip(s))
			}
			noUnit = csvNoUnitColumn(lines[i:], sep)
		}
		if err := st.addCSVLine(strings.Split(s, sep), sep, noUnit, ln); err != nil {
			return nil, err
		}
	}
	if len(st.Rows) == 0 {
		return nil, errorf(0, "perf stat -x: no counter lines in the input")
	}
	return st, nil
}

// addCSVLine adds one -x line: a counter row, or a metric or metric group
// line. noUnit is the layout of perf before 3.13, without the unit field.
func (st *PerfStat) addCSVLine(f []string, sep string, noUnit bool, ln int) error {
	f = joinEventTerms(f, sep)
	vi, ui := csvValueIndex(f), 1 // ui: fields between value and event
	if noUnit {
		vi, ui = csvOldValueIndex(f), 0
	}
	if vi >= 0 {
		f = joinColonEvent(f, vi+1+ui, sep)
	}
	if vi < 0 && st.addCSVNonCounter(f) {
		return nil
	}
	if vi < 0 {
		want := fmt.Sprintf("value%sunit%sevent", sep, sep)
		if noUnit {
			want = fmt.Sprintf("value%sevent (perf before 3.13)", sep)
		}
		return errorf(ln, "perf stat -x: cannot find %s fields in %q", want, clip(strings.Join(f, sep)))
	}
	row := PerfStatRow{Event: strings.TrimSpace(f[vi+1+ui]), Supported: true, Counted: true, Multiplex: 1}
	row.setCSVPlace(f[:vi])
	unit := ""
	if ui == 1 {
		unit = strings.TrimSpace(f[vi+1])
	}
	if unit == "" && isClockEvent(row.Event) {
		unit = "msec" // perf printed clocks in msec before it printed their unit
	}
	if err := row.setRaw(f[vi], unit, ln); err != nil {
		return err
	}
	tail := f[vi+2+ui:]
	if len(tail) > 0 && isCgroupName(strings.TrimSpace(tail[0])) && !isPlainNum(strings.TrimSpace(tail[0])) {
		row.Cgroup, tail = strings.TrimSpace(tail[0]), tail[1:] // -G: value,unit,event,cgroup,...
	}
	if err := row.setCSVTail(tail, sep, ln); err != nil {
		return err
	}
	st.Rows = append(st.Rows, row)
	return nil
}

// setCSVPlace reads the fields before the value: the -I timestamp (or
// "summary"), then a CPU, aggregation or thread label and the number of
// CPUs aggregated.
func (row *PerfStatRow) setCSVPlace(pre []string) {
	for k := range pre {
		pre[k] = strings.TrimSpace(pre[k])
	}
	if len(pre) > 0 && isPlainNum(pre[0]) && strings.Contains(pre[0], ".") {
		iv, _ := strconv.ParseFloat(pre[0], 64)
		row.IntervalS = &iv
		pre = pre[1:]
	} else if len(pre) > 0 && pre[0] == "summary" {
		pre = pre[1:] // -I --summary: the totals, in the timestamp's place
	}
	if len(pre) == 0 {
		return
	}
	label := pre[0]
	if reAggrID().MatchString(label) || strings.HasPrefix(label, "CPU") && isPlainNum(label[3:]) {
		row.CPU = label
		if len(pre) > 1 {
			row.AggrCPUs, _ = strconv.Atoi(pre[1])
		}
		return
	}
	row.Thread, row.TID = label, threadTID(label)
}

var (
	// reTermsOpen is a PMU event cut at a separator inside its terms
	// ("cpu/event=0x3c"), reTerm a further term ("umask=0x0") and
	// reTermsClose the last one with the closing slash and modifiers
	// ("period=1/u").
	reTermsOpen  = lazyRegexp(`^[A-Za-z_][\w.-]*/[A-Za-z_][\w.-]*(=[^/]*)?$`)
	reTerm       = lazyRegexp(`^[A-Za-z_][\w.-]*(=[^/]*)?$`)
	reTermsClose = lazyRegexp(`^[A-Za-z_][\w.-]*(=[^/]*)?/[A-Za-z:]*$`)
)

// joinEventTerms rejoins an event name that -x split at its own
// separator: perf prints "cpu/event=0x3c,umask=0x0/" as it is, so with
// -x, the fields "cpu/event=0x3c" and "umask=0x0/" are one event.
func joinEventTerms(f []string, sep string) []string {
	out := make([]string, 0, len(f))
	for i := 0; i < len(f); i++ {
		if reTermsOpen().MatchString(strings.TrimSpace(f[i])) {
			if j := termsEnd(f, i+1); j > i {
				out = append(out, strings.Join(f[i:j+1], sep))
				i = j
				continue
			}
		}
		out = append(out, f[i])
	}
	return out
}

// termsEnd returns the index of the field closing the terms opened
// before f[from], or -1 when no such field follows (e.g. the open field
// was a cgroup such as "system.slice/sshd.service"). A term with a value
// must be among them, so that cgroups are never joined.
func termsEnd(f []string, from int) int {
	eq := strings.Contains(f[from-1], "=")
	for j := from; j < len(f); j++ {
		t := strings.TrimSpace(f[j])
		eq = eq || strings.Contains(t, "=")
		switch {
		case reTermsClose().MatchString(t) && eq:
			return j
		case !reTerm().MatchString(t):
			return -1
		}
	}
	return -1
}

// csvOldValueIndex finds the value of a -x line of perf 2.6.37 to 3.12,
// which printed no unit field: [TIME,][CPUn, or AGGR,NR,]VALUE,EVENT
// [,CGROUP][,NOISE%] (builtin-stat.c's nsec_printout and abs_printout).
func csvOldValueIndex(f []string) int {
	for i := 0; i+1 < len(f) && i < 4; i++ {
		v, ev := strings.TrimSpace(f[i]), strings.TrimSpace(f[i+1])
		if !(isNotValue(v) || isPlainNum(v)) || knownUnits[ev] || !isEventName(ev) || strings.ContainsAny(ev, " \t") {
			continue
		}
		rest := f[i+2:]
		last := ""
		if len(rest) > 0 {
			last = strings.TrimSpace(rest[len(rest)-1])
		}
		if len(rest) > 2 || len(rest) == 2 && !strings.HasSuffix(last, "%") {
			continue // later perf: runtime, running share and metric follow
		}
		return i
	}
	return -1
}

// csvNoUnitColumn reports whether -x output (from its first counter line
// on) is perf's before 3.13, without the unit field ("884,cache-misses"):
// some line reads only that way or as value,event,cgroup, and no line has
// the empty or known unit later perf prints after every value.
func csvNoUnitColumn(lines []string, sep string) bool {
	old := false
	for _, l := range lines {
		f := csvFields(strings.TrimSpace(l), sep)
		if vi := csvValueIndex(f); vi >= 0 {
			if u := strings.TrimSpace(f[vi+1]); u == "" || knownUnits[u] {
				return false
			}
		}
		old = old || csvOldValueIndex(f) >= 0
	}
	return old
}

// addCSVNonCounter takes a -x line without a counter: a metric group
// (perf 6.5+) or a further metric of the row above (empty fields, then
// "value,unit"; the value is empty for a metric perf could not compute).
func (st *PerfStat) addCSVNonCounter(f []string) bool {
	if g := csvMetricGroup(f); g != nil {
		st.Rows = append(st.Rows, *g)
		return true
	}
	if len(st.Rows) == 0 {
		return false
	}
	m, ok := csvMetricOnly(f)
	if ok && m != nil {
		st.Rows[len(st.Rows)-1].addMetric(*m)
	}
	return ok
}

// setCSVTail reads the fields after value,unit,event: the -r variance,
// the run time, the running percentage and the metric.
func (row *PerfStatRow) setCSVTail(rest []string, sep string, ln int) error {
	if len(rest) > 0 && strings.HasSuffix(strings.TrimSpace(rest[0]), "%") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest[0]), "%"), 64)
		if err != nil {
			return errorf(ln, "perf stat -x: variance %q is not a percentage", rest[0])
		}
		v = scale(v, -2)
		row.Variance = &v
		rest = rest[1:]
	}
	if len(rest) > 0 && strings.TrimSpace(rest[0]) != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[0]), 64)
		if err != nil {
			return errorf(ln, "perf stat -x: event runtime %q is not a number", rest[0])
		}
		v = scale(v, -9)
		row.RuntimeS = &v
	}
	if len(rest) > 1 && strings.TrimSpace(rest[1]) != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[1]), 64)
		if err != nil {
			return errorf(ln, "perf stat -x: running percentage %q is not a number", rest[1])
		}
		row.Multiplex = scale(v, -2)
	}
	if len(rest) > 3 && strings.TrimSpace(rest[2]) != "" {
		mvs := strings.TrimSpace(rest[2])
		pct := strings.HasSuffix(mvs, "%")
		v, err := strconv.ParseFloat(strings.TrimSuffix(mvs, "%"), 64)
		if err != nil {
			return errorf(ln, "perf stat -x: metric value %q is not a number", rest[2])
		}
		row.Metric = newMetric(v, strings.TrimSpace(strings.Join(rest[3:], sep)), pct)
	}
	return nil
}

// csvMetricOnly reads a -x line that carries only a metric: blank fields
// (or the row's prefix, or perf 6.5's runtime and running percentage)
// followed by "value,unit". ok is true for such a line; m is nil when its
// value is blank (not computed).
func csvMetricOnly(f []string) (m *PerfStatMetric, ok bool) {
	if len(f) < 3 {
		return nil, false
	}
	v, u := strings.TrimSpace(f[len(f)-2]), strings.TrimSpace(f[len(f)-1])
	blank := 0
	for _, x := range f[:len(f)-2] {
		if strings.TrimSpace(x) == "" {
			blank++
		}
	}
	if u == "" || blank < 2 || isPlainNum(u) {
		return nil, false
	}
	if v == "" {
		return nil, blank == len(f)-2
	}
	pct := strings.HasSuffix(v, "%")
	n, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil || math.IsNaN(n) {
		return nil, false
	}
	return newMetric(n, u, pct), true
}

// csvMetricGroup reads perf 6.5's metric group line of -x output:
// ",RUNTIME,PCNT,,,,NAME" ("TopdownL1", "TopdownL1 (cpu_atom)").
func csvMetricGroup(f []string) *PerfStatRow {
	if len(f) < 5 {
		return nil
	}
	for k := range f {
		f[k] = strings.TrimSpace(f[k])
	}
	name := f[len(f)-1]
	if f[0] != "" || !isMetricGroupName(name) {
		return nil
	}
	rt, err1 := strconv.ParseUint(f[1], 10, 64)
	pc, err2 := strconv.ParseFloat(f[2], 64)
	if err1 != nil || err2 != nil || math.IsNaN(pc) {
		return nil
	}
	for _, x := range f[3 : len(f)-1] {
		if x != "" {
			return nil
		}
	}
	rs := scale(float64(rt), -9)
	return &PerfStatRow{Event: name, MetricGroup: true, Supported: true, Counted: true, Multiplex: scale(pc, -2), RuntimeS: &rs}
}
