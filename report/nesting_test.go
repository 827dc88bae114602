package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// TestNestingColumns: a lab kernel's column measured a datapath inside a
// VM, the running kernel's the host's own. Headers say which columns are
// nested when they differ in it, and a report whose columns differ in nesting warns (once in the
// text) that a change between them includes the nesting overhead.
func TestNestingColumns(t *testing.T) {
	build := func(nested map[string]bool, cols ...string) (string, *Report) {
		set := &results.Set{}
		for _, k := range cols {
			for rep := range 2 {
				set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen-t1", Kernel: k, Rep: rep, Nested: nested[k],
					Axes:    map[string]string{"backend": "tap", "generator": "pktgen", "generator.pktgen.threads": "1"},
					Metrics: map[metric.Key]float64{"tx_pps": 1000 + float64(rep), "lost_pps": 10, "perf.cycles@vhost": 1e6}})
			}
		}
		r, err := Build(set, Options{By: "kernel"})
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		if err := WriteText(&text, r, ASCII); err != nil {
			t.Fatal(err)
		}
		return text.String(), r
	}
	out, r := build(map[string]bool{"stock": true}, "running", "stock")
	if !r.MixedNesting() || !r.IsNested("stock") || r.IsNested("running") {
		t.Errorf("running beside a lab kernel: nested %v", r.Nested)
	}
	for _, want := range []string{"stock (nested)", "(nested) = a lab kernel", "WARNING: the columns differ in nesting", "columns differ in nesting: stock ran the datapath inside a lab VM, running on the host"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("running beside a lab kernel: report lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "WARNING: the columns differ in nesting"); n != 1 {
		t.Errorf("the nesting warning appears %d times, want once:\n%s", n, out)
	}
	var thread *Table
	for _, tb := range r.Tables {
		if tb.Kind == KindThread {
			thread = tb
		}
	}
	if thread == nil || !strings.Contains(strings.Join(thread.Header, "|"), "stock (nested)") || !strings.Contains(strings.Join(thread.Notes, "\n"), "differ in nesting") {
		t.Errorf("thread table: %+v", thread)
	}

	// Two lab kernels: no warning; the mark both share is said once, in
	// the notes, not in every header.
	out, r = build(map[string]bool{"stock": true, "patched": true}, "stock", "patched")
	if r.MixedNesting() || strings.Contains(out, "differ in nesting") || strings.Contains(out, "(nested)") ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), "every column is a lab kernel") {
		t.Errorf("two lab kernels: no warning, both nested:\n%s", out)
	}
	out, _ = build(nil, "running")
	if strings.Contains(out, "nested") {
		t.Errorf("the running kernel alone says nested:\n%s", out)
	}
}
