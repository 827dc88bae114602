package iperf3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/perfparse"
)

const guestIP = "10.0.0.2"

func TestArgvGolden(t *testing.T) {
	var b strings.Builder
	line := func(argv []string) { b.WriteString(proc.Quote(argv) + "\n") }
	line(Args(Config{Duration: 120 * time.Second, Parallel: 4, Omit: 2 * time.Second, Protocol: "tcp"}, guestIP))
	line(Args(Config{Duration: 1500 * time.Millisecond, Reverse: true, Protocol: "udp", Bitrate: "1G"}, guestIP))
	for _, argv := range ClientArgs(Config{Duration: 120 * time.Second, Parallel: 4, Omit: 2 * time.Second, Protocol: "tcp", Clients: ClientsPerStream}, guestIP) {
		line(argv)
	}
	golden.Check(t, "argv.golden", b.String())
}

// agent records the ops asked of the guest agent; stop answers stopLog,
// or with hang never (a stuck guest: it returns when ctx ends).
type agent struct {
	ops     []string
	stopLog string
	hang    bool
}

func (a *agent) Do(ctx context.Context, op, action string, args ...string) (string, error) {
	a.ops = append(a.ops, strings.Join(append([]string{op, action}, args...), " "))
	if action == "stop" && a.hang {
		<-ctx.Done()
		return "", fmt.Errorf("agent %s: no answer: %w", op, ctx.Err())
	}
	if action == "stop" {
		return a.stopLog, nil
	}
	return "", nil
}

// A guest that never answers the stop of its servers (stuck, or its
// kernel dead with QEMU up) is asked for stopWait, not for as long as it
// takes: a cell that failed (its client did not start; its traffic
// deadline ended) fails with its own error and says the servers were not
// stopped and why.
func TestStopServerBounded(t *testing.T) {
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	for _, inStart := range []bool{true, false} {
		t.Run(fmt.Sprintf("in start %v", inStart), func(t *testing.T) {
			a := &agent{hang: true}
			f, w := fakeWindow(t, nil, a)
			f.Handler = func(proc.Cmd) (string, bool, error) { return "", false, nil } // runs until stopped
			g := (&Config{Duration: 4 * time.Second, Protocol: "tcp"}).Generator().(*generator)
			g.stopWait = 20 * time.Millisecond
			var err error
			if inStart {
				err = g.Start(ended, w) // the client cannot start: setup's deadline ended
			} else if err = g.Start(t.Context(), w); err == nil {
				_, err = g.Wait(ended) // the traffic deadline ended
			}
			note := "(the guest's iperf3 servers were not stopped: agent iperf3: no answer: context deadline exceeded)"
			if !errors.Is(err, context.Canceled) || !strings.HasSuffix(err.Error(), note) {
				t.Errorf("err %v, want the cell's own and then %s", err, note)
			}
			if !slices.Equal(a.ops, []string{"iperf3 start", "iperf3 stop"}) {
				t.Errorf("agent ops %q", a.ops)
			}
		})
	}
}

// capture is a real iperf3 output in testdata.
func capture(t *testing.T, name string) []byte {
	t.Helper()
	out, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeWindow is a window on the recording fake, every command of which
// prints out, with agent a and a new artifacts directory.
func fakeWindow(t *testing.T, out []byte, a *agent) (*proc.Fake, *workload.Window) {
	f := &proc.Fake{Handler: func(proc.Cmd) (string, bool, error) { return string(out), true, nil }}
	w := &workload.Window{Exec: f, Netns: "vnb-test", Dev: "vnbt0", Dst: guestIP, Artifacts: t.TempDir(), RelDir: "artifacts/c/host/0", Agent: a}
	return f, w
}

// A client whose stream the guest reset (a real iperf3 3.12 capture: the
// server killed 1.5 s into a 4 s test on loopback) fails with iperf3's
// error and the guest server's own last error line; the server's output
// is kept as an artifact of the sample.
func TestGeneratorServerDied(t *testing.T) {
	a := &agent{stopLog: "-----------------------------------------------------------\nServer listening on 5201\niperf3: error - the server on port 5201 had ended before stop: signal: killed\n"}
	_, w := fakeWindow(t, capture(t, "iperf3-reset-by-peer.json"), a)
	g := (&Config{Duration: 4 * time.Second, Protocol: "tcp"}).Generator()
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	_, err := g.Wait(t.Context())
	want := "iperf3: unable to write to stream socket: Connection reset by peer (the guest's server: iperf3: error - the server on port 5201 had ended before stop: signal: killed)"
	if err == nil || err.Error() != want {
		t.Errorf("Wait: %v\nwant %s", err, want)
	}
	if c, _ := fault.VoidCause(err); !errors.Is(err, fault.ErrVoid) || c != "connection reset by peer" {
		t.Errorf("a test the server broke off is not void for its reset: %v (cause %q)", err, c)
	}
	if b, err := os.ReadFile(filepath.Join(w.Artifacts, "iperf3-server.txt")); err != nil || string(b) != a.stopLog {
		t.Errorf("iperf3-server.txt: %q, %v", b, err)
	}
}

// clients: per-stream is the netdev thread's "4 iperf3 client threads"
// with Debian 12's iperf3 3.12 (one thread per client process): 4
// clients with one stream each to 4 guest servers on ports 5201-5204;
// their receivers' rates and retransmits add up, each output is kept.
func TestGeneratorClientsPerStream(t *testing.T) {
	out := capture(t, "iperf3-host-to-guest-tcg.json")
	one, err := perfparse.ParseIperf3(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{}
	f, w := fakeWindow(t, out, a)
	cfg := Config{Duration: 10 * time.Second, Parallel: 4, Protocol: "tcp", Clients: ClientsPerStream}
	g := cfg.Generator()
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Threads(); len(pids) != 4 {
		t.Errorf("threads %v, want the 4 clients' pids", pids)
	}
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Metrics["throughput_bps"], 4**one.ReceiverBitsPerSec; math.Abs(got-want) > 1 {
		t.Errorf("throughput %v, want the 4 clients' sum %v", got, want)
	}
	// Each client's 10 intervals report srtt 0.766..7.234 ms; pooled over
	// the 4 clients, the median (20th of 40, lower middle) is the 5th
	// smallest of one client's: 2.721 ms.
	if got := res.Metrics["iperf3_srtt_s"]; math.Abs(got-2.721e-3) > 1e-12 {
		t.Errorf("iperf3_srtt_s %v, want 2.721e-3, the median of the intervals' rtt", got)
	}
	if got, want := res.Metrics["iperf3_host_cpu_frac"], 4*one.CPU.HostTotalFrac; math.Abs(got-want) > 1e-9 {
		t.Errorf("host cpu %v, want %v", got, want)
	}
	if !slices.Equal(a.ops, []string{"iperf3 start 4", "iperf3 stop"}) {
		t.Errorf("agent ops %q", a.ops)
	}
	if len(res.Artifacts) != 4 || !strings.HasSuffix(res.Artifacts[3], "iperf3-3.json") {
		t.Errorf("artifacts %q", res.Artifacts)
	}
	golden.Check(t, "generator-per-stream.golden", f.Transcript())
	if n := len(cfg.HostThreads()); n != 4 {
		t.Errorf("%d host threads, want 4 clients", n)
	}
	if cmds := cfg.Commands(workload.PlanEnv{Netns: "vnb-RUNID", Dst: guestIP}); len(cmds) != 4 || !strings.Contains(cmds[3], "-p 5204") {
		t.Errorf("plan commands %q", cmds)
	}
}

// Against the recording fake: the guest's server is started and stopped
// through the agent, the client's argv is golden, its JSON output
// (captured on a CI-kind machine) gives the metrics.
func TestGeneratorWithFake(t *testing.T) {
	a := &agent{}
	f, w := fakeWindow(t, capture(t, "iperf3-host-to-guest-tcg.json"), a)
	res := startWait(t, Config{Duration: 10 * time.Second, Parallel: 1, Protocol: "tcp"}, w)
	if bps := res.Metrics["throughput_bps"]; bps < 2e9 || bps > 3e9 {
		t.Errorf("iperf3 throughput %v", bps)
	}
	if _, ok := res.Metrics["tx_pps"]; ok {
		t.Error("iperf3 reports tx_pps")
	}
	if busy := res.BusyFrac; math.Abs(busy-0.175) > 0.001 {
		t.Errorf("generator busy %v, want 0.175 (host_total 17.5%% of one CPU)", busy)
	}
	if !slices.Equal(a.ops, []string{"iperf3 start", "iperf3 stop"}) {
		t.Errorf("agent ops %q", a.ops)
	}
	if _, err := os.Stat(filepath.Join(w.Artifacts, "iperf3.json")); err != nil {
		t.Error(err)
	}
	golden.Check(t, "generator-fake.golden", f.Transcript())
}

// iperf3's host_total is a fraction of one CPU: the real capture's 17.5%
// (iperf 3.12, one stream, on a 2-CPU machine) is a generator 17.5% busy,
// whatever the machine's CPU count, so the "< 90% busy" warning fires.
// iperf3 3.16 and later run a thread per stream.
func TestBusyFracFromRealJSON(t *testing.T) {
	data, err := os.ReadFile("testdata/iperf3-host-to-guest-tcg.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := perfparse.ParseIperf3(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != "iperf 3.12" || res.NumStreams != 1 || res.CPU == nil {
		t.Fatalf("capture: version %q, %d streams, cpu %v", res.Version, res.NumStreams, res.CPU)
	}
	if got := busyFrac(res); math.Abs(got-0.17539226372992083) > 1e-12 {
		t.Errorf("busy %v, want host_total 17.539%% as 0.175", got)
	}
	for _, tc := range []struct {
		version string
		streams int
		total   float64
		want    float64
	}{
		{"iperf 3.12", 4, 0.5, 0.5},    // one thread for all streams
		{"iperf 3.12", 1, 1.2, 1},      // clamped
		{"iperf 3.16", 4, 2.0, 0.5},    // 4 threads, 200% of one CPU
		{"iperf 3.17.1", 2, 1.9, 0.95}, // patch releases
		{"iperf 4.0", 2, 1.0, 0.5},
		{"iperf 3.16+", 2, 1.0, 0.5},
		{"", 4, 0.3, 0.3}, // unknown version: one thread
	} {
		r := *res
		cpu := *res.CPU
		r.Version, r.NumStreams, cpu.HostTotalFrac, r.CPU = tc.version, tc.streams, tc.total, &cpu
		if got := busyFrac(&r); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%q, %d streams, host_total %v: busy %v, want %v", tc.version, tc.streams, tc.total, got, tc.want)
		}
	}
	res.CPU = nil
	if got := busyFrac(res); got != -1 {
		t.Errorf("no cpu_utilization_percent: busy %v, want -1 (unknown)", got)
	}
}

// startWait runs cfg's generator in w and returns its result.
func startWait(t *testing.T, cfg Config, w *workload.Window) *workload.Result {
	t.Helper()
	g := cfg.Generator()
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// runCapture runs cfg's generator against the recording fake, each client
// of which prints the real capture name, and returns its result.
func runCapture(t *testing.T, cfg Config, name string) *workload.Result {
	t.Helper()
	_, w := fakeWindow(t, capture(t, name), &agent{})
	return startWait(t, cfg, w)
}

// A UDP cell's result has the receiver's jitter and the share of the
// datagrams it lost, as iperf3 printed them in its sum_received. Real
// captures (iperf 3.12 on loopback, -u -b 100M -t 2, testdata/README.md):
// forward, the server received 652 of 763 datagrams (111 lost, 14.548%)
// with a jitter of 0.009963778170247673 ms; with -R the client received
// all 763 with 0.0993798297144817 ms. A TCP cell, either way, has neither.
func TestGeneratorUDPJitterLoss(t *testing.T) {
	for _, tc := range []struct {
		name, capture string
		reverse       bool
		jitter, lost  float64
		bps           float64
	}{
		{"forward", "iperf3-udp-lo.json", false, 9.963778170247673e-06, 111.0 / 763, 85451637.88496085},
		{"reverse", "iperf3-udp-lo-R.json", true, 9.93798297144817e-05, 0, 100000435.96730244},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCapture(t, Config{Duration: 2 * time.Second, Parallel: 1, Protocol: "udp", Bitrate: "100M", Reverse: tc.reverse}, tc.capture)
			m := res.Metrics
			if got, ok := m["iperf3_jitter_s"]; !ok || got != tc.jitter {
				t.Errorf("iperf3_jitter_s %v (%v), want the receiver's jitter_ms as seconds, %v", got, ok, tc.jitter)
			}
			if got, ok := m["iperf3_lost_frac"]; !ok || math.Abs(got-tc.lost) > 1e-15 {
				t.Errorf("iperf3_lost_frac %v (%v), want %v", got, ok, tc.lost)
			}
			if got := m["throughput_bps"]; got != tc.bps {
				t.Errorf("throughput_bps %v, want the receiver's %v", got, tc.bps)
			}
			for _, k := range []string{"retransmits", "iperf3_srtt_s"} {
				if v, ok := m[metric.Key(k)]; ok {
					t.Errorf("a UDP cell has %s %v", k, v)
				}
			}
		})
	}
	for _, c := range []string{"iperf3-host-to-guest-tcg.json", "iperf3-tcp-lo-R.json"} {
		res := runCapture(t, Config{Duration: 2 * time.Second, Parallel: 1, Protocol: "tcp", Reverse: strings.Contains(c, "-R")}, c)
		for _, k := range []metric.Key{"iperf3_jitter_s", "iperf3_lost_frac"} {
			if v, ok := res.Metrics[k]; ok {
				t.Errorf("%s: a TCP cell has %s %v", c, k, v)
			}
		}
	}
}

// With clients: per-stream each client's receiver reports its own
// stream: the jitter is their mean, the loss all lost datagrams over all
// sent (4 clients of the forward capture: 444 of 3052).
func TestGeneratorUDPPerStreamTotals(t *testing.T) {
	res := runCapture(t, Config{Duration: 2 * time.Second, Parallel: 4, Protocol: "udp", Bitrate: "100M", Clients: ClientsPerStream}, "iperf3-udp-lo.json")
	if got := res.Metrics["iperf3_jitter_s"]; math.Abs(got-9.963778170247673e-06) > 1e-18 {
		t.Errorf("iperf3_jitter_s %v, want the 4 equal jitters' mean", got)
	}
	if got := res.Metrics["iperf3_lost_frac"]; math.Abs(got-444.0/3052) > 1e-15 {
		t.Errorf("iperf3_lost_frac %v, want 444/3052", got)
	}
}

// A TCP reverse test (real capture, iperf 3.12 -t 2 -R on loopback): the
// client is the receiver; Throughput is its sum_received, Retransmits the
// server's (the sender's) 7 from the exchange of results.
func TestGeneratorTCPReverse(t *testing.T) {
	res := runCapture(t, Config{Duration: 2 * time.Second, Parallel: 1, Protocol: "tcp", Reverse: true}, "iperf3-tcp-lo-R.json")
	if got := res.Metrics["throughput_bps"]; got != 15048478046.2489 {
		t.Errorf("throughput_bps %v, want the client's sum_received 15048478046.2489", got)
	}
	if got, ok := res.Metrics["retransmits"]; !ok || got != 7 {
		t.Errorf("retransmits %v (%v), want the sender's 7", got, ok)
	}
}
