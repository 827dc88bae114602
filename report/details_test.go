package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

func render(t *testing.T, opt Options, format string, dirs ...string) (string, *Report) {
	t.Helper()
	set, r := built(t, opt, dirs...)
	var buf bytes.Buffer
	if err := Render(&buf, set, r, format, ASCII); err != nil {
		t.Fatal(err)
	}
	return buf.String(), r
}

// rendered is one report and its text (ASCII), markdown and JSON.
type rendered struct {
	r              *Report
	text, md, json string
}

// renderSet builds the report of set with opt and renders it as text,
// markdown and JSON; any error fails t.
func renderSet(t *testing.T, set *results.Set, opt Options) rendered {
	t.Helper()
	r, err := Build(set, opt)
	if err != nil {
		t.Fatal(err)
	}
	var text, md, js bytes.Buffer
	for _, err := range []error{WriteText(&text, r, ASCII), WriteMarkdown(&md, r), WriteJSON(&js, r)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return rendered{r: r, text: text.String(), md: md.String(), json: js.String()}
}

// The default report of a single-kernel run is what one mails: thread and
// perf tables, environment, warnings. No "± inf", no per-metric blocks
// (nothing to compare), no warning twice, the TCG warning once for the
// whole report, and the emulation legend in every table: a table is
// quoted alone, and each says whether its numbers were measured under
// emulation.
func TestSingleKernelDefaultIsQuiet(t *testing.T) {
	for _, format := range []string{"text", "markdown"} {
		out, r := render(t, Options{}, format, "quickstart-tcg")
		if strings.Contains(out, "inf") {
			t.Errorf("%s: single-kernel default report says inf:\n%s", format, out)
		}
		for _, absent := range []string{"tx_pps (pps", "harness_cpu_frac", "harness and diagnostics", "cell_overhead_s", "qdisc_drops", "(lo..hi)"} {
			if strings.Contains(out, absent) {
				t.Errorf("%s: default report has %q (a --details table):\n%s", format, absent, out)
			}
		}
		seen := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "warning: ") && !strings.HasPrefix(l, "> warning") {
				continue
			}
			if seen[l] {
				t.Errorf("%s: warning line repeated: %q", format, l)
			}
			seen[l] = true
		}
		if n := strings.Count(out, "TCG in use"); n != 1 {
			t.Errorf("%s: the TCG warning appears %d times, want once", format, n)
		}
		shown := 0
		for _, tb := range r.Tables {
			if r.shows(tb) {
				shown++
			}
		}
		if n := strings.Count(out, "every column ran under QEMU TCG"); n != shown || shown < 4 {
			t.Errorf("%s: the TCG legend appears %d times in %d tables, want once in each (of at least 4)", format, n, shown)
		}
		for _, want := range []string{"EMULATED", "Transmitted", "Throughput", "task-clock", "environment", "trafgen was 20/34% busy"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: default report lacks %q:\n%s", format, want, out)
			}
		}
	}
}

// --details adds the per-metric tables with the range for n < 6 (never
// "± inf") and one harness and diagnostics table instead of one block per
// harness metric.
func TestDetails(t *testing.T) {
	out, r := render(t, Options{Details: true}, "text", "quickstart-tcg")
	if strings.Contains(out, "inf") {
		t.Errorf("--details says inf:\n%s", out)
	}
	for _, want := range []string{"tx_pps (pps, higher is better)", "11.88k (n=2, 8.95..14.8k)", "(lo..hi) = min..max of the runs",
		"harness and diagnostics, running", "| tap/trafgen/pfifo_fast   |  0.113% |  0.257 s |    26.9% |"} {
		if !strings.Contains(out, want) {
			t.Errorf("--details lacks %q:\n%s", want, out)
		}
	}
	for _, key := range results.Diagnostics() {
		if strings.Contains(out, "\n"+string(key)+" (") {
			t.Errorf("--details has a per-metric block for the diagnostic %s", key)
		}
	}
	harness := 0
	for _, tb := range r.Tables {
		if tb.Kind == KindHarness {
			harness++
			if !tb.Detail || len(tb.Rows) != 2 {
				t.Errorf("harness table: detail %v, %d rows, want a detail table with one row per cell (2)", tb.Detail, len(tb.Rows))
			}
		}
	}
	if harness != 1 {
		t.Errorf("%d harness tables, want 1", harness)
	}
}

// Machine-readable formats keep every metric, diagnostics included, and
// every table.
func TestMachineFormatsComplete(t *testing.T) {
	for format, wants := range map[string][]string{
		"csv":      {",harness_cpu_frac,", ",cell_overhead_s,", ",qdisc_drops,", ",tx_pps,"},
		"json":     {`"kind": "harness"`, `"metric": "tx_pps"`, `"detail": true`, `"metric": "generator_busy_frac"`},
		"benchfmt": {" harness_cpu_frac", " tap_tx_pps", " tx_pps"},
		"html":     {"harness and diagnostics", "tx_pps (pps, higher is better)", "<svg"},
	} {
		out, _ := render(t, Options{}, format, "quickstart-tcg")
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q", format, w)
			}
		}
	}
}

// Per-metric tables are shown by default when there is something to
// compare: two kernels, or --by an axis.
func TestCompareTablesWhenComparing(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  Options
		dirs []string
	}{
		{"two kernels", Options{}, []string{"stock", "patched"}},
		{"--by backend", Options{By: "backend"}, []string{"stock"}},
	} {
		out, _ := render(t, c.opt, "text", c.dirs...)
		if !strings.Contains(out, "tx_pps (pps, higher is better)") {
			t.Errorf("%s: no per-metric table by default:\n%s", c.name, out)
		}
		if strings.Contains(out, "harness and diagnostics") || strings.Contains(out, "tap_tx_pps (") {
			t.Errorf("%s: diagnostics shown without --details", c.name)
		}
	}
}

func TestSpreadText(t *testing.T) {
	for _, c := range []struct {
		vals  []float64
		withN bool
		want  string
	}{
		{[]float64{9700, 14060}, true, "11.88k (n=2, 9.70..14.1k)"},
		{[]float64{9700, 14060}, false, "11.88k (9.70..14.1k)"},
		{[]float64{5}, true, "5 (n=1)"},
		{[]float64{5}, false, "5"},
		{[]float64{0, 0, 0}, true, "0 (n=3, 0..0)"},
		{[]float64{900, 1100}, true, "1.000k (n=2, 900..1.10k)"},
		{[]float64{451000, 451200, 451400}, false, "451.2k (451.0..451.4k)"},
		{[]float64{100, 101, 102, 103, 104, 105, 106, 107}, false, "103.5 ± 3%"},
		// Seconds of a jitter: both ends in the median's small prefix,
		// also where the ends alone would take none (it read "999.6µ
		// (999.5µ..0.001)"); a median without one leaves each end its
		// own, rather than "10000µ (1.00..20000µ)".
		{[]float64{74.6e-6, 79.72e-6, 183.7e-6}, false, "79.72µ (74.6..184µ)"},
		{[]float64{0.00099951, 0.0009996, 0.00099996}, false, "999.6µ (999.5..1000µ)"},
		{[]float64{1e-6, 0.01, 0.02}, false, "0.01 (1.00µ..0.02)"},
	} {
		st := Summarize(c.vals, false)
		if got := spreadText(&st, c.withN); got != c.want {
			t.Errorf("spreadText(%v, %v) = %q, want %q", c.vals, c.withN, got, c.want)
		}
	}
}

// The same warning in every run is one line; warnings that differ per
// cell stay per cell.
func TestWarningsDeduplicated(t *testing.T) {
	_, r := render(t, Options{}, "text", "quickstart-tcg")
	want := []string{
		"all 4 runs: TCG in use (no usable KVM): numbers measure the emulator, not the kernel datapath",
		"tap/trafgen/pfifo_fast on running (2 of 2 runs): generator trafgen was 20/34% busy (< 90%): it may be waiting rather than saturating the datapath",
	}
	if strings.Join(r.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(r.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

// Harness diagnostics are not gated by default; naming one in Metrics
// gates it.
func TestDefaultGatesSkipDiagnostics(t *testing.T) {
	res, err := CompareRuns(loadSet(t, "quickstart-tcg"), loadSet(t, "quickstart-tcg"), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gated := map[string]bool{}
	for _, d := range res.Decisions {
		gated[d.Gate.Metric] = true
	}
	for _, k := range results.Diagnostics() {
		if gated[string(k)] {
			t.Errorf("diagnostic %s gated by default", k)
		}
	}
	for _, k := range []string{"tx_pps", "lost_pps", "throughput_bps", "retransmits"} {
		if !gated[k] {
			t.Errorf("%s not gated by default (gated: %v)", k, gated)
		}
	}
	res, err = CompareRuns(loadSet(t, "quickstart-tcg"), loadSet(t, "quickstart-tcg"), CompareOptions{Metrics: []string{"harness_cpu_frac"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Decisions) != 2 || res.Decisions[0].Gate.String() != "harness_cpu_frac>+0%" {
		t.Errorf("explicit --metric harness_cpu_frac: decisions %v, want it gated in both cells", res.Decisions)
	}
}

// perf counters are not gated by default: a patched kpktgend with
// significantly more context switches (+1.8%, the netdev thread's "no
// regression") and a higher CPU per packet passes while Transmitted and
// Lost improve; naming the counter with --metric gates it.
func TestDefaultGatesSkipPerfCounters(t *testing.T) {
	mk := func(kernel string, tx, lost, cs, cpp float64) *results.Set {
		set := &results.Set{Env: map[string]*results.Env{}}
		// 12 runs: DIFFERENT needs at least 10 per side (docs/compare.md).
		for rep := range 12 {
			d := float64(rep) / 3
			set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen-t1", Kernel: kernel, Rep: rep,
				Axes: map[string]string{"backend": "tap", "generator": "pktgen-t1"},
				Metrics: map[metric.Key]float64{"tx_pps": tx + d, "lost_pps": lost + d, "perf.context-switches@kpktgend": cs + d,
					"cpu_per_pkt.kpktgend": cpp + d/100, "harness_cpu_frac": 0.01 + d/1000}})
		}
		return set
	}
	base, patched := mk("stock", 453000, 1155000, 400, 2.1), mk("patched", 569000, 1, 407.2, 2.5)
	res, err := CompareRuns(base, patched, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gated []string
	for _, d := range res.Decisions {
		gated = append(gated, d.Gate.String())
	}
	if want := "tx_pps<+0%,lost_pps>+0%"; strings.Join(gated, ",") != want {
		t.Errorf("default gates %v, want %s", gated, want)
	}
	if err := res.Err(); err != nil {
		t.Errorf("perf counters tripped the default gates: %v", err)
	}
	for _, named := range []string{"perf.context-switches@kpktgend", "cpu_per_pkt.kpktgend"} {
		res, err = CompareRuns(base, patched, CompareOptions{Metrics: []string{named}})
		if err != nil {
			t.Fatal(err)
		}
		var ge *GateError
		if err := res.Err(); !errors.As(err, &ge) || ge.Tripped[0].Gate.Metric != named {
			t.Errorf("--metric %s: err %v, want it gated and tripped", named, err)
		}
	}
	for _, k := range []string{"tx_pps", "lost_pps", "throughput_bps", "rx_pps", "retransmits"} {
		if !DefaultGated(k) {
			t.Errorf("DefaultGated(%s) = false, want a result metric gated", k)
		}
	}
	for _, k := range []string{"perf.cycles", "perf.context-switches@vhost", "cpu_per_pkt.vhost", "harness_cpu_frac", "tx_run_s", "tap_tx_pps"} {
		if DefaultGated(k) {
			t.Errorf("DefaultGated(%s) = true, want not gated by default", k)
		}
	}
}

// A table mixing cells with a finite CI (n >= 6) and cells without one
// explains both notations, once each: the 8 runs' interval [x1, x7] is
// a 96% one (1 - 1/2^8 - 9/2^8), not the 95% asked for.
func TestSpreadLegends(t *testing.T) {
	set := &results.Set{Env: map[string]*results.Env{}}
	for rep := range 8 {
		set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen-t1", Kernel: "k", Rep: rep, Axes: map[string]string{"backend": "tap", "generator": "pktgen"},
			Metrics: map[metric.Key]float64{"tx_pps": 1000 + float64(rep)}})
		if rep < 3 {
			set.Samples = append(set.Samples, results.Sample{Cell: "tap+vhost/pktgen-t1", Kernel: "k", Rep: rep, Axes: map[string]string{"backend": "tap+vhost", "generator": "pktgen"},
				Metrics: map[metric.Key]float64{"tx_pps": 2000 + float64(rep)}})
		}
	}
	r, err := Build(set, Options{Kinds: []string{KindCompare}, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, r, Unicode); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"1.004k ± 0%", "2.001k (n=3, 2.000..2.002k)", "± = 96% confidence interval of the median", "(lo..hi) = min..max of the runs"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want %q once in:\n%s", want, out)
		}
	}
}

// Tables that differ only in an axis context does not otherwise state
// (the lab e2e's pktgen mode simple vs script) name it, so they can be
// told apart; an axis with one value in the whole report is not repeated.
func TestContextNamesVaryingAxes(t *testing.T) {
	set := &results.Set{Env: map[string]*results.Env{}}
	for _, mode := range []string{"simple", "script"} {
		for _, be := range []string{"tap", "tap+vhost"} {
			set.Samples = append(set.Samples, results.Sample{Cell: be + "/pktgen-t1/" + mode, Kernel: "k",
				Axes: map[string]string{"backend": be, "generator": "pktgen", "generator.pktgen.mode": mode,
					"generator.pktgen.threads": "1", "generator.pktgen.xmit_mode": "start_xmit"},
				Metrics: map[metric.Key]float64{"tx_pps": 1000, "lost_pps": 10}})
		}
	}
	r, err := Build(set, Options{Kinds: []string{KindThread}})
	if err != nil {
		t.Fatal(err)
	}
	var ctxs []string
	for _, tb := range r.Tables {
		ctxs = append(ctxs, tb.Context)
	}
	if len(ctxs) != 2 || ctxs[0] == ctxs[1] {
		t.Fatalf("thread tables %q: want two with different contexts", ctxs)
	}
	for _, c := range ctxs {
		if !strings.Contains(c, "mode simple") && !strings.Contains(c, "mode script") {
			t.Errorf("context %q does not name the pktgen mode", c)
		}
		if strings.Contains(c, "xmit_mode") || strings.Contains(c, "threads 1") {
			t.Errorf("context %q repeats an axis that does not vary or is said already", c)
		}
	}
}

// Multi-thread pktgen tables show Lost per thread when the threads carry
// their own loss (pktgen errors/s); samples without it show no such row.
func TestLostPerThreadRow(t *testing.T) {
	build := func(withLost bool) string {
		set := &results.Set{Env: map[string]*results.Env{}}
		for rep := range 2 {
			var th []results.ThreadSample
			for i := range 4 {
				ts := results.ThreadSample{I: i, TxPPS: 1000, Errors: 500}
				if withLost {
					l := 250.0 + float64(i)*10
					ts.LostPPS = &l
				}
				th = append(th, ts)
			}
			set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen-t4", Kernel: "k", Rep: rep,
				Axes:    map[string]string{"backend": "tap", "generator": "pktgen", "generator.pktgen.threads": "4"},
				Metrics: map[metric.Key]float64{"tx_pps": 4000, "lost_pps": 1060}, Threads: th})
		}
		r, err := Build(set, Options{Kinds: []string{KindThread}})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteText(&buf, r, ASCII); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	// mean of 250, 260, 270, 280
	if out := build(true); !strings.Contains(out, "Lost per thread") || !strings.Contains(out, "265 pps") {
		t.Errorf("want a Lost per thread row of 265 pps:\n%s", out)
	}
	if out := build(false); strings.Contains(out, "Lost per thread") {
		t.Errorf("Lost per thread without per-thread loss:\n%s", out)
	}
}

// The header names kernels built from source (env.json's build identity):
// what stock and patched are, in text and markdown.
func TestHeaderNamesBuiltKernels(t *testing.T) {
	tree := "/src/linux-source-6.1"
	set := &results.Set{Env: map[string]*results.Env{
		"stock": {Build: &results.KernelBuild{Release: "6.1.192", Tree: tree, ConfigSHA256: "0123456789abcdef0123"}},
		"patched": {Build: &results.KernelBuild{Release: "6.1.192", Tree: tree, ConfigSHA256: "0123456789abcdef0123",
			Patches: []results.PatchID{{File: "0001-tun.patch", Subject: "tun: stop the tx queue"}}}},
	}}
	for _, k := range []string{"stock", "patched"} {
		set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen-t1", Kernel: k,
			Axes:    map[string]string{"backend": "tap", "generator": "pktgen", "generator.pktgen.threads": "1"},
			Metrics: map[metric.Key]float64{"tx_pps": 1000, "lost_pps": 10}})
	}
	out := renderSet(t, set, Options{By: "kernel"})
	for _, want := range []string{
		"  stock: 6.1.192 built from /src/linux-source-6.1, config 0123456789ab\n",
		"  patched: 6.1.192 built from /src/linux-source-6.1 + 1 patch (tun:\n    stop the tx queue), config 0123456789ab\n",
	} {
		if !strings.Contains(out.text, want) {
			t.Errorf("text header lacks %q:\n%s", want, out.text)
		}
	}
	if !strings.Contains(out.md, "- patched: 6.1.192 built from") {
		t.Errorf("markdown header lacks the patched kernel:\n%s", out.md)
	}
}

// Warnings that differ only in their numbers are one line: it showed the
// first run's numbers ("trafgen was 46% busy (2 of 2 runs)" where the
// other run was 76% busy; "pktgen thread 0 sent no packets" where
// threads 1 and 3 sent none either). Each number that differs now shows
// its values, or their range past three.
func TestNumberRanges(t *testing.T) {
	for _, tc := range []struct {
		texts []string
		want  string
	}{
		{[]string{"generator trafgen was 46% busy (< 90%)"}, "generator trafgen was 46% busy (< 90%)"},
		{[]string{"generator trafgen was 76% busy (< 90%)", "generator trafgen was 46% busy (< 90%)"}, "generator trafgen was 46/76% busy (< 90%)"},
		{[]string{"pktgen thread 3 sent no packets", "pktgen thread 0 sent no packets", "pktgen thread 1 sent no packets"}, "pktgen thread 0/1/3 sent no packets"},
		{[]string{"grew at 9.5 pps", "grew at 10.5 pps", "grew at 2.0 pps", "grew at 7.5 pps"}, "grew at 2.0-10.5 pps"},
	} {
		texts := map[string]bool{}
		for _, s := range tc.texts {
			texts[s] = true
		}
		if got := numberRanges(texts); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.texts, got, tc.want)
		}
	}
}

// A run whose every sample failed said "no samples to report (only
// warmups, or empty results)", naming neither the run nor the failure:
// it names the inputs, how many failed and the first error.
func TestNoSamplesSaysWhy(t *testing.T) {
	failed := &results.Set{Sources: []string{"runs/x"}, Failed: []results.Sample{
		{Cell: "tap/iperf3-p1", Kernel: "running", Rep: 0, Error: "boot vm0: wait for agent: timeout after 60s\nconsole: ..."},
		{Cell: "tap/iperf3-p1", Kernel: "running", Rep: 1, Error: "boot vm0: wait for agent: timeout after 60s"},
	}}
	for _, tc := range []struct {
		set  *results.Set
		want string
	}{
		{failed, "runs/x: no measured samples: all 2 failed (first: tap/iperf3-p1 on running rep 1: boot vm0: wait for agent: timeout after 60s); results.jsonl holds each error"},
		{&results.Set{Sources: []string{"runs/empty"}}, "runs/empty: no samples to report (an empty results.jsonl, or only warmups): the run measured nothing"},
	} {
		_, err := Build(tc.set, Options{})
		if !errors.Is(err, fault.ErrInput) || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v, want bad input %q", err, tc.want)
		}
	}
}
