package workload

import (
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
)

type fake struct {
	name string
	tab  *Table
	ops  map[string]GuestOp
	ms   []metric.Metric
}

func (f fake) Name() string                 { return f.name }
func (f fake) Doc() string                  { return "a fake" }
func (f fake) New() Config                  { return nil }
func (f fake) Metrics() []metric.Metric     { return f.ms }
func (f fake) GuestOps() map[string]GuestOp { return f.ops }
func (f fake) Table() Table {
	if f.tab == nil {
		return Table{Headline: metric.Key(f.name + "_pps")}
	}
	return *f.tab
}

func register(t *testing.T, ws ...fake) {
	t.Helper()
	for _, w := range ws {
		Register(w)
		t.Cleanup(func() { Unregister(w.name) })
	}
}

func TestRegistry(t *testing.T) {
	register(t, fake{name: "pk", tab: &PacketTable, ms: []metric.Metric{TxPPS, {Key: "pk_errors"}}},
		fake{name: "pk-script", tab: &PacketTable, ms: []metric.Metric{TxPPS}},
		fake{name: "io", ops: map[string]GuestOp{"io-serve": nil}, ms: []metric.Metric{{Key: "io_bps", Diagnostic: false}}})
	if !slices.Equal(Names(), []string{"pk", "pk-script", "io"}) {
		t.Errorf("names %v", Names())
	}
	if w, ok := Lookup("io"); !ok || w.Name() != "io" {
		t.Error("Lookup")
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup of an unknown name")
	}
	// A benchmark name part names the longest registered prefix.
	for in, want := range map[string]string{"pk-t4": "pk", "pk-script": "pk-script", "io": "io", "zz": ""} {
		if got := NameOf(in); got != want {
			t.Errorf("NameOf(%q) = %q, want %q", in, got, want)
		}
	}
	// Shared tables and metrics appear once, with the first workload's name.
	tabs, names := Tables()
	if len(tabs) != 2 || tabs[0].Headline != "tx_pps" || !slices.Equal(names, []string{"pk", "io"}) {
		t.Errorf("tables %v %v", tabs, names)
	}
	var keys []metric.Key
	for _, m := range Metrics() {
		keys = append(keys, m.Key)
	}
	if !slices.Equal(keys, []metric.Key{"tx_pps", "pk_errors", "io_bps"}) {
		t.Errorf("metrics %v", keys)
	}
	if m, ok := LookupMetric("tx_pps"); !ok || m.Unit != "pps" || m.Better != metric.HigherIsBetter {
		t.Errorf("tx_pps %+v", m)
	}
	if _, ok := GuestOps()["io-serve"]; !ok {
		t.Error("guest op missing")
	}
	// A name taken twice is a programming error.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("duplicate Register did not panic")
			}
		}()
		Register(fake{name: "io"})
	}()
	register(t, fake{name: "io2", ops: map[string]GuestOp{"io-serve": nil}})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a guest op of two workloads did not panic")
			}
		}()
		GuestOps()
	}()
}

func TestUnsupported(t *testing.T) {
	err := Unsupported("zero-copy refused by %s", "tap")
	if why, ok := IsUnsupported(err); !ok || why != "zero-copy refused by tap" || err.Error() != "not supported: zero-copy refused by tap" {
		t.Errorf("%v %q %v", err, why, ok)
	}
	if _, ok := IsUnsupported(nil); ok {
		t.Error("nil is unsupported")
	}
}

// PacketTable's rows follow the threads and whether qdisc drops were seen.
func TestPacketTable(t *testing.T) {
	Register(cpuWorkload{})
	defer Unregister("cpuwl")
	labels2 := func(threads int, seen ...metric.Key) (out []string) {
		for _, r := range PacketTable.Rows(threads, Seen{Positive: func(k metric.Key) bool { return slices.Contains(seen, k) }}) {
			out = append(out, r.Label)
		}
		return out
	}
	labels := func(threads int, qdisc bool) (out []string) {
		for _, r := range PacketTable.Rows(threads, Seen{Positive: func(k metric.Key) bool { return qdisc && k == "qdisc_drop_pps" }}) {
			out = append(out, r.Label)
		}
		return out
	}
	if got := labels(1, false); !slices.Equal(got, []string{"Transmitted", "Lost"}) {
		t.Errorf("1 thread: %v", got)
	}
	if got := labels(4, true); !slices.Equal(got, []string{"Tx total", "Tx per thread", "Lost total", "Lost per thread", "Qdisc drops total"}) {
		t.Errorf("4 threads with qdisc drops: %v", got)
	}
	// CPU per packet of the generator's threads and of the vhost worker,
	// beside Transmitted and Lost, where a run had them.
	got := labels2(1, "cpu_per_pkt.vhost", "cpu_per_pkt.kpktgend")
	if !slices.Equal(got, []string{"Transmitted", "Lost", "CPU/pkt kpktgend", "CPU/pkt vhost"}) {
		t.Errorf("CPU rows: %v", got)
	}
	if n := strings.Join(PacketTable.Notes(1, Seen{Positive: func(k metric.Key) bool { return k == "cpu_per_pkt.kpktgend" }}), "\n"); !strings.Contains(n, "CPU/pkt = the CPU time of the kpktgend threads (perf stat task-clock") {
		t.Errorf("CPU note: %q", n)
	}
	// The footnotes say which interval Transmitted and Lost share, and
	// never call Lost total a sum over threads.
	notes := func(threads int, seen ...metric.Key) string {
		return strings.Join(PacketTable.Notes(threads, Seen{Positive: func(k metric.Key) bool { return slices.Contains(seen, k) }}), "\n")
	}
	if n := notes(1, "tx_run_s"); !strings.Contains(n, "both per second of pktgen's own run time") || strings.Contains(n, "window") {
		t.Errorf("1 thread, pktgen's clock: %q", n)
	}
	if n := notes(4); !strings.Contains(n, "both per second of the measurement window") || strings.Contains(n, "sum") {
		t.Errorf("4 threads, window: %q", n)
	}
	if n := notes(4, "tx_run_s", "qdisc_drop_pps"); !strings.Contains(n, "Lost total = packets dropped") || !strings.Contains(n, "(its longest thread's)") ||
		!strings.Contains(n, "per thread = the mean over threads") || !strings.Contains(n, "Qdisc drops = ") {
		t.Errorf("4 threads, pktgen's clock, qdisc drops: %q", n)
	}
	// With Shown, only the rows the table shows are defined: a table of
	// Tx total and Tx per thread alone says nothing of Lost, a per-patch
	// table of Lost total alone nothing of Tx or per thread.
	shown := func(threads int, keys ...metric.Key) string {
		seen := Seen{Positive: func(k metric.Key) bool { return k == "tx_run_s" || k == "qdisc_drop_pps" },
			Shown: func(k metric.Key) bool { return slices.Contains(keys, k) }}
		return strings.Join(PacketTable.Notes(threads, seen), "\n")
	}
	if n := shown(4, "tx_pps", "tx_pps_thread"); n != "Tx total = all threads' packets, per second of pktgen's own run time (its longest thread's); Tx per thread = the mean over threads of each thread's packets per second of its own run time" {
		t.Errorf("Tx rows alone: %q", n)
	}
	if n := shown(4, "lost_pps"); n != "Lost total = packets dropped (the tap's tx_dropped, read just before pktgen's start and just after its end), per second of pktgen's own run time (its longest thread's)" {
		t.Errorf("Lost total alone: %q", n)
	}
	if n := shown(4, "lost_pps_thread"); !strings.HasPrefix(n, "Lost per thread = the mean over threads of each thread's errors (") || strings.Contains(n, "Tx") {
		t.Errorf("Lost per thread alone: %q", n)
	}
	if n := shown(1, "tx_pps"); n != "Transmitted = packets sent, per second of pktgen's own run time" {
		t.Errorf("1 thread, Transmitted alone: %q", n)
	}
	if n := shown(4, "lost_pps.FULL_RING"); n != "" {
		t.Errorf("no packet row: %q", n)
	}
}

// cpuWorkload is a registered workload whose threads are the perf target
// kpktgend (this package registers no real one).
type cpuWorkload struct{}

func (cpuWorkload) Name() string   { return "cpuwl" }
func (cpuWorkload) Doc() string    { return "test" }
func (cpuWorkload) New() Config    { return nil }
func (cpuWorkload) Target() string { return "kpktgend" }

type modFake struct {
	fake
	feats []Feature
	mods  []string
}

func (m modFake) Features() []Feature  { return m.feats }
func (m modFake) LabModules() []string { return m.mods }

// TestLabModules: a lab VM loads the modules of every workload's features
// and its LabModules, once each, in registration order.
func TestLabModules(t *testing.T) {
	for _, w := range []modFake{
		{fake: fake{name: "gen"}, feats: []Feature{{Name: "gen", Module: "genmod"}, {Name: "builtin"}}},
		{fake: fake{name: "sock"}, mods: []string{"sockhost", "genmod"}},
	} {
		Register(w)
		t.Cleanup(func() { Unregister(w.name) })
	}
	got := LabModules()
	i := slices.Index(got, "genmod")
	if i < 0 || len(got) <= i+1 || got[i+1] != "sockhost" || slices.Contains(got, "") || strings.Count(strings.Join(got, ","), "genmod") != 1 {
		t.Errorf("LabModules() = %v, want genmod then sockhost, once each", got)
	}
}
