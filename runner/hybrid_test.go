package runner

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/perfparse"
)

// TestAddPerfStatHybrid: on a hybrid Intel CPU perf stat prints one row
// per core type (cpu_core/cycles/, cpu_atom/cycles/), each scaled to the
// whole time from the share of it the thread ran there. The rows merge
// into perf.cycles as the sum of the unscaled counts; <not counted> on the
// core type a pinned thread never ran on is no "no thread ran" warning;
// shares that sum to less than 1 (multiplexing) scale the merged count and
// are recorded. The inputs are written from perf's documented output
// (testdata/perf-stat-hybrid-*.csv; perfparse/testdata/README.md).
func TestAddPerfStatHybrid(t *testing.T) {
	for _, tc := range []struct {
		file    string
		want    map[metric.Key]float64
		running map[metric.Key]float64
	}{
		{"pinned", map[metric.Key]float64{"perf.cycles@vhost": 8412345678, "perf.instructions@vhost": 19876543210, "perf.branch-misses@vhost": 1234567}, nil},
		// 8e9 x 75% + 4.8e9 x 25%; 16e9 x 75% + 6.4e9 x 25%.
		{"migrating", map[metric.Key]float64{"perf.cycles@vhost": 7.2e9, "perf.instructions@vhost": 13.6e9}, nil},
		// (8e9 x 60% + 4.8e9 x 20%) / 80%.
		{"multiplexed", map[metric.Key]float64{"perf.cycles@vhost": 7.2e9, "perf.instructions@vhost": 13.6e9},
			map[metric.Key]float64{"perf.cycles@vhost": 0.8, "perf.instructions@vhost": 0.8}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/perf-stat-hybrid-" + tc.file + ".csv")
			if err != nil {
				t.Fatal(err)
			}
			st, err := perfparse.ParsePerfStat(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			s := &results.Sample{Metrics: map[metric.Key]float64{}, Labels: map[string]string{}}
			unsupported, notCounted := addPerfStat(s, st, "vhost", true)
			if len(unsupported) != 0 || len(notCounted) != 0 {
				t.Errorf("unsupported %v, not counted %v; want none (cpu_atom not counting a P-core thread is normal)", unsupported, notCounted)
			}
			for k, v := range tc.want {
				if got := s.Metrics[k]; math.Abs(got-v) > v*1e-9 {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
			for k := range s.Metrics {
				if strings.Contains(string(k), "cpu_core") || strings.Contains(string(k), "cpu_atom") {
					t.Errorf("hybrid key %s left unmerged", k)
				}
			}
			if len(s.PerfRunning) != len(tc.running) {
				t.Errorf("perf_running %v, want %v", s.PerfRunning, tc.running)
			}
			for k, v := range tc.running {
				if got := s.PerfRunning[k]; math.Abs(got-v) > 1e-9 {
					t.Errorf("perf_running[%s] = %v, want %v", k, got, v)
				}
			}
			if s.Labels["perf_hybrid"] != "cpu_atom+cpu_core" {
				t.Errorf("perf_hybrid label %q", s.Labels["perf_hybrid"])
			}
		})
	}

	// No core type counted: the event is reported as not counted, once.
	st, err := perfparse.ParsePerfStat(strings.NewReader("<not counted>,,cpu_core/cycles/,0,0.00,,\n<not counted>,,cpu_atom/cycles/,0,0.00,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	if _, nc := addPerfStat(s, st, "vhost", true); strings.Join(nc, ",") != "cycles" || len(s.Metrics) != 0 {
		t.Errorf("nothing counted: not counted %v, metrics %v; want cycles and none", nc, s.Metrics)
	}
}

// TestHybridEvent: the names perf prints on hybrid CPUs, and what is not
// one.
func TestHybridEvent(t *testing.T) {
	for in, want := range map[string]string{
		"cpu_core/cycles/": "cpu_core cycles", "cpu_atom/instructions/": "cpu_atom instructions",
		"cpu_core/cycles/u": "cpu_core cycles:u", "cpu_lowpower/branch-misses/": "cpu_lowpower branch-misses",
		"cycles": "", "cpu/event=0x3c/": "", "cpu_core/event=0x3c,umask=0/": "", "msr/tsc/": "", "cpu_/cycles/": "",
	} {
		pmu, base, ok := results.HybridEvent(in)
		got := ""
		if ok {
			got = pmu + " " + base
		}
		if got != want {
			t.Errorf("HybridEvent(%q) = %q, want %q", in, got, want)
		}
	}
	if m := results.Describe("perf.cpu_core/branch-misses/@vhost"); m.Better != metric.LowerIsBetter {
		t.Errorf("cpu_core/branch-misses/ is %v, want lower is better like branch-misses", m.Better)
	}
}

// TestScaledWarning: counters perf scaled up (multiplexed) are named in a
// warning per target; counters that ran all the time are not.
func TestScaledWarning(t *testing.T) {
	s := &results.Sample{PerfRunning: map[metric.Key]float64{"perf.cycles@vhost": 0.8, "perf.instructions@vhost": 0.6, "perf.cycles@vcpu": 0.5}}
	w := scaledWarning(s, "vhost", true)
	if !strings.Contains(w, "perf stat vhost: cycles,instructions counted only part of the time (down to 60%") {
		t.Errorf("warning %q", w)
	}
	if w := scaledWarning(s, "kpktgend", true); w != "" {
		t.Errorf("a target without scaled counters: %q", w)
	}
}

// An event no hybrid PMU supports is reported once by its plain name; one
// PMU's <not supported> beside another's count is not reported.
func TestAddPerfStatHybridUnsupported(t *testing.T) {
	st, err := perfparse.ParsePerfStat(strings.NewReader("<not supported>,,cpu_core/stalled-cycles-frontend/,0,100.00,,\n" +
		"<not supported>,,cpu_atom/stalled-cycles-frontend/,0,100.00,,\n" +
		"1000,,cpu_core/topdown-x/,100,100.00,,\n<not supported>,,cpu_atom/topdown-x/,0,100.00,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	unsupported, notCounted := addPerfStat(s, st, "vhost", false)
	if strings.Join(unsupported, ",") != "stalled-cycles-frontend" || len(notCounted) != 0 || s.Metrics["perf.topdown-x"] != 1000 {
		t.Errorf("unsupported %v, not counted %v, metrics %v; want stalled-cycles-frontend, none, topdown-x 1000", unsupported, notCounted, s.Metrics)
	}
}

// TestPerfStatMetricGroupsNoCounts: perf 6.5's metric group lines
// (TopdownL1 and its members, a perf stat -x, excerpt from a 2023 mail)
// carry metrics, not counts: the sample gets the counters only.
func TestPerfStatMetricGroupsNoCounts(t *testing.T) {
	const in = "32139.34,msec,cpu-clock,32139351409,100.00,32.001,CPUs utilized\n" +
		",16067494476,100.00,,,,TopdownL1 (cpu_core)\n" +
		",,,,,0.0,%  tma_bad_speculation\n" +
		",10188319019,63.00,,,41.3,%  tma_frontend_bound\n"
	st, err := perfparse.ParsePerfStat(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	unsupported, notCounted := addPerfStat(s, st, "vhost", false)
	if len(unsupported)+len(notCounted) != 0 {
		t.Errorf("unsupported %v, not counted %v; want none", unsupported, notCounted)
	}
	if len(s.Metrics) != 1 || math.Abs(s.Metrics["perf.cpu-clock"]-32.13934) > 1e-9 {
		t.Errorf("metrics %v, want only perf.cpu-clock = 32.13934 (s)", s.Metrics)
	}
}
