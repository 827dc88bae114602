package perfparse

import (
	"bytes"
	"encoding/json"
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
	// MetricOnly is true for --metric-only output: its rows are
	// MetricGroup rows, one per metric value, named after the metric.
	MetricOnly bool `json:"metric_only,omitempty"`
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
	if err := checkStatUsage(lines); err != nil {
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

// checkStatUsage refuses perf stat's usage text, which perf prints
// instead of counters when it refuses its command line (its option lines,
// "-a, --all-cpus  system-wide ...", read as metric-only or -x lines),
// quoting perf's reason, the line before it.
func checkStatUsage(lines []string) error {
	reason := ""
	for i, l := range lines {
		s := strings.TrimSpace(l)
		if strings.HasPrefix(s, "Usage: perf stat") || strings.HasPrefix(s, "usage: perf stat") {
			if reason == "" {
				reason = s
			}
			return errorf(i+1, "perf stat: this is perf stat's usage text (%q): perf refused its options and counted nothing; fix the perf stat command line and give the output of a run", clip(reason))
		}
		if s != "" {
			reason = s
		}
	}
	return nil
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
		if csvSep(s) != "" || metricOnlySep(lines) != "" {
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

func isNotValue(s string) bool { return s == "<not supported>" || s == "<not counted>" }

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
	if !percent && (strings.HasPrefix(unit, "of all") || strings.Contains(unit, " of all ") || strings.HasSuffix(unit, "cycles idle")) {
		// -j prints percentage metrics without "%", --metric-only
		// with the event's name before the unit
		// ("branch-misses of all branches").
		percent = true
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
		if strings.HasPrefix(s, `{"unit" : `) && strings.Count(s, `"unit" : `) > 1 {
			// perf 6.1's -j --metric-only: a header object of
			// repeated "unit" keys, then lines that are not JSON.
			return nil, errorf(i+1, "perf stat -j: this is --metric-only's -j output, which perf 6.1 printed as invalid JSON (fixed by \"perf stat: Fix JSON output in metric-only mode\", December 2022); give --metric-only -x, output")
		}
		if err := startedAgain(s, len(st.Rows), i+1); err != nil {
			return nil, err
		}
		if s == "" || strings.HasPrefix(s, "#") {
			continue // "# started on ..." from -o
		}
		objs, err := decodeStatJSONLine(s, i+1)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			add := st.addJSONObject
			if o.isMetricOnlyJSON() {
				add = st.addMetricOnlyJSON
			}
			if err := add(o); err != nil {
				return nil, err
			}
		}
	}
	if len(st.Rows) == 0 && !st.MetricOnly {
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
		if err := dec.Decode(&o.raw); err != nil {
			return nil, errorf(ln, "perf stat -j: %v", err)
		}
		if err := json.Unmarshal(o.raw, &o.m); err != nil {
			return nil, errorf(ln, "perf stat -j: want one object per line: %v", err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// statJSONObject is one line of perf stat -j output.
type statJSONObject struct {
	m   map[string]json.RawMessage
	raw json.RawMessage // the object as printed, for its keys' order
	ln  int
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
	for _, k := range []string{"aggregate-number", "counters"} { // newer perf says "counters"
		if n, ok, err := o.num(k); err == nil && ok {
			row.AggrCPUs = int(n)
		}
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
