package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/scenarios"
)

// runnerSamples makes samples with the axes the runner records for the
// cells of scenario yaml (scenarios.Cell.Axes: every axis that applies to
// the cell, so a plain TAP cell has no pin.vhost), two kernels, reps each.
func runnerSamples(t *testing.T, yaml string, reps int) *results.Set {
	t.Helper()
	s, err := scenarios.Load("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	set := &results.Set{Env: map[string]*results.Env{}}
	for _, k := range []string{"stock", "patched"} {
		set.Env[k] = &results.Env{CPUModel: "Intel(R) Core(TM) i5-6300HQ CPU @ 2.30GHz"}
		for i, c := range s.Expand() {
			for rep := range reps {
				tx := float64(100000*(i+1) + 1000*rep)
				set.Samples = append(set.Samples, results.Sample{Cell: c.Name, Rep: rep, Kernel: k, Axes: c.Axes,
					Metrics: map[metric.Key]float64{"tx_pps": tx, "lost_pps": tx / 2, "tx_run_s": 2},
					Labels:  map[string]string{"generator": "pktgen", "qdisc": c.Qdisc}})
			}
		}
	}
	return set
}

// One table per thread count with TAP and TAP+vhost-net rows, although the
// TAP cells lack pin.vhost (no vhost worker there); pin.vhost values that
// differ make one table each, each with the TAP row; TAP comes first.
func TestThreadTablesShareTapRows(t *testing.T) {
	set := runnerSamples(t, `backend: [tap+vhost, tap]
qdisc: fq_codel
pin: {vhost: 0}
generator: {pktgen: {mode: multiqueue, threads: [1, 4], count: 5000, xmit_mode: start_xmit}}
`, 2)
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var thread []*Table
	for _, tb := range r.Tables {
		if tb.Kind == KindThread {
			thread = append(thread, tb)
		}
	}
	if len(thread) != 2 {
		t.Fatalf("%d thread tables, want one per thread count:\n%s", len(thread), titles(r))
	}
	for i, tb := range thread {
		want := []string{"1 thread", "4 threads"}[i]
		if !strings.Contains(tb.Context, want) || !strings.Contains(tb.Context, "vhost pinned to CPU 0") {
			t.Errorf("table %d context %q, want %q and the vhost pin", i, tb.Context, want)
		}
		var groups []string
		for _, row := range tb.Rows {
			if len(groups) == 0 || groups[len(groups)-1] != row.Labels[0] {
				groups = append(groups, row.Labels[0])
			}
		}
		if strings.Join(groups, ",") != "TAP,TAP + vhost-net" {
			t.Errorf("table %d rows %v, want TAP then TAP + vhost-net", i, groups)
		}
	}
	// Pinned and unpinned vhost: a table each, both with the TAP row.
	set = runnerSamples(t, `backend: [tap, tap+vhost]
pin: {vhost: [none, 0]}
generator: {pktgen: {count: 5000}}
`, 1)
	r, err = Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ctx []string
	for _, tb := range r.Tables {
		if tb.Kind != KindThread {
			continue
		}
		if len(tb.Rows) != 4 || tb.Rows[0].Labels[0] != "TAP" || tb.Rows[2].Labels[0] != "TAP + vhost-net" {
			t.Errorf("table %q: rows %v", tb.Context, tb.Rows)
		}
		ctx = append(ctx, tb.Context)
	}
	if len(ctx) != 2 || !strings.Contains(ctx[0]+ctx[1], "unpinned") || !strings.Contains(ctx[0]+ctx[1], "vhost pinned to CPU 0") {
		t.Errorf("contexts %q, want one unpinned and one vhost pinned to CPU 0", ctx)
	}
}

func titles(r *Report) string {
	var b strings.Builder
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "%s: %s [%s]\n", t.Kind, t.Title, t.Context)
	}
	return b.String()
}

// Columns measured on different CPUs (compare of runs from two machines)
// name both in the table's title, in column order; one CPU is named once.
func TestContextNamesEachColumnsCPU(t *testing.T) {
	const yaml = "backend: tap\ngenerator: {pktgen: {count: 5000}}\n"
	for _, tc := range []struct{ patched, want string }{
		{"AMD EPYC 7B13 64-Core Processor", ", Core i5-6300HQ / AMD EPYC 7B13 64-Core, "},
		{"Intel(R) Core(TM) i5-6300HQ CPU @ 2.30GHz", ", Core i5-6300HQ, "},
	} {
		set := runnerSamples(t, yaml, 1)
		set.Env["patched"] = &results.Env{CPUModel: tc.patched}
		r, err := Build(set, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Tables) == 0 || r.Tables[0].Kind != KindThread {
			t.Fatalf("want a thread table first:\n%s", titles(r))
		}
		if got := r.Tables[0].Context; !strings.Contains(got, tc.want) {
			t.Errorf("patched on %q: context %q, want %q", tc.patched, got, tc.want)
		}
	}
}
