package perfparse

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func rowByEvent(t *testing.T, st *PerfStat, ev string) PerfStatRow {
	t.Helper()
	for _, r := range st.Rows {
		if r.Event == ev {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", ev, st.Rows)
	return PerfStatRow{}
}

// The three fixture formats describe the same kind of measurement.
func TestPerfStatFixtures(t *testing.T) {
	for _, tc := range []struct {
		path, format string
		taskS        float64
		cs           uint64
		metric       float64
	}{
		{"testdata/perf-stat/fixture-text.txt", "text", 4.13945, 32714, 1.379},
		{"testdata/perf-stat/fixture-x.csv", "csv", 4.40374, 27371, 1.466},
		{"testdata/perf-stat/fixture-j.json", "json", 4.24957358, 29930, 1.414735},
	} {
		st, err := ParsePerfStat(openT(t, tc.path))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if st.Format != tc.format || len(st.Rows) != 8 {
			t.Errorf("%s: format %q, %d rows", tc.path, st.Format, len(st.Rows))
		}
		tcRow := rowByEvent(t, st, "task-clock")
		if !near(tcRow.Value, tc.taskS) || tcRow.Unit != "s" || tcRow.RawUnit != "msec" || tcRow.Metric == nil ||
			!near(tcRow.Metric.Value, tc.metric) || tcRow.Metric.Unit != "CPUs utilized" {
			t.Errorf("%s: task-clock %+v %+v", tc.path, tcRow, tcRow.Metric)
		}
		cs := rowByEvent(t, st, "context-switches")
		if cs.Count != tc.cs || cs.Value != float64(tc.cs) || cs.Unit != "" || cs.Metric.BaseUnit != "/sec" || !near(cs.Metric.Base, cs.Metric.Value*1e3) {
			t.Errorf("%s: context-switches %+v %+v", tc.path, cs, cs.Metric)
		}
		cyc := rowByEvent(t, st, "cycles")
		if cyc.Supported || !cyc.Counted || cyc.Value != 0 {
			t.Errorf("%s: cycles %+v", tc.path, cyc)
		}
	}
}

func TestPerfStatCSVVariants(t *testing.T) {
	in := "" +
		"1.001234567,4403.74,msec,task-clock,4403741749,100.00,1.466,CPUs utilized\n" +
		"qemu-system-x86-12619,27371,,context-switches,4403648901,66.85,6.215,K/sec\n" +
		"CPU1,280,,cpu-migrations,0.52%,4403621590,100.00,63.582,/sec\n" +
		"<not counted>,,branches,0,0.00,,\n" +
		"S0-D0-C1,2,11,,page-faults,4403546057,100.00,1.23%,of all branches\n"
	st, err := ParsePerfStat(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	r := st.Rows
	if r[0].IntervalS == nil || !near(*r[0].IntervalS, 1.001234567) || !near(r[0].Value, 4.40374) {
		t.Errorf("interval row %+v", r[0])
	}
	if r[1].Thread != "qemu-system-x86-12619" || r[1].TID != 12619 || r[1].Count != 27371 || !near(r[1].Multiplex, 0.6685) {
		t.Errorf("thread row %+v", r[1])
	}
	if r[2].CPU != "CPU1" || r[2].Variance == nil || !near(*r[2].Variance, 0.0052) || r[2].Count != 280 {
		t.Errorf("cpu row %+v", r[2])
	}
	if r[3].Counted || r[3].Event != "branches" {
		t.Errorf("not counted row %+v", r[3])
	}
	if r[4].CPU != "S0-D0-C1" || r[4].AggrCPUs != 2 || r[4].Count != 11 || !r[4].Metric.Percent || !near(r[4].Metric.Base, 0.0123) {
		t.Errorf("aggr row %+v %+v", r[4], r[4].Metric)
	}
}

// The locale and mail-paste variants of a perf stat output are
// transformations of an English original; they must read as the same
// numbers.
func TestPerfStatLocales(t *testing.T) {
	for _, base := range []string{"perf5-hw", "perf6-r5"} {
		want, err := ParsePerfStat(openT(t, "testdata/perf-stat/"+base+"-en.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if want.ElapsedS == nil || len(want.Rows) < 8 {
			t.Fatalf("%s-en: %+v", base, want)
		}
		for _, v := range []string{base + "-de.txt", base + "-fr.txt", base + "-ch.txt", base + "-c.txt", base + "-in.txt", "mail-" + base + "-de-collapsed.txt", "mail-" + base + "-fr-collapsed.txt"} {
			got, err := ParsePerfStat(openT(t, "testdata/perf-stat/"+v))
			if err != nil {
				t.Errorf("%s: %v", v, err)
				continue
			}
			if len(got.Rows) != len(want.Rows) || *got.ElapsedS != *want.ElapsedS || got.Runs != want.Runs || got.Target != want.Target {
				t.Errorf("%s: %d rows elapsed %v, want %d rows elapsed %v", v, len(got.Rows), *got.ElapsedS, len(want.Rows), *want.ElapsedS)
				continue
			}
			for i := range want.Rows {
				w, g := want.Rows[i], got.Rows[i]
				g.RawValue = w.RawValue
				if !reflect.DeepEqual(w, g) {
					t.Errorf("%s row %d:\n got %s\nwant %s", v, i, js(g), js(w))
				}
			}
		}
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestPerfStatText(t *testing.T) {
	st, err := ParsePerfStat(openT(t, "testdata/perf-stat/perf5-hw-de.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if st.NumberFormat != `decimal ',' grouping '.'` || !near(*st.ElapsedS, 13.378912345) || !near(*st.UserS, 95.123456) || !near(*st.SysS, 5.432109) {
		t.Errorf("format %q elapsed %v user %v sys %v", st.NumberFormat, *st.ElapsedS, *st.UserS, *st.SysS)
	}
	tc := rowByEvent(t, st, "task-clock")
	if !near(tc.Value, 100.58769) || tc.Metric.Value != 7.519 {
		t.Errorf("task-clock %+v", tc)
	}
	cs := rowByEvent(t, st, "context-switches")
	if cs.Count != 46997 || cs.Metric.Base != 467 {
		t.Errorf("context-switches %+v %+v", cs, cs.Metric)
	}
	cyc := rowByEvent(t, st, "cycles")
	if cyc.Count != 301876543210 || cyc.Multiplex != 0.8329 || cyc.Metric.BaseUnit != "Hz" || cyc.Metric.Base != 3.001e9 {
		t.Errorf("cycles %+v %+v", cyc, cyc.Metric)
	}
	ins := rowByEvent(t, st, "instructions")
	if ins.Metric.Unit != "insn per cycle" || len(ins.MoreMetrics) != 1 || ins.MoreMetrics[0].Unit != "stalled cycles per insn" || ins.MoreMetrics[0].Value != 0.11 {
		t.Errorf("instructions %+v", ins)
	}
	bm := rowByEvent(t, st, "branch-misses")
	if !bm.Metric.Percent || bm.Metric.Base != 0.0264 || bm.Metric.BaseUnit != "frac of all branches" {
		t.Errorf("branch-misses metric %+v", bm.Metric)
	}
	l1 := rowByEvent(t, st, "L1-dcache-loads")
	if l1.Counted || l1.Multiplex != 0 {
		t.Errorf("L1 %+v", l1)
	}

	r5, err := ParsePerfStat(openT(t, "testdata/perf-stat/perf6-r5-en.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r5.Runs != 5 || r5.Target != "'./bench --iterations 1000'" || *r5.ElapsedS != 1.23712 || *r5.ElapsedStddevS != 0.00643 || *r5.ElapsedVariance != 0.0052 {
		t.Errorf("r5 footer %+v", r5)
	}
	c := rowByEvent(t, r5, "cycles:u")
	if c.Variance == nil || *c.Variance != 0.0041 || c.Multiplex != 0.6685 || c.Count != 3703123456 {
		t.Errorf("cycles:u %+v", c)
	}
	if cs := rowByEvent(t, r5, "context-switches:u"); cs.Variance != nil {
		t.Errorf("context-switches:u has no variance printed: %+v", cs)
	}

	pt, err := ParsePerfStat(openT(t, "testdata/perf-stat/real-per-thread-tcg-names.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r := pt.Rows[0]; r.Thread != "CPU 1/TCG-19651" || r.TID != 19651 || r.Event != "task-clock" || !near(r.Value, 0.2725) {
		t.Errorf("per-thread row %+v", r)
	}
	if r := pt.Rows[2]; r.Thread != "python3-19584" || r.Counted || r.RawUnit != "msec" {
		t.Errorf("not counted per-thread row %+v", r)
	}

	iv, err := ParsePerfStat(openT(t, "testdata/perf-stat/real-interval.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r := iv.Rows[1]; r.IntervalS == nil || *r.IntervalS != 0.300299716 || r.Count != 2 || r.Event != "context-switches" {
		t.Errorf("interval row %+v", r)
	}
	pc, err := ParsePerfStat(openT(t, "testdata/perf-stat/real-per-cpu.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r := pc.Rows[2]; r.CPU != "CPU0" || r.Count != 1242 {
		t.Errorf("per-cpu row %+v", r)
	}
}

// Every perf stat capture reads the same after a mail client collapsed
// its whitespace and quoted it, but --metric-only's text, which is
// refused then.
func TestPerfStatCollapsedEverywhere(t *testing.T) {
	files, err := filepath.Glob("testdata/perf-stat/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasSuffix(f, ".golden") || strings.HasPrefix(base, "bad-") || strings.HasSuffix(f, ".json") || strings.HasSuffix(f, ".csv") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ParsePerfStat(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParsePerfStat(strings.NewReader(collapseReport(string(data))))
		if want.MetricOnly && len(want.Rows) > 0 {
			// --metric-only's text ties values to names by column
			// only: collapsed, it is refused, never misread.
			if err == nil || !strings.Contains(err.Error(), "whitespace collapsed") {
				t.Errorf("%s collapsed: %v, want the columns-gone error", base, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s collapsed: %v", base, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s collapsed reads differently:\n got %s\nwant %s", base, js(got), js(want))
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d text inputs checked", n)
	}
}

// A text input whose lines are neither counter rows nor footers is an
// error naming the first such line, not a run without counters; a run
// without counters (perf stat --null) still reads.
func TestPerfStatTextUnknownRowsAreAnError(t *testing.T) {
	unknown := " Performance counter stats for 'sleep 1':\n\n   12 frobs done\n\n       1.000892614 seconds time elapsed\n"
	_, err := ParsePerfStat(strings.NewReader(unknown))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(err.Error(), "12 frobs done") {
		t.Fatalf("unknown rows: err = %v, want a syntax error at line 3 quoting it", err)
	}
	null := " Performance counter stats for 'sleep 1':\n\n       1.000892614 seconds time elapsed\n"
	st, err := ParsePerfStat(strings.NewReader(null))
	if err != nil || len(st.Rows) != 0 || st.ElapsedS == nil || *st.ElapsedS != 1.000892614 {
		t.Fatalf("--null run: %+v, %v", st, err)
	}
}

// TestPerfStatCSVNoUnit reads -x output of perf before 3.13, which printed
// no unit field, and checks that output with one is never read that way.
func TestPerfStatCSVNoUnit(t *testing.T) {
	for in, want := range map[string]PerfStatRow{
		// perf 2.6.37-3.12: value,event; clocks in msec without a unit
		"2.350642,task-clock-msecs\n884,cache-misses\n": {Event: "task-clock-msecs", Value: 0.002350642, Unit: "s"},
		"CPU1,<not counted>,cycles,foo\n":               {Event: "cycles", CPU: "CPU1", Cgroup: "foo"},
		"12,context-switches,8.33%\n":                   {Event: "context-switches", Value: 12, Count: 12},
		"     1.5,S0-C1,2,7,cycles\n":                   {Event: "cycles", CPU: "S0-C1", AggrCPUs: 2, Value: 7, Count: 7},
		"7,cpu/event=0x3c,umask=0x0/\n":                 {Event: "cpu/event=0x3c,umask=0x0/", Value: 7, Count: 7},
		// perf 3.13: the unit field (empty) before the event and cgroup
		"884,,cache-misses,foo\n": {Event: "cache-misses", Value: 884, Count: 884, Cgroup: "foo"},
		// an unknown unit with a known one elsewhere: not read as value,event,cgroup
		"5,Bytes,imc/reads/\n1.5,msec,task-clock\n": {Event: "imc/reads/", Value: 5, Unit: "Bytes"},
	} {
		st, err := ParsePerfStat(strings.NewReader(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		got := st.Rows[0]
		if got.Event != want.Event || !near(got.Value, want.Value) || got.Unit != want.Unit || got.CPU != want.CPU ||
			got.AggrCPUs != want.AggrCPUs || got.Cgroup != want.Cgroup || want.Count != 0 && got.Count != want.Count {
			t.Errorf("%q: got %+v, want %+v", in, got, want)
		}
	}
	_, err := ParsePerfStat(strings.NewReader("884,cache-misses\n2,page-faults\n12,cycles,a,b,c\n"))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(err.Error(), "perf before 3.13") {
		t.Errorf("a later perf's line in old output: %v", err)
	}
}

// TestJoinEventTerms checks that an event's terms split by -x, are
// rejoined and that cgroup paths and other fields are left alone.
func TestJoinEventTerms(t *testing.T) {
	for in, want := range map[string]string{
		"5,,cpu/event=0x3c,umask=0x0/u,100,100.00,,":        "5||cpu/event=0x3c,umask=0x0/u|100|100.00||",
		"5,,software/config=3,period=1/,22,100.00,226,/sec": "5||software/config=3,period=1/|22|100.00|226|/sec",
		"1,,cycles,system.slice/sshd.service,7,100.00,,":    "1||cycles|system.slice/sshd.service|7|100.00||",
		"1,,cycles,foo/bar,baz/,7":                          "1||cycles|foo/bar|baz/|7",
		// no closing slash: left as it is (and refused later)
		"1,,uncore_imc_0/event=0x4,umask=0x3,100,100.00,,": "1||uncore_imc_0/event=0x4|umask=0x3|100|100.00||",
	} {
		if got := strings.Join(joinEventTerms(strings.Split(in, ","), ","), "|"); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestCSVSep(t *testing.T) {
	for in, want := range map[string]string{
		"42.72|;msec|;task-clock|;42719050|;100.00|;0.557|;CPUs utilized":              "|;",
		"8|;|;context-switches|;42719050|;100.00|;187.270|;/sec":                       "|;",
		"0.1;;CPU0;;100.51;;msec;;task-clock;;100510981;;100.00;;1.005;;CPUs utilized": ";;",
		"3 :  : software/config=0,period=1/ : 3 : 100.00 : 0.309 : CPUs utilized":      " :",
		"8,,context-switches,42719050,100.00,187.270,/sec":                             ",",
		"0::context-switches:u:27309606:100.00:0.000:/sec":                             ":",
		"46.997      context-switches":                                                 "", // text, not -x ' '
	} {
		if got := csvSep(in); got != want {
			t.Errorf("csvSep(%q) = %q, want %q", in, got, want)
		}
	}
}

// perf stat -j --metric-only objects with -I and an aggregation, in the
// layout of perf's stat-display.c (print_metric_begin, then
// print_metric_only_json per metric; newer perf names the aggregated
// count "counters"): one row per computed metric, in perf's order,
// placed like counter rows; "none" values and a place with no metric
// add none.
func TestPerfStatMetricOnlyJSONPlaces(t *testing.T) {
	in := `{"interval" : 0.100271537, "core" : "S0-D0-C1", "counters" : 2, "insn per cycle" : "1.52", "GHz" : "3.10", "branch-misses of all branches" : "none"}
{"interval" : 0.100271537, "cpu" : "3", "metric-value" : "none"}
`
	st, err := ParsePerfStat(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !st.MetricOnly || len(st.Rows) != 2 || st.Rows[0].Event != "insn per cycle" || st.Rows[1].Event != "GHz" {
		t.Fatalf("%+v", st)
	}
	r := st.Rows[1]
	if r.CPU != "S0-D0-C1" || r.AggrCPUs != 2 || r.IntervalS == nil || *r.IntervalS != 0.100271537 ||
		r.Metric == nil || r.Metric.Base != 3.1e9 || r.Metric.BaseUnit != "Hz" {
		t.Errorf("%+v %+v", r, r.Metric)
	}
}

// Newer perf names the aggregated count "ctrs" in the --metric-only -x
// header (stat-display.c's aggr_header_csv: "core,ctrs,"), where perf
// 6.1 said "cpus"; the count is a place field, not a metric.
func TestPerfStatMetricOnlyCSVCtrs(t *testing.T) {
	for _, word := range []string{"cpus", "ctrs"} {
		in := "time,core," + word + ",GHz,insn per cycle,\n     0.100271537,S0-D0-C0,2,3.10,1.52,\n"
		st, err := ParsePerfStat(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", word, err)
		}
		if len(st.Rows) != 2 || st.Rows[0].Event != "GHz" || st.Rows[0].CPU != "S0-D0-C0" || st.Rows[0].AggrCPUs != 2 || st.Rows[1].Metric.Value != 1.52 {
			t.Errorf("%s: %+v", word, st.Rows)
		}
	}
}
