package perfparse

import (
	"strconv"
	"strings"
)

// perf stat --metric-only -x SEP prints one header line of metric names
// (their units as the text format prints them, "insn per cycle", "GHz")
// and then one line of values per interval and aggregation unit, each
// field followed by SEP:
//
//	 time,cpu,GHz,insn per cycle,
//	     0.100271537,CPU0,3.10,1.52,
//
// The place part of the header ("time,", "cpu,", "core,cpus,") is
// printed with commas whatever SEP is (perf's aggr_header_csv), the
// header is printed again every 25 intervals, and perf 6.1 prints more
// (empty) value fields than it names metrics. A metric perf could not
// compute is an empty field.

// metricOnlyPlaces are the header words of the fields before the
// metrics: the -I timestamp and the aggregation unit, those whose value
// lines also carry the number of CPUs aggregated marked true.
var metricOnlyPlaces = map[string]bool{"time": false, "cpu": false, "comm-pid": false,
	"core": true, "die": true, "socket": true, "node": true, "cluster": true, "cache": true}

// metricOnlySep returns the separator of perf stat --metric-only -x
// output, "" when lines are not that: a first line of names followed by
// a line ending in the separator (each value is followed by one), or a
// first line of separators only (perf had no metric to print). The
// header itself may end in "," whatever the separator ("time,core,cpus,"
// for -x';'), or in nothing ("socket,cpus" of perf 6.1).
func metricOnlySep(lines []string) string {
	var content []string
	for _, l := range lines {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
			content = append(content, s)
		}
		if len(content) == 2 {
			break
		}
	}
	if len(content) == 0 || hasStatText(lines) {
		return ""
	}
	h := content[0]
	if sep := repeatedUnit(h); sep != "" {
		return sep // no header: nothing to name, and no value either
	}
	if len(content) < 2 || csvSep(h) != "" || strings.Contains(h, " # ") {
		return ""
	}
	sep := trailingSep(content[1])
	if u := repeatedUnit(sep); u != "" {
		sep = u // "CPU0|;|;|;" ends in empty fields
	}
	if sep == "" {
		return ""
	}
	h = strings.TrimSuffix(strings.TrimSuffix(h, sep), ",")
	for _, n := range strings.Split(strings.ReplaceAll(h, ",", sep), sep) {
		if n = strings.TrimSpace(n); n == "" || isPlainNum(n) || isNotValue(n) {
			return ""
		}
	}
	return sep
}

// hasStatText reports whether lines hold the text format's header or
// footer, which metric-only -x output never has (a program's own output
// before them may look like a header of names).
func hasStatText(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "Performance counter stats") || strings.Contains(l, "seconds time elapsed") {
			return true
		}
	}
	return false
}

// trailingSep returns the punctuation (up to 4 characters) that ends s.
func trailingSep(s string) string {
	i := len(s)
	for i > 0 && len(s)-i < 4 && isSepByte(s[i-1]) && s[i-1] != ' ' {
		i--
	}
	return s[i:]
}

// repeatedUnit returns u when s is u repeated (",,,,", "|;|;"), u being
// separator characters.
func repeatedUnit(s string) string {
	for k := 1; k <= 4 && k <= len(s); k++ {
		u := s[:k]
		if len(s)%k == 0 && strings.Repeat(u, len(s)/k) == s && trailingSep(u) == u {
			return u
		}
	}
	return ""
}

// metricOnlyHeader reads a header line: the number of place fields of
// the value lines and the metric names.
func metricOnlyHeader(h, sep string) (places int, names []string) {
	if h = strings.TrimSpace(h); !strings.HasSuffix(h, sep) && !strings.HasSuffix(h, ",") {
		h += sep
	}
	for {
		word, rest, ok := cutField(h, sep)
		if !ok {
			break
		}
		count, isPlace := metricOnlyPlaces[word]
		if !isPlace {
			break
		}
		places++
		if h = rest; count {
			places++
			if w, r, ok := cutField(h, sep); ok && (w == "cpus" || w == "ctrs") { // newer perf: "core,ctrs,"
				h = r
			}
		}
	}
	for _, n := range strings.Split(strings.TrimSuffix(h, sep), sep) {
		names = append(names, strings.TrimSpace(n))
	}
	if len(names) == 1 && names[0] == "" {
		names = nil
	}
	return places, names
}

// cutField cuts the first field of s at a comma or at sep, whichever
// comes first.
func cutField(s, sep string) (field, rest string, ok bool) {
	i, n := strings.Index(s, ","), 1
	if j := strings.Index(s, sep); j >= 0 && (i < 0 || j < i) {
		i, n = j, len(sep)
	}
	if i < 0 {
		return "", s, false
	}
	return strings.TrimSpace(s[:i]), s[i+n:], true
}

// isMetricOnlyHeader reports whether a line is a header (again): its first
// field is a place word, or a name where the lines have no place fields.
func isMetricOnlyHeader(s, sep string, places int) bool {
	first, _, _ := cutField(s+sep, sep)
	if _, ok := metricOnlyPlaces[first]; ok {
		return true
	}
	return places == 0 && first != "" && !isPlainNum(first) && (strings.HasSuffix(s, sep) || strings.HasSuffix(s, ","))
}

func parsePerfStatMetricOnly(lines []string, sep string) (*PerfStat, error) {
	st := &PerfStat{Format: "csv", MetricOnly: true, Rows: []PerfStatRow{}}
	places, names, header := 0, []string(nil), false
	for i, l := range lines {
		ln, s := i+1, strings.TrimSpace(l)
		if err := startedAgain(s, len(st.Rows), ln); err != nil {
			return nil, err
		}
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if !header || isMetricOnlyHeader(s, sep, places) {
			header = true
			if repeatedUnit(s) == "" {
				places, names = metricOnlyHeader(s, sep)
				continue
			}
		}
		if !strings.HasSuffix(s, sep) {
			return nil, errorf(ln, "perf stat --metric-only -x: %q does not end in the separator %q as perf's value lines do; give the output of one perf stat --metric-only -x run alone", clip(s), sep)
		}
		if err := st.addMetricOnlyLine(strings.Split(s, sep), places, names, ln); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// addMetricOnlyLine adds one row per metric value of a value line: the
// metric's name as the event (a MetricGroup row: metrics, no count).
func (st *PerfStat) addMetricOnlyLine(f []string, places int, names []string, ln int) error {
	if len(f) < places {
		return errorf(ln, "perf stat --metric-only: %d fields where the header names %d before the metrics", len(f), places)
	}
	var place PerfStatRow
	place.setCSVPlace(f[:places])
	for k, v := range f[places:] {
		if v = strings.TrimSpace(v); v == "" {
			continue // not computed, or perf's surplus separators
		}
		if k >= len(names) {
			return errorf(ln, "perf stat --metric-only: value %q in field %d, but the header names %d metrics; give the whole output, header line included", v, places+k+1, len(names))
		}
		if names[k] == "" {
			// perf never prints an empty metric name: the header
			// and the value lines do not belong together.
			return errorf(ln, "perf stat --metric-only: value %q in field %d, whose header field is empty; give the whole output of one run, header line included", v, places+k+1)
		}
		pct := strings.HasSuffix(v, "%")
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil {
			return errorf(ln, "perf stat --metric-only: value %q of %q is not a number", v, names[k])
		}
		row := place
		row.Event, row.MetricGroup, row.Supported, row.Counted, row.Multiplex = names[k], true, true, true, 1
		row.Metric = newMetric(x, names[k], pct)
		st.Rows = append(st.Rows, row)
	}
	return nil
}
