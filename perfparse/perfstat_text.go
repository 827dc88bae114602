package perfparse

import (
	"strconv"
	"strings"
)

var (
	reStatHeader   = lazyRegexp(`^Performance counter stats for (.*?)(?: \((\d+) runs\))?:?$`)
	reStatVariance = lazyRegexp(`\(\s*\+-\s*([0-9][0-9.,]*)\s*%\s*\)`)
	// The running share: "(83.29%)", "[83.41%]" before perf 3.18,
	// "(scaled from 66.58%)" in perf 2.6.
	reStatRunning = lazyRegexp(`(?:\((?:scaled from)?\s*([0-9][0-9.,]*)\s*%\s*\)|\[\s*([0-9][0-9.,]*)\s*%\s*\])\s*$`)
	// perf stat -I's column header: "#           time             counts unit events".
	reStatIntervalHeader = lazyRegexp(`^#\s+time\s+(.*\s)?counts\s+unit\s+events$`)
	reStatFooter         = lazyRegexp(`^([0-9][0-9.,]*)(?: \+- ([0-9][0-9.,]*))? seconds (time elapsed|user|sys)$`)
)

// statTok is a raw text row before number conversion.
type statTok struct {
	line               int
	prefix             []string // thread / CPU / interval tokens before the value
	value, unit, event string
	cgroup             string // -G / --for-each-cgroup column after the event
	metricVal, metricU string
	variance, running  string
	metricOnly         bool // "# value unit" continuation line
	group              bool // metric group name without a counter
}

type statFooter struct {
	line          int
	kind          string
	value, stddev string
	variance      string
}

func normalizeSpaces(s string) string {
	// Locales group with U+00A0 / U+202F and quote with U+2019.
	s = strings.NewReplacer("\u00a0", " ", "\u202f", " ", "\u2019", "'", "\t", " ").Replace(s)
	return strings.TrimSpace(s)
}

func parsePerfStatText(lines []string) (*PerfStat, error) {
	if h, interval, ok, err := findMetricOnlyText(lines); err != nil {
		return nil, err
	} else if ok {
		return parsePerfStatMetricOnlyText(lines, h, interval)
	}
	st := &PerfStat{Format: "text", Rows: []PerfStatRow{}}
	sc, err := scanStatText(lines, st)
	if err != nil {
		return nil, err
	}
	toks, foots := sc.toks, sc.foots
	if len(toks) == 0 && sc.prose != "" {
		// Counters in a layout this parser does not know must not read
		// as a run without counters (perf stat --null prints no rows
		// and nothing else).
		if reStatSpaceSepRow().MatchString(sc.prose) {
			return nil, errorf(sc.proseLn, "perf stat: %q looks like perf stat -x ' ' output, whose separator cannot be told from the text layout's spaces (an empty unit, a metric unit with a space); give -x with another separator, e.g. -x,", clip(sc.prose))
		}
		return nil, errorf(sc.proseLn, "perf stat: no counter rows found; %q is not one (expected lines like \"4139.45 msec task-clock\")", clip(sc.prose))
	}
	if len(toks) == 0 && len(foots) == 0 {
		return nil, errorf(0, "perf stat: no counter rows found (expected lines like \"4139.45 msec task-clock\")")
	}
	// Pass 1: decide the number format from every number in the input.
	nf, err := statTextFormat(toks, foots)
	if err != nil {
		return nil, err
	}
	st.NumberFormat = nf.String()
	// Pass 2: convert.
	for _, t := range toks {
		if err := st.addStatTok(t, &nf); err != nil {
			return nil, err
		}
	}
	if err := st.setStatFooters(foots, &nf); err != nil {
		return nil, err
	}
	return st, nil
}

// reStatSpaceSepRow is a counter line of perf stat -x ' ': value, unit,
// event, run time and running percentage, one space apart.
var reStatSpaceSepRow = lazyRegexp(`^[0-9][0-9.]* (\S+ |\s)\S+ [0-9]+ [0-9]+\.[0-9]{2}( |$)`)

// statScan is the text output split into raw rows and footers, with the
// first line that is neither (nor a comment or a metric line).
type statScan struct {
	toks    []statTok
	foots   []statFooter
	prose   string
	proseLn int
}

// reStatMetricOnlyHeader is the -I column header of perf stat
// --metric-only: "#           time CPU   GHz  insn per cycle ...", without
// the "counts unit events" of the counters' layout.
var reStatMetricOnlyHeader = lazyRegexp(`^#\s+time\s`)

// checkOneStatRun refuses input holding a complete perf stat output
// (header to footer) before the header at start: several outputs in one
// file (perf stat --append -o FILE, or files joined), whose earlier runs
// reading from the last header would silently drop.
func checkOneStatRun(lines []string, start int) error {
	header := -1
	for i := 0; i < start; i++ {
		s := normalizeSpaces(lines[i])
		switch {
		case reStatHeader().MatchString(s):
			header = i
		case header >= 0 && reStatFooter().MatchString(collapse(s)):
			return errorf(start+1, "perf stat: a second output begins here after a complete one at line %d (perf stat --append, or outputs joined); give one run's output per input", header+1)
		}
	}
	return nil
}

// startedAgain refuses the "# started on" line of perf stat -o when
// counter rows came before it: perf stat --append -o FILE wrote several
// runs to the file, whose rows would read as one run's (summed per
// event like threads').
func startedAgain(s string, rows, ln int) error {
	if rows > 0 && strings.HasPrefix(s, "# started on") {
		return errorf(ln, "perf stat: a second run's \"# started on\" after counter rows (perf stat --append -o); give one run's output per input")
	}
	return nil
}

// scanStatText splits the text output into raw counter rows and footer
// lines, and records the header's target and run count in st.
func scanStatText(lines []string, st *PerfStat) (*statScan, error) {
	sc := &statScan{}
	// The measured program's own output comes before perf's header when
	// both went to the terminal: start at the last header, or at the
	// first -I column header when --summary printed the totals' header
	// after the intervals.
	start, ivHeader := 0, -1
	for i, l := range lines {
		s := normalizeSpaces(l)
		if reStatHeader().MatchString(s) {
			start = i
		} else if ivHeader < 0 && reStatIntervalHeader().MatchString(s) {
			ivHeader = i
		}
	}
	if ivHeader >= 0 && ivHeader < start {
		start = ivHeader
	}
	if err := checkOneStatRun(lines, start); err != nil {
		return nil, err
	}
	for i := start; i < len(lines); i++ {
		ln := i + 1
		s := normalizeSpaces(lines[i])
		if s == "" {
			continue
		}
		if m := reStatHeader().FindStringSubmatch(s); m != nil {
			st.Target = m[1]
			if m[2] != "" {
				st.Runs, _ = strconv.Atoi(m[2])
			}
			continue
		}
		t, f, err := scanStatLine(s, ln)
		if err != nil {
			return nil, err
		}
		if f != nil {
			sc.foots = append(sc.foots, *f)
		}
		if t != nil {
			sc.toks = append(sc.toks, *t)
		}
		if t == nil && f == nil && sc.prose == "" && !strings.HasPrefix(strings.TrimLeft(s, "> "), "#") {
			sc.prose, sc.proseLn = s, ln
		}
	}
	return sc, nil
}

// scanStatLine splits one non-header line into a raw row or a footer; both
// are nil for prose and comments.
func scanStatLine(s string, ln int) (*statTok, *statFooter, error) {
	var variance string
	if m := reStatVariance().FindStringSubmatchIndex(s); m != nil {
		variance = s[m[2]:m[3]]
		s = strings.TrimSpace(s[:m[0]] + " " + s[m[1]:])
	}
	if m := reStatFooter().FindStringSubmatch(collapse(s)); m != nil {
		return nil, &statFooter{ln, m[3], m[1], m[2], variance}, nil
	}
	var running string
	if m := reStatRunning().FindStringSubmatch(s); m != nil {
		running = m[1] + m[2]
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), m[0]))
	}
	left, metric, hasMetric := strings.Cut(s, "#")
	left = strings.TrimSpace(left)
	if left == "" {
		if !hasMetric {
			return nil, nil, nil
		}
		mv, mu := splitMetric(metric)
		if mv == "" {
			return nil, nil, nil // a "# started on ..." comment or empty metric
		}
		return &statTok{line: ln, metricVal: mv, metricU: mu, metricOnly: true, variance: variance, running: running}, nil, nil
	}
	t, ok, err := splitStatRow(left, ln)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		// A metric group ("TopdownL1  # 32.1 %  tma_backend_bound",
		// "TopdownL1 (cpu_core)  # nan %  tma_backend_bound") heads the
		// metric lines below it.
		if mv, mu := splitMetric(metric); hasMetric && (mv != "" || isNaNMetric(metric)) && isMetricGroupName(left) {
			return &statTok{line: ln, event: left, metricVal: mv, metricU: mu, group: true, variance: variance, running: running}, nil, nil
		}
		return nil, nil, nil // prose: warnings, "Some events weren't counted", ...
	}
	if t.cgroup != "" && !hasMetric && running == "" {
		// "2 runs failed": only a row with perf's "#" or running
		// columns is taken to have a cgroup column.
		return nil, nil, nil
	}
	t.variance, t.running = variance, running
	if hasMetric {
		t.metricVal, t.metricU = splitMetric(metric)
	}
	return &t, nil, nil
}

// statTextFormat decides the number format from every number in the rows
// and footers.
func statTextFormat(toks []statTok, foots []statFooter) (numFormat, error) {
	var nf numFormat
	for _, t := range toks {
		for _, p := range t.prefix {
			if isNumTok(p) && strings.ContainsAny(p, ".,") {
				if err := nf.observe(p, roleDecimal, t.line); err != nil {
					return nf, err
				}
			}
		}
		if t.value != "" && !strings.HasPrefix(t.value, "<") {
			role := roleCounter
			if t.unit == "" {
				role = roleCount
			}
			if err := nf.observe(t.value, role, t.line); err != nil {
				return nf, err
			}
		}
		for _, d := range []string{t.metricVal, t.variance, t.running} {
			if d != "" {
				if err := nf.observe(strings.TrimSuffix(d, "%"), roleDecimal, t.line); err != nil {
					return nf, err
				}
			}
		}
	}
	for _, f := range foots {
		for _, d := range []string{f.value, f.stddev, f.variance} {
			if d != "" {
				if err := nf.observe(d, roleDecimal, f.line); err != nil {
					return nf, err
				}
			}
		}
	}
	return nf, nil
}

// statDec converts a decimal (metric, percentage, seconds) in the input's
// number format.
func statDec(nf *numFormat, s string, ln int, what string) (float64, error) {
	v, _, _, err := nf.parseNum(s, roleDecimal, false, ln, what)
	return v, err
}

// statMultiplex converts a running percentage into the multiplex share.
func statMultiplex(nf *numFormat, running string, ln int) (float64, error) {
	v, err := statDec(nf, running, ln, "running percentage")
	if err != nil {
		return 0, err
	}
	return scale(v, -2), nil
}

// addStatTok converts one raw row and appends it to st.Rows; a metric-only
// line adds its metric to the row before it.
func (st *PerfStat) addStatTok(t statTok, nf *numFormat) error {
	var metric *PerfStatMetric
	if t.metricVal != "" {
		pct := strings.HasSuffix(t.metricVal, "%")
		v, err := statDec(nf, strings.TrimSuffix(t.metricVal, "%"), t.line, "metric")
		if err != nil {
			return err
		}
		metric = newMetric(v, t.metricU, pct)
	}
	if t.metricOnly {
		return st.addMetricLine(t, metric, nf)
	}
	row := PerfStatRow{Event: t.event, Cgroup: t.cgroup, RawValue: t.value, RawUnit: t.unit, Unit: t.unit, Supported: true, Counted: true, Multiplex: 1, Metric: metric}
	if t.group {
		row.MetricGroup = true
		if t.running != "" {
			m, err := statMultiplex(nf, t.running, t.line)
			if err != nil {
				return err
			}
			row.Multiplex = m
		}
		st.Rows = append(st.Rows, row)
		return nil
	}
	if err := row.setStatTok(t, nf); err != nil {
		return err
	}
	st.Rows = append(st.Rows, row)
	return nil
}

// addMetricLine adds a "# value unit" continuation line to the last row.
func (st *PerfStat) addMetricLine(t statTok, metric *PerfStatMetric, nf *numFormat) error {
	if len(st.Rows) == 0 {
		return errorf(t.line, "perf stat: metric line %q comes before any counter row", t.metricVal+" "+t.metricU)
	}
	prev := &st.Rows[len(st.Rows)-1]
	prev.addMetric(*metric)
	if t.running != "" && prev.Multiplex == 1 && !prev.MetricGroup {
		// perf prints a counter's running share at the end of
		// its last metric line ("instructions # 1.37 insn per
		// cycle" then "# 0.11 stalled cycles per insn (83.36%)").
		m, err := statMultiplex(nf, t.running, t.line)
		if err != nil {
			return err
		}
		prev.Multiplex = m
	}
	return nil
}

// setStatTok fills a counter row's value, prefix, variance and running
// share from its raw text.
func (row *PerfStatRow) setStatTok(t statTok, nf *numFormat) error {
	if _, ok := timeUnits[t.unit]; ok {
		row.Unit = "s"
	}
	switch t.value {
	case "<not supported>":
		row.Supported = false
	case "<not counted>":
		row.Counted = false
	default:
		integer := t.unit == "" // perf prints unitless counters as integers
		v, n, isInt, err := nf.parseNum(t.value, roleCounter, integer, t.line, "counter value of "+t.event)
		if err != nil {
			return err
		}
		row.setValue(v, n, isInt, t.unit)
	}
	if err := row.setPrefix(t.prefix, nf, t.line); err != nil {
		return err
	}
	if t.variance != "" {
		v, err := statDec(nf, t.variance, t.line, "variance")
		if err != nil {
			return err
		}
		v = scale(v, -2)
		row.Variance = &v
	}
	if t.running != "" {
		m, err := statMultiplex(nf, t.running, t.line)
		if err != nil {
			return err
		}
		row.Multiplex = m
	}
	return nil
}

// setStatFooters converts the "seconds time elapsed/user/sys" footers.
func (st *PerfStat) setStatFooters(foots []statFooter, nf *numFormat) error {
	for _, f := range foots {
		v, err := statDec(nf, f.value, f.line, "seconds "+f.kind)
		if err != nil {
			return err
		}
		switch f.kind {
		case "time elapsed":
			st.ElapsedS = &v
			if f.stddev != "" {
				sd, err := statDec(nf, f.stddev, f.line, "elapsed stddev")
				if err != nil {
					return err
				}
				st.ElapsedStddevS = &sd
			}
			if f.variance != "" {
				pv, err := statDec(nf, f.variance, f.line, "elapsed variance")
				if err != nil {
					return err
				}
				pv = scale(pv, -2)
				st.ElapsedVariance = &pv
			}
		case "user":
			st.UserS = &v
		case "sys":
			st.SysS = &v
		}
	}
	return nil
}

// splitMetric splits " 1.379 CPUs utilized" into "1.379" and "CPUs utilized"
// ("1.23%" keeps its "%").
func splitMetric(m string) (string, string) {
	m = strings.TrimSpace(m)
	v, u, _ := strings.Cut(m, " ")
	if !isNumTok(strings.TrimSuffix(v, "%")) {
		return "", ""
	}
	return v, strings.TrimSpace(u)
}

// splitStatRow finds the counter value in the tokens of a row and splits
// the row into prefix, value, unit and event. ok is false for lines that
// are not counter rows.
func splitStatRow(s string, ln int) (statTok, bool, error) {
	f := strings.Fields(s)
	t := statTok{line: ln}
	vi := -1
	off := 0
	if len(f) > 3 && isNumTok(f[0]) && strings.ContainsAny(f[0], ".,") && isRowLabel(f[1]) {
		off = 1 // -I timestamp before a label: "0.200110670 CPU0  200.54 msec task-clock"
	}
	first := off
	if len(f) > off+2 && reAggrID().MatchString(f[off]) && isNumTok(f[off+1]) && !strings.ContainsAny(f[off+1], ".,' ") {
		first = off + 2 // "S0-D0-C1  2  value ...": the CPU count is not the value
	}
	for i := first; i < len(f) && i < 8; i++ {
		if f[i] == "<not" && i+1 < len(f) && (f[i+1] == "supported>" || f[i+1] == "counted>") {
			vi = i
			break
		}
		if !isNumTok(f[i]) {
			continue
		}
		// -I timestamp, or "S0 2" aggregation columns, precede the value.
		if i+1 < len(f) && (isNumTok(f[i+1]) || f[i+1] == "<not") && !isSpaceGroup(f, i) {
			continue
		}
		vi = i
		break
	}
	if vi < 0 {
		return t, false, nil
	}
	t.prefix = f[:vi]
	var rest []string
	if f[vi] == "<not" {
		t.value, rest = f[vi]+" "+f[vi+1], f[vi+2:]
	} else {
		j := vi + 1
		if isSpaceGroup(f, vi) {
			for j+1 < len(f) && isGroup3(f[j]) {
				j++
				if len(f[j-1]) > 3 { // "567,8": the decimals end the number
					break
				}
			}
		}
		t.value, rest = strings.Join(f[vi:j], " "), f[j:]
	}
	switch {
	case len(rest) == 0 && allNumbers(strings.Fields(s)):
		return t, false, errorf(ln, "perf stat: %q is numbers without event names, as perf stat --metric-only prints them; its text layout is not read: give --metric-only -x, output", clip(s))
	case len(rest) == 0:
		return t, false, errorf(ln, "perf stat: counter row %q has no event name", clip(s))
	case len(rest) == 1 && knownUnits[rest[0]]:
		return t, false, errorf(ln, "perf stat: counter row %q has a unit but no event name", clip(s))
	case len(rest) == 1:
		t.event = rest[0]
		if isClockEvent(t.event) {
			t.unit = "msec" // perf 2.6-3.x print the clocks in msec without a unit
		}
	case len(rest) == 2 && strings.HasPrefix(rest[1], "(") && strings.HasSuffix(rest[1], ")"):
		// perf 4.x: "task-clock (msec)"
		t.event, t.unit = rest[0], strings.Trim(rest[1], "()")
	case len(rest) == 2 && !knownUnits[rest[0]] && isCgroupName(rest[1]):
		t.event, t.cgroup = rest[0], rest[1] // "cycles  foo/bar" (perf stat -G)
	case knownUnits[rest[0]] && len(rest) == 3 && isCgroupName(rest[2]):
		t.unit, t.event, t.cgroup = rest[0], rest[1], rest[2]
	case knownUnits[rest[0]]:
		t.unit, t.event = rest[0], strings.Join(rest[1:], " ")
	default:
		return t, false, nil // prose such as "echo 0 > /proc/sys/kernel/nmi_watchdog"
	}
	if !isEventName(t.event) || !validStatPrefix(t.prefix) {
		return t, false, nil
	}
	return t, true, nil
}

// isRowLabel reports whether s starts the label of an -A, --per-core (and
// the like) or --per-thread row: "CPU0", "S0-D0-C1", "python3-19340",
// "CPU" of QEMU's "CPU 0/TCG-4242".
func isRowLabel(s string) bool {
	return reAggrID().MatchString(s) || s == "CPU" || strings.HasPrefix(s, "CPU") && isPlainNum(s[3:]) || threadTID(s) > 0
}

// isCgroupName reports whether s can be the cgroup column of perf stat -G
// or --for-each-cgroup ("foo", "foo/bar", "system.slice/sshd.service",
// "/"): a path of name characters.
func isCgroupName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._-:@+", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// isClockEvent reports whether ev is a software clock perf counts in
// nanoseconds and prints in msec: "task-clock", "cpu-clock:u",
// "task-clock-msecs" (perf 2.6).
func isClockEvent(ev string) bool {
	name, _, _ := strings.Cut(ev, ":")
	return name == "task-clock" || name == "cpu-clock" || name == "task-clock-msecs"
}

// allNumbers reports whether f holds two or more fields, all numbers.
func allNumbers(f []string) bool {
	for _, x := range f {
		if !isPlainNum(x) {
			return false
		}
	}
	return len(f) > 1
}

// isEventName reports whether s looks like a perf event: "task-clock",
// "cycles:u", "cpu_core/cycles/", "r003c", "power/energy-pkg/",
// "msr/tsc,cpu=0/".
func isEventName(s string) bool {
	if s == "" {
		return false
	}
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '{') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.:/=,@[]{}!", c) >= 0) {
			return false
		}
	}
	return true
}

// isMetricGroupName reports whether s names a metric group: an event-like
// word, on hybrid CPUs followed by its PMU ("TopdownL1 (cpu_atom)", perf
// 6.5+).
func isMetricGroupName(s string) bool {
	name, pmu, ok := strings.Cut(s, " (")
	if !ok {
		return isEventName(s)
	}
	pmu, ok = strings.CutSuffix(pmu, ")")
	return ok && isEventName(name) && isEventName(pmu)
}

// isNaNMetric reports whether a "#" column holds a metric perf could not
// compute ("nan %  tma_retiring"); such metrics are left out.
func isNaNMetric(m string) bool {
	v, _, _ := strings.Cut(strings.TrimSpace(m), " ")
	return strings.EqualFold(strings.TrimSuffix(v, "%"), "nan")
}

// validStatPrefix accepts what perf prints before the counter value: an
// -I timestamp, an aggregation label ("CPU3", "S0-D0-C1 2") or a
// --per-thread "NAME-TID" (NAME may contain blanks: "CPU 0/TCG-4242").
func validStatPrefix(p []string) bool {
	if len(p) == 0 {
		return true
	}
	if isNumTok(p[0]) && strings.ContainsAny(p[0], ".,") {
		p = p[1:]
		if len(p) == 0 {
			return true
		}
	}
	if reAggrID().MatchString(p[0]) || strings.HasPrefix(p[0], "CPU") && isPlainNum(p[0][3:]) {
		return len(p) == 1 || len(p) == 2 && isPlainNum(p[1])
	}
	return threadTID(p[len(p)-1]) > 0
}

// isGroup3 reports whether s is a 3-digit thousands group ("234" or
// "567,8" as the last group).
func isGroup3(s string) bool {
	if len(s) < 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	if len(s) == 3 {
		return true
	}
	if s[3] != '.' && s[3] != ',' {
		return false
	}
	for i := 4; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 4
}

// isSpaceGroup reports whether f[i] starts a space-grouped number
// ("1 234 567,8"): 1–3 digits followed by 3-digit groups.
func isSpaceGroup(f []string, i int) bool {
	if len(f[i]) > 3 || strings.ContainsAny(f[i], ".,'+-") {
		return false
	}
	j := i + 1
	for j < len(f) && isGroup3(f[j]) {
		j++
		if len(f[j-1]) > 3 {
			break
		}
	}
	return j > i+1 && j < len(f) && !isNumTok(f[j]) && f[j] != "<not"
}

// setPrefix interprets the tokens before the value: an -I timestamp, an
// aggregation label (+ CPU count) or a --per-thread "NAME-TID".
func (row *PerfStatRow) setPrefix(p []string, nf *numFormat, ln int) error {
	if len(p) == 0 {
		return nil
	}
	if isNumTok(p[0]) && strings.ContainsAny(p[0], ".,") {
		v, _, _, err := nf.parseNum(p[0], roleDecimal, false, ln, "interval timestamp")
		if err != nil {
			return err
		}
		row.IntervalS = &v
		p = p[1:]
	}
	if len(p) == 0 {
		return nil
	}
	if reAggrID().MatchString(p[0]) || strings.HasPrefix(p[0], "CPU") && isPlainNum(p[0][3:]) {
		row.CPU = p[0]
		if len(p) > 1 {
			row.AggrCPUs, _ = strconv.Atoi(p[1])
		}
		return nil
	}
	row.Thread = strings.Join(p, " ")
	row.TID = threadTID(row.Thread)
	return nil
}
