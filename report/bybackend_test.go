package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// --by backend of a real lab run (stock and patched, TAP and TAP+vhost-net,
// 3 runs per cell) pairs each TAP row with its TAP+vhost-net row. TAP
// cells have no pin.vhost (no vhost worker to pin), TAP+vhost-net cells
// pin.vhost=0: the rows were apart and every change cell read "-". Each
// value is the median of the raw samples, each change the change of those
// medians, and the header says whose vhost is pinned.
func TestByBackendPairsRealRun(t *testing.T) {
	set, r := built(t, Options{By: "backend", Kinds: []string{KindThread}}, "lab-pktgen-3run-tcg")
	median := func(kernel, backend, threads string, key metric.Key) float64 {
		var v []float64
		for _, s := range set.Samples {
			if s.Kernel == kernel && s.Axes["backend"] == backend && s.Axes["generator.pktgen.threads"] == threads {
				v = append(v, s.Metrics[key])
			}
		}
		if len(v) != 3 {
			t.Fatalf("%s %s t%s: %d samples, want 3", kernel, backend, threads, len(v))
		}
		slices.Sort(v)
		return v[1]
	}
	if got := r.ColumnAxes; fmt.Sprint(got) != "map[tap+vhost:map[pin.vhost:0]]" {
		t.Errorf("ColumnAxes %v, want tap+vhost's pin.vhost 0", got)
	}
	var one *Table
	for _, tb := range r.Tables {
		if !strings.Contains(tb.Context, "vhost pinned to CPU 0 (tap+vhost)") {
			t.Errorf("table %q: context %q does not say tap+vhost's vhost is pinned to CPU 0", tb.Title, tb.Context)
		}
		if strings.Contains(tb.Context, "1 thread,") {
			one = tb
		}
	}
	if one == nil || !slices.Equal(one.Header, []string{"tap", "tap+vhost", "change"}) {
		t.Fatalf("no 1-thread table with columns tap, tap+vhost, change: %+v", one)
	}
	checked := 0
	for _, row := range one.Rows {
		key := map[string]metric.Key{"Transmitted": "tx_pps", "Lost": "lost_pps"}[row.Labels[1]]
		if key == "" {
			continue
		}
		base, new := median(row.Labels[0], "tap", "1", key), median(row.Labels[0], "tap+vhost", "1", key)
		for i, want := range []float64{base, new} {
			if c := row.Cells[i]; c.Value == nil || *c.Value != want {
				t.Errorf("%v: cell %d is %q, want the median %v", row.Labels, i, c.Text, want)
			}
		}
		d := row.Cells[2].Delta
		switch {
		case d == nil:
			t.Errorf("%v: change %q has no delta: the rows do not pair", row.Labels, row.Cells[2].Text)
		case base == 0 && new == 0:
			if row.Cells[2].Text != "same" {
				t.Errorf("%v: 0 vs 0 reads %q, want same", row.Labels, row.Cells[2].Text)
			}
		case math.Abs(d.Pct-(new/base-1)*100) > 1e-9:
			t.Errorf("%v: change %.4f%%, want %.4f%% (medians %v -> %v)", row.Labels, d.Pct, (new/base-1)*100, base, new)
		}
		checked++
	}
	if checked != 4 {
		t.Errorf("%d Transmitted and Lost rows, want 4 (stock and patched)", checked)
	}
	for _, tb := range r.Tables {
		for _, l := range strings.Split(drawTable(tb, ASCII), "\n") {
			if w := width(l); w > MaxWidth {
				t.Errorf("table %q: a line %d columns wide (> %d): %q", tb.Title, w, MaxWidth, l)
			}
		}
	}
}

// An axis that one column's cells all lack pairs the columns' cells only
// when the other column's cells all share one value of it: two vhost
// pinnings of TAP+vhost-net stay two rows, neither merged with the other
// nor with TAP's row, and no column gets the axis as its context.
func TestByBackendKeepsPinningsApart(t *testing.T) {
	sample := func(backend, pin string, rep int) results.Sample {
		axes := map[string]string{"backend": backend, "generator": "pktgen", "qdisc": "fq_codel"}
		cell := backend + "/pktgen-t1/fq_codel"
		if pin != "" {
			axes["pin.vhost"] = pin
			cell += "/vhost-pin" + pin
		}
		return results.Sample{Cell: cell, Kernel: "stock", Rep: rep, Axes: axes, Metrics: map[metric.Key]float64{"tx_pps": float64(100 + rep)}}
	}
	cellsOf := func(pins ...string) map[string][]string {
		set := &results.Set{Env: map[string]*results.Env{}}
		for rep := range 3 {
			set.Samples = append(set.Samples, sample("tap", "", rep))
			for _, p := range pins {
				set.Samples = append(set.Samples, sample("tap+vhost", p, rep))
			}
		}
		r, err := Build(set, Options{By: "backend", Kinds: []string{KindCompare}})
		if err != nil {
			t.Fatal(err)
		}
		cells := map[string][]string{}
		for _, s := range r.Summaries {
			if s.Metric == "tx_pps" && !slices.Contains(cells[s.Column], s.Cell) {
				cells[s.Column] = append(cells[s.Column], s.Cell)
			}
		}
		if len(pins) > 1 && r.ColumnAxes != nil {
			t.Errorf("pins %v: ColumnAxes %v, want none", pins, r.ColumnAxes)
		}
		return cells
	}
	got := cellsOf("0")
	if want := "map[tap:[stock:pktgen-t1/fq_codel] tap+vhost:[stock:pktgen-t1/fq_codel]]"; fmt.Sprint(got) != want {
		t.Errorf("one pinning: cells %v, want %s (paired)", got, want)
	}
	got = cellsOf("0", "1")
	want := "map[tap:[stock:pktgen-t1/fq_codel] tap+vhost:[stock:pktgen-t1/fq_codel/vhost-pin0 stock:pktgen-t1/fq_codel/vhost-pin1]]"
	if fmt.Sprint(got) != want {
		t.Errorf("two pinnings: cells %v, want %s (apart)", got, want)
	}
}

// --by generator: each generator's own parameters (generator.pktgen.*,
// generator.trafgen.*) are row axes, as before the column axes. Every
// other generator's cells lack them, so the column-axis rule took them
// for the column's: the tables' context lost "60 B packets" and "1
// stream" and listed every generator's raw parameters ("bitrate
// (iperf3)") in each table, and no row paired for it.
func TestByGeneratorKeepsItsParametersRowAxes(t *testing.T) {
	_, r := built(t, Options{By: "generator", Kinds: []string{KindThread}}, "quickstart-tcg")
	if r.ColumnAxes != nil {
		t.Errorf("ColumnAxes %v, want none: a generator's parameters belong to its rows", r.ColumnAxes)
	}
	want := map[string]string{"trafgen": "60 B packets", "iperf3": "1 stream"}
	for _, tb := range r.Tables {
		gen, _, _ := strings.Cut(tb.Context, ",")
		if w, ok := want[gen]; ok {
			delete(want, gen)
			if !strings.Contains(tb.Context, w) || strings.Contains(tb.Context, "(iperf3)") {
				t.Errorf("%s table: context %q, want %q and no other column's parameters", gen, tb.Context, w)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("no table for %v", want)
	}
}

// A column axis stays in the column's summaries: a CSV line or a JSON
// summary read alone says tap+vhost's vhost was pinned to CPU 0, as the
// text's context does (and as both did before the rows paired), and
// says nothing of a pin for tap, which has no vhost worker.
func TestByBackendSummariesKeepColumnAxes(t *testing.T) {
	_, r := built(t, Options{By: "backend", Kinds: []string{KindThread}}, "lab-pktgen-3run-tcg")
	want := map[string]string{"tap": "", "tap+vhost": "0"}
	for _, s := range r.Summaries {
		if got := s.Axes["pin.vhost"]; got != want[s.Column] {
			t.Fatalf("%s %s %s: pin.vhost %q, want %q", s.Column, s.Cell, s.Metric, got, want[s.Column])
		}
	}
	var b strings.Builder
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	hdr := strings.Split(lines[0], ",")
	pin, col := slices.Index(hdr, "axis.pin.vhost"), slices.Index(hdr, "backend")
	if pin < 0 || col < 0 {
		t.Fatalf("CSV header %q: no axis.pin.vhost or backend column", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if f[pin] != want[f[col]] {
			t.Fatalf("CSV line %q: pin.vhost %q, want %q", l, f[pin], want[f[col]])
		}
	}
}

// Two cells of one column never merge into one row. tap's and
// macvtap's cells are both named "pktgen-t1/fq_codel" (each ran one
// txqueuelen), tap+vhost ran both txqueuelens with its vhost pinned: its
// two cells pair with tap's and with macvtap's axes, and took the one
// name both share, six samples of two cells in one row. A partner name
// that two different rows share pairs no column-axis cell.
func TestColumnAxesNeverMergeCells(t *testing.T) {
	set := &results.Set{Env: map[string]*results.Env{}}
	add := func(backend, txq, pin, cell string) {
		for rep := range 3 {
			axes := map[string]string{"backend": backend, "generator": "pktgen", "txqueuelen": txq}
			if pin != "" {
				axes["pin.vhost"] = pin
			}
			set.Samples = append(set.Samples, results.Sample{Cell: backend + "/" + cell, Kernel: "stock", Rep: rep, Axes: axes,
				Metrics: map[metric.Key]float64{"tx_pps": float64(100 + rep)}})
		}
	}
	add("tap", "1000", "", "pktgen-t1/fq_codel")
	add("macvtap", "500", "", "pktgen-t1/fq_codel")
	add("tap+vhost", "1000", "0", "pktgen-t1/fq_codel/txq1000/vhost-pin0")
	add("tap+vhost", "500", "0", "pktgen-t1/fq_codel/txq500/vhost-pin0")
	r, err := Build(set, Options{By: "backend", Kinds: []string{KindCompare}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Summaries {
		if s.Stats.N != 3 {
			t.Errorf("%s %s: %d samples, want 3 (one cell's)", s.Column, s.Cell, s.Stats.N)
		}
	}
}

// Under --by backend a perf stat table pairs TAP's kpktgend counters with
// TAP+vhost's: TAP's cell has one perf target (perf.task-clock, the
// target in a label), TAP+vhost's two (perf.task-clock@kpktgend and
// @vhost), and the two names of one counter were two rows with "-" in
// each other's column. Real 3-run lab capture: each kpktgend value is the
// median of its 3 raw samples in either form, and the input set keeps
// its keys.
func TestByBackendPairsPerfStat(t *testing.T) {
	set, r := built(t, Options{By: "backend", Kinds: []string{KindPerfStat}}, "lab-pktgen-3run-tcg")
	tables := 0
	for _, tb := range r.Tables {
		tables++
		rows := 0
		for _, row := range tb.Rows {
			if row.Labels[0] != "kpktgend" {
				continue
			}
			rows++
			if row.Cells[0].Text == "-" || row.Cells[1].Text == "-" || row.Cells[2].Text == "-" {
				t.Errorf("%s: kpktgend %s is not paired: %+v", tb.Title, row.Labels[1], row.Cells)
			}
		}
		if rows == 0 {
			t.Errorf("%s: no kpktgend rows", tb.Title)
		}
	}
	if tables != 4 {
		t.Errorf("%d perf stat tables, want 4 (2 kernels x 1 and 4 threads)", tables)
	}
	single := 0
	for _, s := range set.Samples {
		if _, ok := s.Metrics["perf.task-clock"]; ok {
			single++
		}
	}
	if single == 0 {
		t.Error("the input's TAP samples lost their perf.task-clock: qualifyPerf changed the set it was given")
	}
}
