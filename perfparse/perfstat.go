package perfparse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// PerfStat is the output of `perf stat` in any of its formats: the default
// text (perf 4.x–6.x, also as pasted in mail), -x SEP (CSV) or -j (JSON
// lines).
type PerfStat struct {
	// Format is "text", "csv" or "json".
	Format string `json:"format"`
	// Target is what perf measured, from the text header, e.g.
	// "process id '12619'" or "'sleep 1'".
	Target string `json:"target,omitempty"`
	// Runs is N of `-r N` (0 when not repeated).
	Runs int `json:"runs,omitempty"`
	// Rows are the counter rows in input order (metric-only continuation
	// lines are attached to the row above).
	Rows []PerfStatRow `json:"rows"`
	// ElapsedS, UserS and SysS are the footer's "seconds time elapsed",
	// "seconds user" and "seconds sys"; nil when absent.
	ElapsedS *float64 `json:"elapsed_s,omitempty"`
	// ElapsedStddevS is the "+- X" of a -r footer.
	ElapsedStddevS *float64 `json:"elapsed_stddev_s,omitempty"`
	// ElapsedVariance is the footer's "( +- 0.01% )" as a fraction.
	ElapsedVariance *float64 `json:"elapsed_variance_frac,omitempty"`
	UserS           *float64 `json:"user_s,omitempty"`
	SysS            *float64 `json:"sys_s,omitempty"`
	// NumberFormat describes the decimal mark and grouping found in text
	// input, e.g. `decimal ',' grouping '.'` ("" when plain).
	NumberFormat string `json:"number_format,omitempty"`
}

// PerfStatRow is one counter.
type PerfStatRow struct {
	// Event is the event name as printed ("task-clock", "cycles:u", ...).
	Event string `json:"event"`
	// Value is the counter in base units: seconds for time events
	// (task-clock's msec), the count for counters. Zero when not
	// Supported or not Counted.
	Value float64 `json:"value"`
	// Count is the exact integer value for integer counters (Unit "").
	Count uint64 `json:"count"`
	// Unit is the base unit of Value: "" for counts, "s" for times, else
	// the unit as printed (e.g. "Joules", "MiB").
	Unit string `json:"unit"`
	// RawValue and RawUnit are the value and unit as printed.
	RawValue string `json:"raw_value"`
	RawUnit  string `json:"raw_unit,omitempty"`
	// Thread is the --per-thread / -t row label "NAME-TID" and TID its id.
	Thread string `json:"thread,omitempty"`
	TID    int    `json:"tid,omitempty"`
	// CPU is the aggregation label of -A / --per-core / --per-socket rows
	// ("CPU0", "S0-D0-C1", ...); AggrCPUs the number of CPUs aggregated.
	CPU      string `json:"cpu,omitempty"`
	AggrCPUs int    `json:"aggr_cpus,omitempty"`
	// Cgroup is the cgroup of perf stat -G / --for-each-cgroup rows.
	Cgroup string `json:"cgroup,omitempty"`
	// IntervalS is the -I timestamp of the row.
	IntervalS *float64 `json:"interval_s,omitempty"`
	// Supported is false for "<not supported>", Counted false for
	// "<not counted>".
	Supported bool `json:"supported"`
	Counted   bool `json:"counted"`
	// Variance is -r's "( +- 0.52% )" as a fraction (0.0052): the standard
	// deviation of the mean relative to the mean. Nil without -r.
	Variance *float64 `json:"variance_frac,omitempty"`
	// Multiplex is the fraction of the time the counter was running
	// ("(66.85%)" = 0.6685; 1 when perf printed nothing, i.e. 100 %).
	Multiplex float64 `json:"running_frac"`
	// RuntimeS is the counter's run time from -x/-j output (seconds).
	RuntimeS *float64 `json:"runtime_s,omitempty"`
	// MetricGroup is true for a metric group line without a counter
	// (perf 6.x "TopdownL1  # 32.1 % tma_backend_bound"): only Event (the
	// group name) and the metrics are set.
	MetricGroup bool `json:"metric_group,omitempty"`
	// Metric is the "#" column (derived metric), MoreMetrics any further
	// metric-only lines printed under the row.
	Metric      *PerfStatMetric  `json:"metric,omitempty"`
	MoreMetrics []PerfStatMetric `json:"more_metrics,omitempty"`
}

// PerfStatMetric is a derived metric ("1.379 CPUs utilized",
// "7.903 K/sec", "1.23% of all branches").
type PerfStatMetric struct {
	// Value and Unit are as printed (Unit without a leading "%").
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Percent is true when perf printed the value as a percentage.
	Percent bool `json:"percent,omitempty"`
	// Base is Value in BaseUnit: K/sec, M/sec, G/sec to /sec, GHz/MHz to
	// Hz, percentages to fractions ("frac of all branches").
	Base     float64 `json:"base"`
	BaseUnit string  `json:"base_unit"`
}

// ParsePerfStat parses perf stat output, detecting the format: lines
// starting with "{" are -j, lines with a separator and a known field layout
// are -x, anything else is the default text.
func ParsePerfStat(r io.Reader) (*PerfStat, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	switch detectPerfStat(lines) {
	case "json":
		return parsePerfStatJSON(lines)
	case "csv":
		return parsePerfStatCSV(lines)
	}
	return parsePerfStatText(lines)
}

func detectPerfStat(lines []string) string {
	for _, l := range lines {
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "# ") && !startsNumber(s[2:]) {
			continue
		}
		if strings.HasPrefix(s, "Performance counter stats") || strings.Contains(s, " # ") {
			return "text"
		}
		if strings.HasPrefix(s, "{") {
			return "json"
		}
		if csvSep(s) != 0 {
			return "csv"
		}
		return "text"
	}
	return "text"
}

func startsNumber(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// csvSep returns the -x separator of a perf stat CSV line, or 0.
func csvSep(s string) byte {
	for _, sep := range []byte{',', ';', '\t', '|', ':'} {
		f := strings.Split(s, string(sep))
		if len(f) >= 3 && csvValueIndex(f) >= 0 || len(f) >= 2 && csvOldValueIndex(f) >= 0 {
			return sep
		}
	}
	return 0
}

func isNotValue(s string) bool { return s == "<not supported>" || s == "<not counted>" }

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

func isPlainNum(s string) bool {
	if s == "" {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// timeUnits maps perf's time units to seconds.
var timeUnits = map[string]int{"msec": -3, "ms": -3, "usec": -6, "us": -6, "nsec": -9, "ns": -9, "sec": 0, "s": 0}

// knownUnits are units perf prints between the value and the event name.
var knownUnits = map[string]bool{"msec": true, "ms": true, "usec": true, "us": true, "nsec": true, "ns": true,
	"sec": true, "s": true, "Joules": true, "mJ": true, "uJ": true, "MiB": true, "KiB": true, "GiB": true, "MB": true, "kB": true, "W": true, "Watts": true, "C": true, "MHz": true, "GHz": true}

// setValue fills Value/Count/Unit from a parsed number and the raw unit.
func (row *PerfStatRow) setValue(v float64, n uint64, isInt bool, unit string) {
	row.RawUnit = unit
	if f, ok := timeUnits[unit]; ok {
		row.Value, row.Unit = scale(v, f), "s"
		return
	}
	row.Value, row.Unit = v, unit
	if unit == "" && isInt {
		row.Count = n
	}
}

// addMetric adds a metric printed on its own line to the row: the first
// metric of a metric group whose own line had none is its Metric.
func (row *PerfStatRow) addMetric(m PerfStatMetric) {
	if row.MetricGroup && row.Metric == nil && len(row.MoreMetrics) == 0 {
		row.Metric = &m
		return
	}
	row.MoreMetrics = append(row.MoreMetrics, m)
}

func newMetric(v float64, unit string, percent bool) *PerfStatMetric {
	// perf pads units to align them ("backend  cycles idle", "MB/s  memory_bandwidth_read").
	unit = collapse(unit)
	if strings.HasPrefix(unit, "%") {
		percent, unit = true, strings.TrimSpace(unit[1:])
	}
	if !percent && (strings.HasPrefix(unit, "of all") || strings.HasSuffix(unit, "cycles idle")) {
		percent = true // -j prints percentage metrics without "%"
	}
	m := &PerfStatMetric{Value: v, Unit: unit, Percent: percent, Base: v, BaseUnit: unit}
	if percent {
		m.Base, m.BaseUnit = scale(v, -2), "frac "+unit
		return m
	}
	for _, s := range []struct {
		prefix, base string
		exp          int
	}{{"K/sec", "/sec", 3}, {"M/sec", "/sec", 6}, {"G/sec", "/sec", 9}, {"GHz", "Hz", 9}, {"MHz", "Hz", 6}, {"KHz", "Hz", 3}} {
		if unit == s.prefix {
			m.Base, m.BaseUnit = scale(v, s.exp), s.base
		} else if name, ok := strings.CutPrefix(unit, s.prefix+" "); ok && isMetricID(name) {
			// perf 6.18's default metrics name themselves after
			// the unit: "4.2 GHz  cycles_frequency".
			m.Base, m.BaseUnit = scale(v, s.exp), s.base+" "+name
		}
	}
	return m
}

// isMetricID reports whether s is a perf metric's name as perf 6.5+
// prints it after the unit: snake case with at least one '_'
// ("cycles_frequency", "tma_retiring", "CPUs_utilized").
func isMetricID(s string) bool {
	if !strings.Contains(s, "_") {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ---- -j -----------------------------------------------------------------

func parsePerfStatJSON(lines []string) (*PerfStat, error) {
	st := &PerfStat{Format: "json", Rows: []PerfStatRow{}}
	for i, l := range lines {
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "#") {
			continue // "# started on ..." from -o
		}
		objs, err := decodeStatJSONLine(s, i+1)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if err := st.addJSONObject(o); err != nil {
				return nil, err
			}
		}
	}
	if len(st.Rows) == 0 {
		return nil, errorf(0, "perf stat -j: no counter objects in the input")
	}
	return st, nil
}

// reJSONTrailingComma is the ", }" perf 6.10 prints when it drops a
// metric without a unit.
var reJSONTrailingComma = lazyRegexp(`,\s*}\s*$`)

// decodeStatJSONLine reads the objects of one -j line: one per line as perf
// prints them, or several where lines were joined (mail pastes).
func decodeStatJSONLine(s string, ln int) ([]statJSONObject, error) {
	objs, err := decodeJSONObjects(s, ln)
	if err != nil && reJSONTrailingComma().MatchString(s) {
		objs, err = decodeJSONObjects(reJSONTrailingComma().ReplaceAllString(s, "}"), ln)
	}
	return objs, err
}

func decodeJSONObjects(s string, ln int) ([]statJSONObject, error) {
	var objs []statJSONObject
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	for dec.More() {
		o := statJSONObject{ln: ln}
		if err := dec.Decode(&o.m); err != nil {
			return nil, errorf(ln, "perf stat -j: %v", err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// statJSONObject is one line of perf stat -j output.
type statJSONObject struct {
	m  map[string]json.RawMessage
	ln int
}

// str returns field k as text (a string or a number).
func (o statJSONObject) str(k string) (string, bool) {
	raw, ok := o.m[k]
	if !ok {
		return "", false
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// num returns field k as a number; ok is false when it is absent or empty.
func (o statJSONObject) num(k string) (float64, bool, error) {
	v, ok := o.str(k)
	if !ok || v == "" {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, false, errorf(o.ln, "perf stat -j: %s %q is not a number", k, v)
	}
	return f, true, nil
}

// addJSONObject appends the counter row of one object to st.Rows, or adds
// an event-less metric object to the row before it.
func (st *PerfStat) addJSONObject(o statJSONObject) error {
	ev, hasEv := o.str("event")
	if hasEv && strings.TrimSpace(ev) == "" {
		return errorf(o.ln, "perf stat -j: object has an empty event name")
	}
	metric, err := o.metric()
	if err != nil {
		return err
	}
	if group, ok := o.str("metricgroup"); ok && !hasEv {
		// perf 6.5+: {"event-runtime" : N, "pcnt-running" : P, "metricgroup" : "TopdownL1"}
		if strings.TrimSpace(group) == "" {
			return errorf(o.ln, "perf stat -j: object has an empty metric group name")
		}
		ev, hasEv = group, true
	}
	if !hasEv {
		// perf 6.5+ prints extra metrics as their own objects.
		if _, ok := o.m["counter-value"]; ok {
			return errorf(o.ln, "perf stat -j: object has a counter-value but no event")
		}
		if metric != nil && len(st.Rows) > 0 {
			st.Rows[len(st.Rows)-1].addMetric(*metric)
		}
		return nil // other objects (e.g. headers) carry no counter
	}
	row := PerfStatRow{Event: ev, Supported: true, Counted: true, Multiplex: 1, Metric: metric}
	if cv, ok := o.str("counter-value"); ok {
		unit, _ := o.str("unit")
		if err := row.setRaw(cv, unit, o.ln); err != nil {
			return err
		}
	} else {
		row.MetricGroup = true
	}
	row.setJSONPlace(o)
	if err := row.setJSONNumbers(o); err != nil {
		return err
	}
	st.Rows = append(st.Rows, row)
	return nil
}

// metric returns the object's "metric-value" and "metric-unit", nil when
// absent, not a number ("nan": perf could not compute it) or without a
// unit (perf 6.1 prints "(null)").
func (o statJSONObject) metric() (*PerfStatMetric, error) {
	mv, ok, err := o.num("metric-value")
	if err != nil || !ok || math.IsNaN(mv) || math.IsInf(mv, 0) {
		return nil, err
	}
	mu, _ := o.str("metric-unit")
	if mu == "" || mu == "(null)" {
		return nil, nil
	}
	return newMetric(mv, mu, false), nil
}

// setJSONPlace sets the thread, CPU (or other aggregation unit) and the
// number of aggregated CPUs of a row.
func (row *PerfStatRow) setJSONPlace(o statJSONObject) {
	if th, ok := o.str("thread"); ok {
		row.Thread, row.TID = th, threadTID(th)
	}
	if c, ok := o.str("cpu"); ok {
		row.CPU = c
		if isPlainNum(c) {
			row.CPU = "CPU" + c // -j prints "cpu" : "0" where text and -x print CPU0
		}
	}
	if g, ok := o.str("cgroup"); ok {
		row.Cgroup = g
	}
	for _, k := range []string{"core", "socket", "die", "cluster", "node", "cache"} {
		if c, ok := o.str(k); ok {
			row.CPU = c
		}
	}
	if n, ok, err := o.num("aggregate-number"); err == nil && ok {
		row.AggrCPUs = int(n)
	}
}

// setJSONNumbers sets the interval, variance, runtime and running share of
// a row.
func (row *PerfStatRow) setJSONNumbers(o statJSONObject) error {
	if iv, ok, err := o.num("interval"); err != nil {
		return err
	} else if ok {
		row.IntervalS = &iv
	}
	if v, ok, err := o.num("variance"); err != nil {
		return err
	} else if ok {
		v = scale(v, -2)
		row.Variance = &v
	}
	if rt, ok, err := o.num("event-runtime"); err != nil {
		return err
	} else if ok {
		rt = scale(rt, -9)
		row.RuntimeS = &rt
	}
	if p, ok, err := o.num("pcnt-running"); err != nil {
		return err
	} else if ok {
		row.Multiplex = scale(p, -2)
	}
	return nil
}

// setRaw parses a plain (C locale) counter value as printed by -x or -j.
func (row *PerfStatRow) setRaw(v, unit string, ln int) error {
	v = strings.TrimSpace(v)
	row.RawValue = v
	switch v {
	case "<not supported>":
		row.Supported, row.RawUnit, row.Unit = false, unit, unit
		if _, ok := timeUnits[unit]; ok {
			row.Unit = "s"
		}
		return nil
	case "<not counted>":
		row.Counted, row.RawUnit, row.Unit = false, unit, unit
		if _, ok := timeUnits[unit]; ok {
			row.Unit = "s"
		}
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return errorf(ln, "perf stat: counter value %q of %s is not a number", v, row.Event)
	}
	var n uint64
	isInt := f >= 0 && f == math.Trunc(f)
	if isInt {
		ip := v
		if i := strings.IndexByte(v, '.'); i >= 0 {
			ip = v[:i]
		}
		if n, err = strconv.ParseUint(ip, 10, 64); err != nil {
			isInt = false
		}
	}
	row.setValue(f, n, isInt, unit)
	return nil
}

func threadTID(th string) int {
	i := strings.LastIndexByte(th, '-')
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(th[i+1:])
	if err != nil {
		return 0
	}
	return n
}

// ---- -x SEP -------------------------------------------------------------

// reAggrID matches the aggregation labels of --per-socket ("S0"), -die
// ("S0-D0"), -core ("S0-D0-C1"), -cache ("S0-D0-L3-ID0"), -cluster (perf
// 6.7: "S56-D0-CLS158") and -node ("N0").
var reAggrID = lazyRegexp(`^(S\d+(-D\d+)?(-C\d+|-CLS\d+|-L\d+-ID\d+)?|N\d+|D\d+|C\d+)$`)

func parsePerfStatCSV(lines []string) (*PerfStat, error) {
	st := &PerfStat{Format: "csv", Rows: []PerfStatRow{}}
	var sep byte
	noUnit := false
	for i, l := range lines {
		ln := i + 1
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "#") {
			continue // "# started on ..." from -o
		}
		if sep == 0 {
			if sep = csvSep(s); sep == 0 {
				return nil, errorf(ln, "perf stat -x: cannot find value,unit,event fields in %q", clip(s))
			}
			noUnit = csvNoUnitColumn(lines[i:], sep)
		}
		if err := st.addCSVLine(strings.Split(s, string(sep)), sep, noUnit, ln); err != nil {
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
func (st *PerfStat) addCSVLine(f []string, sep byte, noUnit bool, ln int) error {
	f = joinEventTerms(f, sep)
	vi, ui := csvValueIndex(f), 1 // ui: fields between value and event
	if noUnit {
		vi, ui = csvOldValueIndex(f), 0
	}
	if vi < 0 && st.addCSVNonCounter(f) {
		return nil
	}
	if vi < 0 {
		want := fmt.Sprintf("value%cunit%cevent", sep, sep)
		if noUnit {
			want = fmt.Sprintf("value%cevent (perf before 3.13)", sep)
		}
		return errorf(ln, "perf stat -x: cannot find %s fields in %q", want, clip(strings.Join(f, string(sep))))
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
func joinEventTerms(f []string, sep byte) []string {
	out := make([]string, 0, len(f))
	for i := 0; i < len(f); i++ {
		if reTermsOpen().MatchString(strings.TrimSpace(f[i])) {
			if j := termsEnd(f, i+1); j > i {
				out = append(out, strings.Join(f[i:j+1], string(sep)))
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
func csvNoUnitColumn(lines []string, sep byte) bool {
	old := false
	for _, l := range lines {
		f := joinEventTerms(strings.Split(strings.TrimSpace(l), string(sep)), sep)
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
func (row *PerfStatRow) setCSVTail(rest []string, sep byte, ln int) error {
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
		row.Metric = newMetric(v, strings.TrimSpace(strings.Join(rest[3:], string(sep))), pct)
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
