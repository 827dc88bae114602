package perfparse

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// perf stat -j --metric-only, as perf prints it since "perf stat: Fix
// JSON output in metric-only mode" (perf 6.2): one object per line and
// aggregation unit, the place first, then each metric under its name (the
// unit the text layout prints), its value a string, "none" where perf
// could not compute it, and no header:
//
//	{"insn per cycle" : "0.53", "GHz" : "none"}
//	{"interval" : 0.100271537, "cpu" : "0", "insn per cycle" : "1.52"}
//	{"metric-value" : "none"}          (no metric at all)
//
// perf 6.1 printed a header object of units and then objects of
// "metric-value" alone (not JSON with -I or -A); those are refused.

// jsonPlaceKeys are the keys of a metric-only object that say where and
// when, not which metric.
var jsonPlaceKeys = map[string]bool{"interval": true, "cpu": true, "core": true, "die": true, "socket": true,
	"node": true, "cluster": true, "cache": true, "thread": true, "cgroup": true, "counters": true, "aggregate-number": true}

// jsonCounterKeys are keys only a counter, metric or metric group object
// has, never a metric-only one.
var jsonCounterKeys = []string{"event", "counter-value", "metricgroup", "metric-unit", "unit", "event-runtime", "pcnt-running"}

// isMetricOnlyJSON reports whether o is a --metric-only object: no key of
// a counter object and at least one that is not a place.
func (o statJSONObject) isMetricOnlyJSON() bool {
	for _, k := range jsonCounterKeys {
		if _, ok := o.m[k]; ok {
			return false
		}
	}
	for k := range o.m {
		if !jsonPlaceKeys[k] {
			return true
		}
	}
	return false
}

// addMetricOnlyJSON adds one row per computed metric of a --metric-only
// object, in perf's order.
func (st *PerfStat) addMetricOnlyJSON(o statJSONObject) error {
	var place PerfStatRow
	place.setJSONPlace(o)
	if err := place.setJSONNumbers(o); err != nil {
		return err
	}
	for _, k := range o.keys() {
		if jsonPlaceKeys[k] {
			continue
		}
		v, ok := o.str(k)
		if !ok {
			return errorf(o.ln, "perf stat -j --metric-only: metric %q has a value that is neither a number nor a string", k)
		}
		if k == "metric-value" {
			if v == "none" {
				continue // perf printed no metric for this place
			}
			return errorf(o.ln, "perf stat -j: this is --metric-only's -j output of perf 6.1, whose values carry no metric name (fixed by \"perf stat: Fix JSON output in metric-only mode\", December 2022); give --metric-only -x, output")
		}
		if v = strings.TrimSpace(v); v == "" || v == "none" {
			continue
		}
		if strings.TrimSpace(k) == "" {
			return errorf(o.ln, "perf stat -j --metric-only: value %q under an empty metric name; give perf's output as it printed it", v)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errorf(o.ln, "perf stat -j --metric-only: value %q of %q is not a number", v, k)
		}
		row := place
		row.Event, row.MetricGroup, row.Supported, row.Counted, row.Multiplex = k, true, true, true, 1
		row.Metric = newMetric(x, k, false)
		st.Rows = append(st.Rows, row)
	}
	st.MetricOnly = true
	return nil
}

// isMetricOnlyJSONLine reports whether a line is perf stat -j
// --metric-only objects: flat, of strings and numbers, without a
// counter's keys (iperf3 --json-stream's objects nest).
func isMetricOnlyJSONLine(s string) bool {
	objs, err := decodeJSONObjects(s, 1)
	if err != nil || len(objs) == 0 {
		return false
	}
	for _, o := range objs {
		if !o.isMetricOnlyJSON() {
			return false
		}
		for k := range o.m {
			if _, ok := o.str(k); !ok {
				return false
			}
		}
	}
	return true
}

// keys returns the object's keys in the order perf printed them.
func (o statJSONObject) keys() []string {
	var out []string
	dec := json.NewDecoder(bytes.NewReader(o.raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return out
		}
		out = append(out, k)
	}
	return out
}
