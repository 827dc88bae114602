package perfparse

import (
	"math"
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
