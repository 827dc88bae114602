package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
)

// Every row of a real run's workload tables says in the notes what it
// counts: the quickstart's iperf3 table once showed Throughput and
// Retransmits with no word on whose count, over which interval, or that
// Retransmits is a count per run while the row above it is a rate.
func TestRealTablesExplainTheirRows(t *testing.T) {
	for dir, tabs := range realTables(t, KindThread) {
		for _, tab := range tabs {
			notes := strings.Join(tab.Notes, "\n")
			for _, row := range tab.Rows {
				label := row.Labels[len(row.Labels)-1]
				// "Tx total" is explained as "Tx total =", "CPU/pkt
				// kpktgend" as "CPU/pkt =", "Tx per thread" as "per thread =".
				first, rest, _ := strings.Cut(label, " ")
				if !strings.Contains(notes, label+" =") && !strings.Contains(notes, first+" =") && (rest == "" || !strings.Contains(notes, rest+" =")) {
					t.Errorf("%s: %s: row %q is not explained in the notes:\n%s", dir, tab.Context, label, notes)
				}
			}
		}
	}
}

// A perf stat table says over which interval its counts ran and that a
// target's threads are added up: a 4-thread kpktgend's task-clock of
// 10.3 s in a 3 s run reads as nonsense without it (the lab run's
// multiqueue cell), and its notes once said only "1 run".
func TestRealPerfStatTablesSayTheirInterval(t *testing.T) {
	n := 0
	for dir, tabs := range realTables(t, KindPerfStat) {
		for _, tab := range tabs {
			n++
			if notes := strings.Join(tab.Notes, "\n"); !strings.Contains(notes, "each count = perf stat over the measurement window") {
				t.Errorf("%s: %s: notes without the interval:\n%s", dir, tab.Context, notes)
			}
		}
	}
	if n == 0 {
		t.Fatal("no perf stat tables in the real runs")
	}
}

// A lab VM's CPU is QEMU's model "QEMU TCG CPU version 2.5+" (its CPU
// model's version; the lab ran QEMU 7.2): the table headers and the
// environment once shortened it to "QEMU TCG version 2.5+", which reads
// as a QEMU version, and gave QEMU's own version bare ("7.2.22 (Debian
// ...)").
func TestQEMUCPUModelNotAVersion(t *testing.T) {
	set, err := results.Load(run("lab-pktgen-tcg")...)
	if err != nil {
		t.Fatal(err)
	}
	got := renderSet(t, set, Options{})
	env := strings.Join(envLines(got.r), "\n") // unwrapped
	if strings.Contains(got.text, "QEMU TCG version") || !strings.Contains(got.text, "QEMU TCG CPU") || !strings.Contains(env, ", QEMU 7.2.22 (Debian") {
		t.Errorf("CPU model shortened to a QEMU version:\n%.1500s", got.text)
	}
	for in, want := range map[string]string{
		"QEMU TCG CPU version 2.5+":                 "QEMU TCG CPU",
		"QEMU Virtual CPU version 2.5+":             "QEMU Virtual CPU",
		"Intel(R) Core(TM) i5-6300HQ CPU @ 2.30GHz": "Core i5-6300HQ",
	} {
		if got := shortCPU(in); got != want {
			t.Errorf("shortCPU(%q) = %q, want %q", in, got, want)
		}
	}
}

// realTables returns the tables of kind in each real run's report (by
// kernel), by run directory.
func realTables(t *testing.T, kind string) map[string][]*Table {
	t.Helper()
	out := map[string][]*Table{}
	for _, dir := range realRuns(t) {
		set, err := results.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(set, Options{By: "kernel"})
		if err != nil {
			t.Fatal(err)
		}
		for _, tab := range r.Tables {
			if tab.Kind == kind {
				out[dir] = append(out[dir], tab)
			}
		}
	}
	return out
}

// A change column's marks that are no percentage (units.Pct's "from 0"
// and ">999x") are explained in the notes of every table that shows one,
// and the note names the mark as Pct writes it: the real lab run's perf
// stat table (cpu-migrations 0 in stock's run, 1 in patched's) shows
// "from 0", the generated runs' Lost (patched 1 pps as the base, stock
// 1.16 Mpps) ">999x".
func TestChangeMarksExplained(t *testing.T) {
	for _, tc := range []struct {
		mark string
		dirs []string
	}{
		{units.PctFromZero, []string{"lab-pktgen-tcg"}},
		{units.PctOver999, []string{"patched", "stock"}},
	} {
		r, err := Build(loadSet(t, tc.dirs...), Options{})
		if err != nil {
			t.Fatal(err)
		}
		shown := 0
		for _, tab := range r.Tables {
			if !slices.ContainsFunc(tab.Rows, func(row Row) bool {
				return slices.ContainsFunc(row.Cells, func(c Cell) bool { return c.Delta != nil && strings.Contains(c.Text, tc.mark) })
			}) {
				continue
			}
			shown++
			if !slices.ContainsFunc(tab.Notes, func(n string) bool { return strings.Contains(n, tc.mark+" = ") }) {
				t.Errorf("%v: %s: %q in a change cell, not in the notes:\n%s", tc.dirs, tab.Context, tc.mark, strings.Join(tab.Notes, "\n"))
			}
		}
		if shown == 0 {
			t.Errorf("%v: no table shows %q", tc.dirs, tc.mark)
		}
	}
}

// A size sweep table defines its metric and its p column: its notes
// said "tx_pps in Kpps, median of 5 runs" and left what tx_pps counts
// (per second of which interval, all threads or one) and what p is to
// docs a quoted table does not carry.
func TestSweepTableDefinesMetricAndP(t *testing.T) {
	set, err := results.Load(run("sweep")...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(set, Options{By: "kernel"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tab := range r.Tables {
		if tab.Kind != KindSweep {
			continue
		}
		n++
		notes := strings.Join(tab.Notes, "\n")
		desc := results.Describe(metric.Key(tab.Metric)).Description
		if desc == "" {
			t.Fatalf("%s has no description in the catalogue", tab.Metric)
		}
		def := tab.Metric + " = " + desc
		if !strings.Contains(notes, def) || !slices.Contains(tab.Header, "p") || !strings.Contains(notes, "p = ") {
			t.Errorf("%s: notes define neither %q nor the p column:\n%s", tab.Title, def, notes)
		}
	}
	if n == 0 {
		t.Fatal("no size sweep tables in the sweep run")
	}
}

// A packet table's legend defines the rows the table shows, no more: the
// 4-thread legend once defined "per thread = ... errors (Lost)" under
// tables without a Lost per thread row (the generated runs, whose
// threads carry no errors), and the per-patch tables of Tx total alone
// and of Lost total alone each carried the whole legend, per thread
// included. Checked on the real and generated runs, and on the real lab
// run without its Lost per thread (the threads' errors) and without its
// Lost total (the tap's tx_dropped).
func TestPacketLegendDefinesShownRows(t *testing.T) {
	lab := func(drop func(s *results.Sample)) *results.Set {
		set := loadSet(t, "lab-pktgen-tcg")
		for i := range set.Samples {
			drop(&set.Samples[i])
		}
		return set
	}
	sets := map[string]*results.Set{
		"lab-pktgen-tcg without lost_pps_thread": lab(func(s *results.Sample) {
			for j := range s.Threads {
				s.Threads[j].LostPPS = nil
			}
		}),
		"lab-pktgen-tcg without lost_pps": lab(func(s *results.Sample) { delete(s.Metrics, metric.LostPPS) }),
		"stock, patched":                  loadSet(t, "stock", "patched"),
		"qdisc":                           loadSet(t, "qdisc-stock", "qdisc-patched"),
	}
	for _, dir := range realRuns(t) {
		set, err := results.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		sets[dir] = set
	}
	defines := map[string][]string{ // a row label and the phrases that define it
		"Transmitted":     {"Transmitted ="},
		"Lost":            {"Lost ="},
		"Tx total":        {"Tx total ="},
		"Lost total":      {"Lost total ="},
		"Tx per thread":   {"Tx per thread =", "packets (Tx)"},
		"Lost per thread": {"Lost per thread =", "errors (Lost"},
	}
	checked := 0
	for name, set := range sets {
		r, err := Build(set, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tab := range r.Tables {
			if tab.Kind != KindThread && tab.Kind != KindPerPatch {
				continue
			}
			shown := map[string]bool{}
			for _, row := range tab.Rows {
				shown[row.Labels[len(row.Labels)-1]] = true
			}
			if tab.Kind == KindPerPatch {
				shown = map[string]bool{strings.Split(tab.Context, ",")[0]: true} // "Tx total, pktgen to VM ..."
			}
			notes := strings.Join(tab.Notes, "\n")
			for label, phrases := range defines {
				for _, p := range phrases {
					if !shown[label] && strings.Contains(notes, p) {
						t.Errorf("%s: %s: the notes define %q (%q), a row the table lacks:\n%s", name, tab.Context, label, p, notes)
					}
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no packet tables")
	}
}

// Every column of the harness and diagnostics table says in its legend
// what it counts and over which interval: "harness = harness_cpu_frac
// (its own CPU, % of a core)", "gen busy = ... (< 90%: may not
// saturate)" and "tap tx = ... (cross-check of tx_pps)" said neither.
func TestHarnessLegendSaysInterval(t *testing.T) {
	n := 0
	for _, k := range results.Diagnostics() {
		m, ok := results.Lookup(k)
		if !ok || m.Header == "" {
			continue
		}
		n++
		if !strings.ContainsAny(m.HeaderNote, "(") || !slices.ContainsFunc([]string{"window", "test", "run", "interval"}, func(w string) bool { return strings.Contains(m.HeaderNote, w) }) {
			t.Errorf("%s (%s): legend %q says no interval", k, m.Header, m.HeaderNote)
		}
	}
	if n < 5 {
		t.Fatalf("%d harness columns with a header, want the harness's and the workloads'", n)
	}
}

// A benchstat-style table (one metric, a row per cell) says what its
// metric counts and what its change and "p, n" columns are: its title
// gave only the key and unit ("lost_pps_thread (pps, lower is better)"),
// which read as the tap's drops split per thread.
func TestCompareTablesDefineMetric(t *testing.T) {
	n := 0
	for dir, tabs := range realTables(t, KindCompare) {
		for _, tab := range tabs {
			n++
			notes := strings.Join(tab.Notes, "\n")
			if !strings.Contains(notes, tab.Metric+" = ") {
				t.Errorf("%s: %s: notes do not define %s:\n%s", dir, tab.Title, tab.Metric, notes)
			}
			if len(tab.Header) > 2 && !strings.Contains(notes, "p, n = the p-value") {
				t.Errorf("%s: %s: notes do not define p, n:\n%s", dir, tab.Title, notes)
			}
		}
	}
	if n == 0 {
		t.Fatal("no benchstat-style tables in the real runs")
	}
}
