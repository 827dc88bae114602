package perfparse

import (
	"sort"
	"strconv"
	"strings"
)

// perf stat --metric-only's text layout: a header line of metric names
// (the units the counter layout prints after "#", "insn per cycle"),
// right-aligned in columns at least 20 wide, then a line of values per
// interval and aggregation unit under them, after the place (the -I
// timestamp, CPU0, S0-D0-C0 and its count, comm-pid):
//
//	              GHz  insn per cycle  branch-misses of all branches
//	             3.05            1.31                           0.74
//
//	#           time  MB  Total_Memory_BW MB  Memory_RD_BW_Chip_1 ...
//	     1.000067388                 36.4                      0.2 ...
//
// A name as long as its column is followed by one space only, so names
// cannot be split at spaces; values can (they hold none), and each ends
// where its name ends, give or take one column per long name before it
// (perf widens a value column by one over its header). So the names are
// read at the value columns' right edges, left to right, following that
// drift. A metric perf could not compute is blank. The totals perf
// prints after -I intervals when interrupted come without timestamps,
// under their own "Performance counter stats for" line.

// findMetricOnlyText returns the index of the --metric-only header line
// and whether its rows carry -I timestamps; ok is false when lines are
// not that layout. Values without a header (perf 6.14-rc printed none)
// are an error.
func findMetricOnlyText(lines []string) (header int, interval, ok bool, err error) {
	for i, l := range lines {
		s := normalizeSpaces(l)
		if reStatMetricOnlyHeader().MatchString(s) && !reStatIntervalHeader().MatchString(s) && !strings.Contains(s, "counts") {
			return i, true, true, nil
		}
	}
	// Without -I: the first line after perf's header holds the names,
	// the next one values.
	h := -1
	for i, l := range lines {
		if reStatHeader().MatchString(normalizeSpaces(l)) {
			h = i
		}
	}
	if h < 0 {
		return 0, false, false, nil
	}
	var next []int
	for i := h + 1; i < len(lines) && len(next) < 2; i++ {
		if strings.TrimSpace(lines[i]) != "" {
			next = append(next, i)
		}
	}
	if len(next) == 0 {
		return 0, false, false, nil
	}
	first := strings.Fields(normalizeSpaces(lines[next[0]]))
	if valuesOnly(placeless(first)) {
		return 0, false, false, errorf(next[0]+1, "perf stat: %q is metric values without a header line naming them, as perf stat --metric-only printed them for a while (perf 6.14); give --metric-only -j output", clip(normalizeSpaces(lines[next[0]])))
	}
	if len(next) < 2 || reStatFooter().MatchString(collapse(normalizeSpaces(lines[next[1]]))) {
		return 0, false, false, nil
	}
	if !valuesOnly(placeless(strings.Fields(normalizeSpaces(lines[next[1]])))) {
		return 0, false, false, nil
	}
	return next[0], false, true, nil
}

// valuesOnly reports whether f is one or more metric values.
func valuesOnly(f []string) bool {
	for _, w := range f {
		if _, ok := metricOnlyValue(w); !ok {
			return false
		}
	}
	return len(f) > 0
}

// placeless drops a CPU or aggregation label (and its count) before
// the values.
func placeless(f []string) []string {
	if len(f) > 0 && strings.HasPrefix(f[0], "CPU") && isPlainNum(f[0][3:]) {
		return f[1:]
	}
	if len(f) > 1 && reAggrID().MatchString(f[0]) {
		return f[2:]
	}
	return f
}

// metricOnlyValue reads one metric value as perf's %f prints it (with
// a decimal comma in such a locale; metrics are never grouped), with
// "%" after a percentage.
func metricOnlyValue(w string) (float64, bool) {
	w = strings.TrimSuffix(w, "%")
	if strings.Count(w, ",") == 1 && !strings.Contains(w, ".") {
		w = strings.Replace(w, ",", ".", 1)
	}
	if w == "" || !(startsNumber(w) || w[0] == '-') {
		return 0, false
	}
	x, err := strconv.ParseFloat(w, 64)
	return x, err == nil
}

// word is a token of a line and its columns [start, end).
type word struct {
	s          string
	start, end int
}

func words(l string) []word {
	var out []word
	for i := 0; i < len(l); {
		for i < len(l) && l[i] == ' ' {
			i++
		}
		j := i
		for j < len(l) && l[j] != ' ' {
			j++
		}
		if j > i {
			out = append(out, word{l[i:j], i, j})
		}
		i = j
	}
	return out
}

// metricOnlyLine is one value line: its place, where the place ends
// (-1: nothing before the values) and its values.
type metricOnlyLine struct {
	place    PerfStatRow
	placeEnd int
	values   []word
}

func parsePerfStatMetricOnlyText(lines []string, header int, interval bool) (*PerfStat, error) {
	st := &PerfStat{Format: "text", MetricOnly: true, Rows: []PerfStatRow{}}
	for _, l := range lines[:header] {
		if m := reStatHeader().FindStringSubmatch(normalizeSpaces(l)); m != nil {
			st.Target = m[1]
		}
	}
	var vals []metricOnlyLine
	totals := false // after -I: the totals, without timestamps
	for i := header + 1; i < len(lines); i++ {
		l := strings.ReplaceAll(lines[i], "\t", " ")
		l = strings.TrimPrefix(l, "^C") // the terminal's echo of the interrupt
		s := normalizeSpaces(l)
		switch {
		case s == "" || strings.HasPrefix(s, "#") || s == "..." || s == "[...]":
			continue // blank, the header again (every 25 intervals), a cut
		case reStatHeader().MatchString(s):
			st.Target, totals = reStatHeader().FindStringSubmatch(s)[1], true
			continue
		}
		if m := reStatFooter().FindStringSubmatch(collapse(s)); m != nil {
			if err := st.setMetricOnlyFooter(m, i+1); err != nil {
				return nil, err
			}
			continue
		}
		v, err := metricOnlyValueLine(l, i+1, interval && !totals)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	names, err := metricOnlyColumns(strings.ReplaceAll(lines[header], "\t", " "), header+1, vals)
	if err != nil {
		return nil, err
	}
	for _, v := range vals {
		for _, w := range v.values {
			x, _ := metricOnlyValue(w.s)
			name := names[w.end]
			row := v.place
			row.Event, row.MetricGroup, row.Supported, row.Counted, row.Multiplex = name, true, true, true, 1
			row.Metric = newMetric(x, name, strings.HasSuffix(w.s, "%"))
			st.Rows = append(st.Rows, row)
		}
	}
	return st, nil
}

// metricOnlyValueLine reads a value line: the timestamp (-I), the place
// and the values.
func metricOnlyValueLine(l string, ln int, interval bool) (metricOnlyLine, error) {
	v := metricOnlyLine{placeEnd: -1}
	ws := words(l)
	if interval && len(ws) > 0 {
		t, err := strconv.ParseFloat(ws[0].s, 64)
		if err != nil {
			return v, errorf(ln, "perf stat --metric-only -I: %q does not start with a timestamp", clip(strings.TrimSpace(l)))
		}
		v.place.IntervalS, v.placeEnd, ws = &t, ws[0].end, ws[1:]
	}
	var label []string
	for len(ws) > 0 {
		if _, ok := metricOnlyValue(ws[0].s); ok {
			break
		}
		label, v.placeEnd, ws = append(label, ws[0].s), ws[0].end, ws[1:]
	}
	if len(label) > 0 {
		lab := strings.Join(label, " ")
		switch {
		case strings.HasPrefix(lab, "CPU") && isPlainNum(lab[3:]):
			v.place.CPU = lab
		case reAggrID().MatchString(lab):
			v.place.CPU = lab
			if len(ws) > 0 { // the number of CPUs (counters) aggregated
				if n, err := strconv.Atoi(ws[0].s); err == nil {
					v.place.AggrCPUs, v.placeEnd, ws = n, ws[0].end, ws[1:]
				}
			}
		case threadTID(lab) > 0:
			v.place.Thread, v.place.TID = lab, threadTID(lab)
		default:
			return v, errorf(ln, "perf stat --metric-only: %q before the values is not a CPU, aggregation unit or thread", clip(lab))
		}
	}
	prev := v.placeEnd
	for _, w := range ws {
		if _, ok := metricOnlyValue(w.s); !ok {
			return v, errorf(ln, "perf stat --metric-only: %q among the values is not a number", clip(w.s))
		}
		if prev >= 0 && w.start-prev < 2 {
			// perf pads every value to its column of 20 or more:
			// one space means the columns are gone, and with them
			// which name a value is under.
			return v, errorf(ln, "perf stat --metric-only: values one space apart in %q: the columns that tie values to names are gone (whitespace collapsed?); give the output as perf printed it, or --metric-only -j or -x, output", clip(strings.TrimSpace(l)))
		}
		prev = w.end
	}
	v.values = ws
	return v, nil
}

// metricOnlyColumns names the value columns, by their right edges in
// the lines as they are, after the header words that end above them.
// Lines whose place is longer or shorter than most lines' (the totals
// without a timestamp) are shifted to line up first.
func metricOnlyColumns(h string, ln int, vals []metricOnlyLine) (map[int]string, error) {
	count := map[int]int{}
	for _, v := range vals {
		count[v.placeEnd]++
	}
	typ := -1
	for p, n := range count {
		if n > count[typ] || n == count[typ] && p > typ {
			typ = p
		}
	}
	var hw []word
	for _, w := range words(h) {
		if w.start > typ && w.s != "#" {
			hw = append(hw, w)
		}
	}
	edges := map[int]bool{}
	for i := range vals {
		shift := vals[i].placeEnd - typ
		for k := range vals[i].values {
			vals[i].values[k].end -= shift
			edges[vals[i].values[k].end] = true
		}
	}
	var sorted []int
	for e := range edges {
		sorted = append(sorted, e)
	}
	sort.Ints(sorted)
	names := map[int]string{}
	next, drift, from := 0, 0, -1 // hw[next:] are not taken; from: where the next name may begin
	for _, e := range sorted {
		if n, ok := names[e-1]; ok {
			names[e] = n // the same column
			continue
		}
		best := -1
		for k := next; k < len(hw) && hw[k].end <= e-drift+2; k++ {
			if d := hw[k].end - (e - drift); d >= -2 && (best < 0 || abs(d) < abs(hw[best].end-(e-drift))) {
				best = k
			}
		}
		if best < 0 {
			return nil, errorf(ln, "perf stat --metric-only: no metric name in the header ends above the values ending in column %d (whitespace collapsed, or lines cut?); give --metric-only -j or -x, output", e+1)
		}
		if from < 0 {
			from = hw[next].start
		}
		names[e] = collapse(h[from:hw[best].end])
		next, drift, from = best+1, e-hw[best].end, hw[best].end
	}
	return names, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// setMetricOnlyFooter sets the elapsed, user or sys seconds.
func (st *PerfStat) setMetricOnlyFooter(m []string, ln int) error {
	x, ok := metricOnlyValue(m[1])
	if !ok {
		return errorf(ln, "perf stat: %q seconds is not a number", m[1])
	}
	switch m[3] {
	case "time elapsed":
		st.ElapsedS = &x
	case "user":
		st.UserS = &x
	case "sys":
		st.SysS = &x
	}
	return nil
}
