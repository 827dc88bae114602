package vsock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/report"
)

// A real capture: the sockmap cell of the loopback scenario on Debian's
// 6.12 guest kernel under TCG (testdata/real/README.md).
const capturedSockmap = "testdata/real/loopback-612-tcg/artifacts/tap__vsock-t1__sockmap/running/0/vsock.json"

func captured(t *testing.T, path string) (guestResult, serverCount) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Guest  guestResult `json:"guest"`
		Server serverCount `json:"server"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.Guest, v.Server
}

// fakeAgent plays the guest's side: start is recorded and answered,
// stop answers with a captured reply.
type fakeAgent struct {
	calls    []string
	startErr error
	stop     string
}

func (a *fakeAgent) Do(_ context.Context, op, action string, args ...string) (string, error) {
	a.calls = append(a.calls, strings.TrimSpace(op+" "+action+" "+strings.Join(args, " ")))
	if action == "start" {
		return "started", a.startErr
	}
	return a.stop, nil
}

// The loopback generator: the guest's side is started with the cell's
// arguments and stopped after the duration; the metrics come from its
// reply: the server's bytes x 8 over its interval, the redirector's and
// kworkers' CPU over the sender's run.
func TestGeneratorLoopback(t *testing.T) {
	res, count := captured(t, capturedSockmap)
	reply, _ := json.Marshal(res)
	a := &fakeAgent{stop: string(reply)}
	dir := t.TempDir()
	cfg := Config{Redirector: Sockmap, Transport: Loopback, Payload: 65536, Threads: 1, Duration: 200 * time.Millisecond, Port: 1234, CID: 3}
	g := cfg.Generator()
	start := time.Now()
	if err := g.Start(t.Context(), &workload.Window{Agent: a, Artifacts: dir, RelDir: "artifacts/c/k/0"}); err != nil {
		t.Fatal(err)
	}
	if tids, _ := g.Threads(); tids != nil {
		t.Errorf("loopback has host threads %v", tids)
	}
	out, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("stopped after %v, before the duration", d)
	}
	want := []string{
		"vsock start redirector=sockmap payload=65536 threads=1 duration=200ms cid=1 port=1234 server=true",
		"vsock stop",
	}
	if strings.Join(a.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("agent calls:\n%s\nwant:\n%s", strings.Join(a.calls, "\n"), strings.Join(want, "\n"))
	}
	m := out.Metrics
	if !near(m["throughput_bps"], float64(count.Bytes)*8/count.Seconds) || m["vsock_rx_bytes"] != float64(count.Bytes) ||
		!near(m["redirector_cpu_frac"], (res.RedirectorCPU+res.KworkerCPU)/res.SendSeconds) ||
		!near(m["vsock_sent_bps"], float64(res.SentBytes)*8/res.SendSeconds) || !near(m["guest_cpu_frac"], res.GuestBusy/res.SendSeconds) {
		t.Errorf("metrics %v from %+v and %+v", m, res, count)
	}
	if len(out.Warnings) != 0 || len(out.Artifacts) != 1 || out.Artifacts[0] != "artifacts/c/k/0/vsock.json" {
		t.Errorf("warnings %q, artifacts %q", out.Warnings, out.Artifacts)
	}
	if _, err := os.Stat(filepath.Join(dir, "vsock.json")); err != nil {
		t.Error(err)
	}
}

// A guest that cannot redirect with sockmap makes Start return the
// guest's UnsupportedError (the cell is n/a); other failures are errors.
func TestGeneratorStartErrors(t *testing.T) {
	cfg := Config{Redirector: Sockmap, Transport: Loopback, Payload: 65536, Threads: 1, Duration: time.Second, Port: 1234}
	err := cfg.Generator().Start(t.Context(), &workload.Window{Agent: &fakeAgent{startErr: workload.Unsupported("%s", SockmapFeature.Why)}})
	if why, ok := workload.IsUnsupported(err); !ok || why != SockmapFeature.Why {
		t.Errorf("unsupported start: %v", err)
	}
	err = cfg.Generator().Start(t.Context(), &workload.Window{Agent: &fakeAgent{startErr: errors.New("agent vsock: start socat: not found")}})
	if _, ok := workload.IsUnsupported(err); ok || err == nil || err.Error() != "vsock guest side: agent vsock: start socat: not found" {
		t.Errorf("failed start: %v", err)
	}
	if err := cfg.Generator().Start(t.Context(), &workload.Window{}); err == nil {
		t.Error("started without a guest agent")
	}
}

// A redirector that loses data (socat without -b truncates 64 KiB
// datagrams to 8 KiB) is a warning on the sample; a server that read once
// has no interval, which is an error.
func TestMetricsCrossCheck(t *testing.T) {
	res := guestResult{SentBytes: 64 << 20, SendSeconds: 5, CPUSource: "stat"}
	out := &workload.Result{Metrics: map[metric.Key]float64{}}
	addMetrics(out, res, serverCount{First: 8192, Bytes: 8 << 20, Reads: 1025, Seconds: 4.9})
	if len(out.Warnings) != 2 || !strings.Contains(out.Warnings[0], "received 8396800 of the 67108864 bytes the sender wrote (13%)") ||
		!strings.Contains(out.Warnings[1], "10 ms ticks") {
		t.Errorf("warnings %q", out.Warnings)
	}
	a := &fakeAgent{stop: `{"sent_bytes":65536,"send_s":1,"server":{"bytes":0,"first_bytes":65536,"reads":1}}`}
	cfg := Config{Redirector: Socat, Transport: Loopback, Payload: 65536, Threads: 1, Duration: time.Millisecond, Port: 1234}
	g := cfg.Generator()
	if err := g.Start(t.Context(), &workload.Window{Agent: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "no interval to measure over") {
		t.Errorf("one read: %v", err)
	}
}

// The tables of real runs: socat and sockmap side by side with the change
// from the medians (loopback, Debian 6.12 guest, TCG), and sockmap n/a on
// Debian's 6.1 guest kernel.
func TestReportGolden(t *testing.T) {
	for _, name := range []string{"loopback-612-tcg", "loopback-61-tcg"} {
		t.Run(name, func(t *testing.T) {
			set, err := results.Load(filepath.Join("testdata", "real", name))
			if err != nil {
				t.Fatal(err)
			}
			r, err := report.Build(set, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := report.WriteText(&b, r, report.ASCII); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name+".txt", b.String())
			out := b.String()
			// The payload reads as every table writes a size (units.Bytes),
			// not "65536B" beside another table's "60 B packets".
			if l := r.Tables[0].Rows[0].Labels[0]; l != "64 KiB" {
				t.Errorf("payload row %q, want 64 KiB", l)
			}
			for _, want := range []string{" socat |", " sockmap |", " change, 1 run |", " MB/s ", "Redirector CPU", "change = sockmap / socat - 1, from the medians"} {
				if name == "loopback-61-tcg" && want == " change, 1 run |" {
					want = " change |" // nothing to compare: no runs in the header
				}
				if name == "loopback-61-tcg" && strings.HasPrefix(want, "change") {
					want = "n/a: this kernel has no vsock sockmap support (Linux 6.4+)"
				}
				if !strings.Contains(out, want) {
					t.Errorf("lacks %q", want)
				}
			}
		})
	}
}

// The Throughput row reads in MB/s, bytes: its legend must say how that
// number is made from what the server counted (bytes after the first
// read over the time from the first read's end to the last's), not how
// the stored bit/s metric is (x 8), or a reader multiplies by 8 again.
func TestThroughputLegend(t *testing.T) {
	_, srv := captured(t, capturedSockmap)
	set, err := results.Load(filepath.Join("testdata", "real", "loopback-612-tcg"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(set, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteText(&b, r, report.ASCII); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	want := fmt.Sprintf("%.2f MB/s", float64(srv.Bytes)/srv.Seconds/1e6)
	if !strings.Contains(out, want) {
		t.Errorf("the sockmap cell is not the server's bytes / its interval (%s):\n%s", want, b.String())
	}
	for _, w := range []string{"Throughput = the bytes the vsock server read after its first read", "all sender threads'",
		"from the end of its first read to the end of its last", "MB/s = 1e6 bytes/s"} {
		if !strings.Contains(out, w) {
			t.Errorf("legend lacks %q:\n%s", w, b.String())
		}
	}
	if strings.Contains(out, "x 8") {
		t.Errorf("legend of a MB/s row says x 8 (bits):\n%s", b.String())
	}
}

// vsock's bytes never cross the guest's NIC: its table's header must not
// name the tap backend as if the numbers were the tap's, but say it is
// off the measured path (the backend still tells cells apart).
func TestTableBackendOffPath(t *testing.T) {
	set, err := results.Load(filepath.Join("testdata", "real", "loopback-612-tcg"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(set, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tb := range r.Tables {
		if tb.Kind != report.KindVersus {
			continue
		}
		n++
		if strings.Contains(tb.Context, ", TAP,") || !strings.Contains(tb.Context, "guest NIC TAP, not on the measured path") {
			t.Errorf("context %q: want the backend as the guest NIC, not on the measured path", tb.Context)
		}
	}
	if n != 1 {
		t.Errorf("%d versus tables, want 1", n)
	}
}
