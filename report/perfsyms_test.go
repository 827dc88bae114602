package report

import (
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// A module perf has no symbols for shows as many addresses
// ("[pktgen] 0x3305", ...): side by side they add up in one row per
// module and run, which ranks by its sum, and a note says what it is.
func TestPerfSymsGroupUnresolvedByModule(t *testing.T) {
	set := &results.Set{Env: map[string]*results.Env{}}
	for rep := range 3 {
		for _, k := range []struct {
			kernel string
			syms   []results.Symbol
		}{
			{"stock", []results.Symbol{
				{Target: "kpktgend", Symbol: "tun_net_xmit", DSO: "[kernel.kallsyms]", Overhead: 12},
				{Target: "kpktgend", Symbol: "0x0000000000003305", DSO: "[pktgen]", Overhead: 9},
				{Target: "kpktgend", Symbol: "0x0000000000003310", DSO: "[pktgen]", Overhead: 8},
				{Target: "kpktgend", Symbol: "0x00000000000032f0", DSO: "[pktgen]", Overhead: 3},
				{Target: "kpktgend", Symbol: "0x00007f1500b15350", DSO: "[JIT] tid 12619", Overhead: 1},
			}},
			{"patched", []results.Symbol{
				{Target: "kpktgend", Symbol: "tun_net_xmit", DSO: "[kernel.kallsyms]", Overhead: 14},
				{Target: "kpktgend", Symbol: "0x0000000000003305", DSO: "[pktgen]", Overhead: 11},
				{Target: "kpktgend", Symbol: "0x0000000000003318", DSO: "[pktgen]", Overhead: 6},
				{Target: "kpktgend", Symbol: "0x00007f1500b15351", DSO: "[JIT] tid 777", Overhead: 2},
			}},
		} {
			set.Samples = append(set.Samples, results.Sample{Cell: "tap/pktgen-t1", Kernel: k.kernel, Rep: rep,
				Axes: map[string]string{"backend": "tap", "generator": "pktgen-t1"}, Metrics: map[metric.Key]float64{"tx_pps": 1000},
				Symbols: k.syms})
		}
	}
	r, err := Build(set, Options{Kinds: []string{KindPerfSyms}, Base: "stock"})
	if err != nil {
		t.Fatal(err)
	}
	var tab *Table
	for _, x := range r.Tables {
		if x.Kind == KindProfile && strings.HasPrefix(x.Title, "perf-profile.self ") {
			tab = x
		}
	}
	if tab == nil {
		t.Fatalf("no perf report table in %d tables", len(r.Tables))
	}
	var got []string
	for _, row := range tab.Rows {
		var cells []string
		for _, c := range row.Cells {
			cells = append(cells, c.Text)
		}
		got = append(got, row.Labels[0]+" "+strings.Join(cells, " "))
	}
	// Two columns: the profile delta, the largest change first.
	want := []string{
		"[pktgen] unresolved 20.00 ±0% 17.00 ±0% -3.00",
		"tun_net_xmit 12.00 ±0% 14.00 ±0% +2.00",
		"[JIT] unresolved 1.00 ±0% 2.00 ±0% +1.00",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(strings.Join(tab.Notes, "\n"), "[module] unresolved = the addresses perf could not name in that module") {
		t.Errorf("notes %q lack the unresolved note", tab.Notes)
	}
	for _, s := range []string{"0x3305", "0x0000000000003305", "ffffffffc0a03305"} {
		if !results.UnresolvedAddr(s) {
			t.Errorf("UnresolvedAddr(%q) = false", s)
		}
	}
	for _, s := range []string{"tun_net_xmit", "0x", "deadbeef", "0xzz"} {
		if results.UnresolvedAddr(s) {
			t.Errorf("UnresolvedAddr(%q) = true", s)
		}
	}
}

// perf stat's multiplexing share stays visible: a counter that ran less
// than all the time reads "value (66.69%)" (the least over the runs) in
// its column, with a note; one that ran all the time shows its value alone.
func TestPerfStatShowsMultiplexing(t *testing.T) {
	set := &results.Set{Env: map[string]*results.Env{}}
	for rep := range 3 {
		for _, kernel := range []string{"stock", "patched"} {
			s := results.Sample{Cell: "tap/pktgen-t1", Kernel: kernel, Rep: rep,
				Axes:    map[string]string{"backend": "tap", "generator": "pktgen-t1"},
				Metrics: map[metric.Key]float64{"tx_pps": 1000, "perf.cycles@kpktgend": 3e9, "perf.context-switches@kpktgend": 400}}
			if kernel == "patched" {
				s.PerfRunning = map[metric.Key]float64{"perf.cycles@kpktgend": 0.9 - float64(rep)/10}
			}
			set.Samples = append(set.Samples, s)
		}
	}
	r, err := Build(set, Options{Kinds: []string{KindPerfStat}, Base: "stock"})
	if err != nil {
		t.Fatal(err)
	}
	var tab *Table
	for _, x := range r.Tables {
		if x.Kind == KindPerfStat {
			tab = x
		}
	}
	if tab == nil {
		t.Fatal("no perf stat table")
	}
	got := map[string][]string{}
	for _, row := range tab.Rows {
		for _, c := range row.Cells[:2] {
			got[row.Labels[1]] = append(got[row.Labels[1]], c.Text)
		}
	}
	if c := got["cycles"]; len(c) != 2 || strings.Contains(c[0], "%") || !strings.HasSuffix(c[1], " (70.00%)") {
		t.Errorf("cycles cells %q, want stock without and patched with (70.00%%)", c)
	}
	if c := got["context-switches"]; len(c) != 2 || strings.Contains(c[0]+c[1], "%") {
		t.Errorf("context-switches cells %q, want no share (counted all the time)", c)
	}
	if !strings.Contains(strings.Join(tab.Notes, "\n"), "(NN%) = the share of the time the counter ran") {
		t.Errorf("notes %q lack the multiplexing note", tab.Notes)
	}
}

// thread-iperf3's 4-stream column runs 4 iperf3 client processes: the
// table's header says so (and says nothing for one client).
func TestIperf3ContextSaysClients(t *testing.T) {
	set := &results.Set{Env: map[string]*results.Env{}}
	for _, clients := range []string{"one", "per-stream"} {
		for rep := range 2 {
			set.Samples = append(set.Samples, results.Sample{Cell: "tap/iperf3-p4/" + clients, Kernel: "k", Rep: rep,
				Axes:    map[string]string{"backend": "tap", "generator": "iperf3", "generator.iperf3.parallel": "4", "generator.iperf3.clients": clients},
				Metrics: map[metric.Key]float64{"throughput_bps": 1e9}})
		}
	}
	r, err := Build(set, Options{Kinds: []string{KindThread}})
	if err != nil {
		t.Fatal(err)
	}
	var contexts []string
	for _, tab := range r.Tables {
		contexts = append(contexts, tab.Context)
	}
	joined := strings.Join(contexts, "\n")
	if strings.Count(joined, "one iperf3 client process per stream") != 1 || strings.Contains(joined, ", ,") {
		t.Errorf("contexts:\n%s\nwant one naming the client processes", joined)
	}
}
