package iperf3

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/runner/proc"
)

const guestIP = "10.0.0.2"

func TestArgvGolden(t *testing.T) {
	var b strings.Builder
	line := func(argv []string) { b.WriteString(proc.Quote(argv) + "\n") }
	line(Args(Config{Duration: 120 * time.Second, Parallel: 4, Omit: 2 * time.Second, Protocol: "tcp"}, guestIP))
	line(Args(Config{Duration: 1500 * time.Millisecond, Reverse: true, Protocol: "udp", Bitrate: "1G"}, guestIP))
	golden.Check(t, "argv.golden", b.String())
}

// agent records the ops asked of the guest agent.
type agent struct{ ops []string }

func (a *agent) Do(_ context.Context, op, action string) error {
	a.ops = append(a.ops, op+" "+action)
	return nil
}

// Against the recording fake: the guest's server is started and stopped
// through the agent, the client's argv is golden, its JSON output
// (captured on a CI-kind machine) gives the metrics.
func TestGeneratorWithFake(t *testing.T) {
	out, err := os.ReadFile("testdata/iperf3-host-to-guest-tcg.json")
	if err != nil {
		t.Fatal(err)
	}
	f := &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) { return string(out), true, nil }}
	dir := t.TempDir()
	a := &agent{}
	w := &workload.Window{Exec: f, Netns: "vnb-test", Dev: "vnbt0", Dst: guestIP, Artifacts: dir, RelDir: "artifacts/c/host/0", Agent: a}
	cfg := Config{Duration: 10 * time.Second, Parallel: 1, Protocol: "tcp"}
	g := cfg.Generator()
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if bps := res.Metrics["throughput_bps"]; bps < 2e9 || bps > 3e9 {
		t.Errorf("iperf3 throughput %v", bps)
	}
	if _, ok := res.Metrics["tx_pps"]; ok {
		t.Error("iperf3 reports tx_pps")
	}
	if !slices.Equal(a.ops, []string{"iperf3 start", "iperf3 stop"}) {
		t.Errorf("agent ops %q", a.ops)
	}
	if _, err := os.Stat(filepath.Join(dir, "iperf3.json")); err != nil {
		t.Error(err)
	}
	golden.Check(t, "generator-fake.golden", f.Transcript())
}
