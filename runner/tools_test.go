package runner

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/internal/workload/pktgen"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/runner/undo"
	"github.com/vnetbench/vnetbench/scenarios"
)

// The argv of every tool, as the shell would see it.
func TestToolArgvGolden(t *testing.T) {
	var b strings.Builder
	line := func(argv []string) { b.WriteString(proc.Quote(argv) + "\n") }
	line(PerfStatArgs([]string{"task-clock", "context-switches", "cycles"}, []int{101, 102}, false, "/r/artifacts/c/0/perf-stat-vcpu.csv"))
	line(PerfStatArgs(nil, []int{4242}, true, "/r/perf stat qemu.csv"))
	line(PerfRecordArgs(scenarios.PerfRecord{CallGraph: true, FreqHz: 999, Top: 40}, []int{7, 8}, false, "/r/perf-vhost.data"))
	line(PerfRecordArgs(scenarios.PerfRecord{}, []int{4242}, true, "/r/perf-qemu.data"))
	line(PerfReportArgs("/r/perf-vhost.data", false))
	line(PerfReportArgs("/r/perf-vhost.data", true))
	golden.Check(t, "tools.golden", b.String())
}

func TestPerfSymbols(t *testing.T) {
	b, err := os.ReadFile("testdata/perf-report-stdio.txt")
	if err != nil {
		t.Fatal(err)
	}
	syms := perfSymbols(b, "qemu", 3)
	if len(syms) != 3 {
		t.Fatalf("got %d symbols: %+v", len(syms), syms)
	}
	for _, s := range syms {
		if s.Target != "qemu" || s.Overhead <= 0 || s.Symbol == "" {
			t.Errorf("bad symbol %+v", s)
		}
	}
	if syms[0].Overhead < syms[1].Overhead {
		t.Errorf("not in perf's order: %+v", syms)
	}
}

// Commands (for --dry-run and plan) is golden-tested on a built-in, with
// the guest under TCG and under KVM (-accel kvm -cpu host, the guest
// kernel's command line without the TCG tuning).
func TestCommandsGolden(t *testing.T) {
	s, err := scenarios.Resolve("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, accel := range []qemu.Accel{qemu.TCG, qemu.KVM} {
		var b strings.Builder
		for _, c := range s.Expand() {
			b.WriteString("# " + c.Name + "\n")
			for _, l := range Commands(&c, accel) {
				b.WriteString(l + "\n")
			}
		}
		name := "commands-quickstart.golden"
		if accel == qemu.KVM {
			name = "commands-quickstart-kvm.golden"
		}
		golden.Check(t, name, b.String())
	}
}

func TestShard(t *testing.T) {
	var cells []scenarios.Cell
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		for rep := 0; rep < 2; rep++ {
			cells = append(cells, scenarios.Cell{Name: n, Rep: rep})
		}
	}
	seen := map[string]int{}
	total := 0
	for i := 1; i <= 3; i++ {
		part := Shard(cells, i, 3)
		total += len(part)
		for _, c := range part {
			if s, ok := seen[c.Name]; ok && s != i {
				t.Errorf("cell %s split over shards %d and %d", c.Name, s, i)
			}
			seen[c.Name] = i
		}
	}
	if total != len(cells) || len(seen) != 5 {
		t.Errorf("shards cover %d samples of %d, %d cells", total, len(cells), len(seen))
	}
	if !reflect.DeepEqual(Shard(cells, 2, 3), Shard(cells, 2, 3)) {
		t.Error("not deterministic")
	}
	for _, bad := range []string{"0/2", "3/2", "x", "1/0", "1-2"} {
		_, _, err := ParseShard(bad)
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("ParseShard(%q) = %v", bad, err)
		}
	}
	if i, n, err := ParseShard("2/4"); i != 2 || n != 4 || err != nil {
		t.Errorf("ParseShard(2/4) = %d %d %v", i, n, err)
	}
}

func TestFillMetrics(t *testing.T) {
	c := &scenarios.Cell{Generator: scenarios.Generator{Kind: "trafgen"}}
	s := &results.Sample{Metrics: map[metric.Key]float64{}}
	before := Counters{Tap: hostnet.LinkStats{TxPackets: 1000, TxDropped: 10}, Guest: GuestStats{RxPackets: 500}}
	after := Counters{Tap: hostnet.LinkStats{TxPackets: 11000, TxDropped: 2010}, Guest: GuestStats{RxPackets: 10500}}
	sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 6000}}, before, after, 2*time.Second)
	want := map[metric.Key]float64{"tx_packets": 10000, "tap_tx_pps": 5000, "lost_pps": 1000, "rx_pps": 5000, "tx_pps": 6000}
	for k, v := range want {
		if s.Metrics[k] != v {
			t.Errorf("%s = %v, want %v", k, s.Metrics[k], v)
		}
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v", s.Warnings)
	}
	// iperf3: throughput, no tx_pps.
	s = &results.Sample{Metrics: map[metric.Key]float64{}}
	c.Generator.Kind = "iperf3"
	sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"throughput_bps": 2.4e9, "retransmits": 3}}, before, after, time.Second)
	if s.Metrics["throughput_bps"] != 2.4e9 || s.Metrics["retransmits"] != 3 {
		t.Errorf("iperf3 metrics %v", s.Metrics)
	}
	if _, ok := s.Metrics["tx_pps"]; ok {
		t.Error("iperf3 sample has tx_pps")
	}
	// A generator rate far from what the tap carried is flagged.
	s = &results.Sample{Metrics: map[metric.Key]float64{}}
	c.Generator.Kind = "pktgen"
	sampleMetrics(s, c, &workload.Result{Metrics: map[metric.Key]float64{"tx_pps": 50000}, Threads: []workload.Thread{{I: 0, TxPPS: 50000}}}, before, after, time.Second)
	if len(s.Warnings) != 1 || len(s.Threads) != 1 {
		t.Errorf("pktgen: warnings %v threads %v", s.Warnings, s.Threads)
	}
}

func TestHostLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	l, err := AcquireLock(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(p)
	var be *BusyError
	if !errors.As(err, &be) || !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "pid") {
		t.Errorf("second lock: %v", err)
	}
	// The line says how to wait: --lock-wait when the run failed at
	// once, and that it waited when it did.
	if _, err := AcquireLockWait(t.Context(), p, 0); err == nil || !strings.HasSuffix(err.Error(), "; wait for it to finish, or pass --lock-wait 10m to wait here") {
		t.Errorf("busy, no wait: %v", err)
	}
	if _, err := AcquireLockWait(t.Context(), p, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "still after --lock-wait 100ms;") {
		t.Errorf("busy after waiting: %v", err)
	}
	go func() { time.Sleep(300 * time.Millisecond); l.Release() }()
	l2, err := AcquireLockWait(t.Context(), p, 10*time.Second)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Release()
}

// Pinning a thread of our own and restoring it through the undo stack.
func TestPinRestores(t *testing.T) {
	tid := os.Getpid()
	orig, err := Affinity(tid)
	if err != nil {
		t.Fatal(err)
	}
	u := undo.New()
	if err := Pin(u, "self", []int{tid}, orig[:1], false); err != nil {
		t.Fatal(err)
	}
	if got, _ := Affinity(tid); !reflect.DeepEqual(got, orig[:1]) {
		t.Errorf("pinned to %v, want %v", got, orig[:1])
	}
	if err := u.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := Affinity(tid); !reflect.DeepEqual(got, orig) {
		t.Errorf("restored to %v, want %v", got, orig)
	}
	if err := Pin(u, "none", []int{tid}, []int{4095}, false); err == nil {
		t.Error("pin to a CPU that does not exist succeeded")
	}
}

// Capability errors come first, with exit code 2 and nothing created.
func TestPreflight(t *testing.T) {
	base := `
name: p
backend: %s
qdisc: %s
generator: {%s}
repetitions: 1
`
	cases := []struct {
		name                string
		backend, qdisc, gen string
		want                string
		needRoot            bool
	}{
		{"no-pktgen", "tap", "pfifo_fast", "pktgen: {count: 1000}", "pktgen is not available", true},
		{"no-vhost-net", "tap+vhost", "pfifo_fast", "trafgen: {}", "/dev/vhost-net", true},
		{"unknown-qdisc", "tap", "vnbnosuchqdisc", "trafgen: {}", "qdisc vnbnosuchqdisc is not available in kernel", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot {
				testenv.NeedRoot(t, "preflight probes qdiscs in a network namespace")
			}
			if strings.Contains(tc.gen, "pktgen") && pktgen.Available() {
				testenv.NotApplicable(t, "this kernel has pktgen (the test checks the error without it)")
			}
			if tc.backend == "tap+vhost" {
				if _, err := os.Stat("/dev/vhost-net"); err == nil {
					testenv.NotApplicable(t, "this host has vhost-net (the test checks the error without it)")
				}
			}
			y := strings.Replace(base, "%s", tc.backend, 1)
			y = strings.Replace(y, "%s", tc.qdisc, 1)
			y = strings.Replace(y, "%s", tc.gen, 1)
			s, err := scenarios.Load("p.yaml", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			err = Preflight(t.Context(), s.Expand(), proc.Real{})
			if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want a missing capability %q, got %v", tc.want, err)
			}
		})
	}
	if left := probesLeft(); len(left) > 0 {
		t.Errorf("probe netns %v left behind", left)
	}
}

// probesLeft lists this process's probe namespace if it still exists.
// Only this process's: another process may be probing at this moment,
// in its own vnb-probe-PID (make test's test-gitlab lane runs quickstart,
// whose preflight probes pfifo_fast, beside this package).
func probesLeft() []string {
	return slices.DeleteFunc(hostnet.Leftovers(), func(n string) bool { return n != probeNetns() })
}

// probesLeft sees this process's probe namespace and not another's,
// which the test plants as pid 1's (init, which never probes).
func TestProbesLeftOwnOnly(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces")
	mk := func(name string) {
		ns, err := hostnet.CreateNetns(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := ns.Delete(); err != nil {
				t.Error(err)
			}
		})
	}
	mk("vnb-probe-1")
	if got := probesLeft(); len(got) > 0 {
		t.Errorf("with another process's probe namespace: probesLeft() = %v, want none", got)
	}
	mk(probeNetns())
	if got := probesLeft(); !slices.Equal(got, []string{probeNetns()}) {
		t.Errorf("with this process's probe namespace: probesLeft() = %v, want [%s]", got, probeNetns())
	}
}
