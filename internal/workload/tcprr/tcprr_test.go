package tcprr

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/testenv/nstest"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// The package's namespaces; TestMain fails it when a test leaves one
// behind.
const netns = nstest.Prefix("vnbrr")

func TestMain(m *testing.M) { netns.Main(m) }

// pair makes two namespaces joined by a veth pair: a (10.78.0.1) and b
// (10.78.0.2), deleted when the test ends.
func pair(t *testing.T) (a, b *hostnet.Netns) {
	t.Helper()
	testenv.NeedRoot(t, "network namespaces and a veth pair")
	testenv.NeedCommand(t, "ip", "iproute2")
	a, b = netns.New(t), netns.New(t)
	for _, args := range [][]string{
		{"-n", a.Name, "link", "add", "vnbrra", "type", "veth", "peer", "name", "vnbrrb", "netns", b.Name},
		{"-n", a.Name, "addr", "add", "10.78.0.1/24", "dev", "vnbrra"},
		{"-n", a.Name, "link", "set", "vnbrra", "up"},
		{"-n", b.Name, "addr", "add", "10.78.0.2/24", "dev", "vnbrrb"},
		{"-n", b.Name, "link", "set", "vnbrrb", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	return a, b
}

// nsAgent is the guest agent's side of the workload in namespace b: the
// op runs there, as the agent runs it in a guest.
type nsAgent struct {
	b   *hostnet.Netns
	srv *Server
	ops []string
}

func (a *nsAgent) Do(_ context.Context, op, action string, args ...string) (string, error) {
	if op != agentOp {
		return "", fmt.Errorf("op %q", op)
	}
	a.ops = append(a.ops, strings.Join(append([]string{action}, args...), " "))
	var detail string
	err := a.b.Do(func() error {
		var err error
		detail, err = a.srv.op(action, args)
		return err
	})
	return detail, err
}

// run runs one window of cfg from a to the server in b.
func run(t *testing.T, a *hostnet.Netns, ag *nsAgent, cfg Config) (*workload.Result, string) {
	t.Helper()
	dir := t.TempDir()
	w := &workload.Window{Netns: a.Name, InNetns: a.Do, Dst: "10.78.0.2", Agent: ag, Artifacts: dir, RelDir: "artifacts/c/host/0"}
	g := cfg.Generator()
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	tids, _ := g.Threads()
	if want := 1 + cfg.BulkStreams*(cfg.phases()-1); len(tids) != want {
		t.Errorf("threads %v, want %d (the client and each bulk sender)", tids, want)
	}
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return res, dir
}

// The client's transactions are the guest's: the echo server wrote back
// exactly size bytes per transaction the client counted, the percentiles
// are ordered, and with bulk: tcp the discard server counted the stream.
func TestTransactionsAndBulk(t *testing.T) {
	a, b := pair(t)
	ag := &nsAgent{b: b, srv: &Server{}}
	cfg := Config{Duration: 700 * time.Millisecond, Size: 64, Bulk: BulkTCP, BulkStreams: 2, Port: 7010}
	res, dir := run(t, a, ag, cfg)
	m := res.Metrics
	for _, k := range []metric.Key{"rr_tps", "rr_p50_s", "rr_p99_s", "rr_p999_s", "rr_load_tps", "rr_load_p50_s", "rr_load_p99_s", "rr_load_p999_s", "rr_bulk_bps"} {
		if m[k] <= 0 {
			t.Errorf("%s = %v, want > 0 (metrics %v)", k, m[k], m)
		}
	}
	for _, pre := range []string{"rr_", "rr_load_"} {
		if !(m[metric.Key(pre+"p50_s")] <= m[metric.Key(pre+"p99_s")] && m[metric.Key(pre+"p99_s")] <= m[metric.Key(pre+"p999_s")]) {
			t.Errorf("%s percentiles out of order: %v %v %v", pre, m[metric.Key(pre+"p50_s")], m[metric.Key(pre+"p99_s")], m[metric.Key(pre+"p999_s")])
		}
	}
	var sum summary
	raw, err := os.ReadFile(filepath.Join(dir, "tcp_rr.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Phases) != 2 {
		t.Fatalf("tcp_rr.json has %d phases, want 2", len(sum.Phases))
	}
	n := sum.Phases[0].Transactions + sum.Phases[1].Transactions
	if last := ag.ops[len(ag.ops)-1]; last != "stop" {
		t.Fatalf("last op %q, want stop (ops %v)", last, ag.ops)
	}
	echoed, discarded := ag.srv.echoed.Load(), ag.srv.discarded.Load()
	if sum.GuestEchoed != int64(echoed) {
		t.Errorf("tcp_rr.json says the guest echoed %d bytes, its server %d", sum.GuestEchoed, echoed)
	}
	if echoed != uint64(n*cfg.Size) {
		t.Errorf("the echo server wrote %d bytes; the client counted %d transactions of %d B = %d", echoed, n, cfg.Size, n*cfg.Size)
	}
	if sum.BulkBytes == 0 || sum.BulkBytes > discarded {
		t.Errorf("bulk bytes in the loaded phase %d, the discard server's total %d: want 0 < phase <= total", sum.BulkBytes, discarded)
	}
	if got := strings.Join(ag.ops[:2], ", "); got != "stop, start 7010" {
		t.Errorf("first ops %q, want \"stop, start 7010\"", got)
	}
	t.Logf("alone %.0f tps p50 %.1f us; beside 2 bulk streams (%.0f Mbit/s) %.0f tps p50 %.1f us",
		m["rr_tps"], m["rr_p50_s"]*1e6, m["rr_bulk_bps"]/1e6, m["rr_load_tps"], m["rr_load_p50_s"]*1e6)
}

// bulk: none runs the phase alone: no bulk metrics, one thread.
func TestNoBulk(t *testing.T) {
	a, b := pair(t)
	ag := &nsAgent{b: b, srv: &Server{}}
	res, _ := run(t, a, ag, Config{Duration: 300 * time.Millisecond, Size: 1, Bulk: BulkNone, BulkStreams: 1, Port: 7010})
	if _, ok := res.Metrics["rr_load_tps"]; ok {
		t.Errorf("bulk: none has rr_load_tps: %v", res.Metrics)
	}
	if res.Metrics["rr_tps"] <= 0 {
		t.Errorf("rr_tps %v", res.Metrics["rr_tps"])
	}
}

// A guest without the server: the connect fails with the address, and
// the guest's servers are stopped again.
func TestNoServer(t *testing.T) {
	a, _ := pair(t)
	w := &workload.Window{InNetns: a.Do, Dst: "10.78.0.2"}
	cfg := Config{Duration: time.Second, Size: 1, Bulk: BulkNone, Port: 7010}
	err := cfg.Generator().Start(t.Context(), w)
	if err == nil || !strings.Contains(err.Error(), "10.78.0.2:7010") {
		t.Fatalf("Start without a server: %v, want a connect error naming 10.78.0.2:7010", err)
	}
}
