package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/runner/internal/golden"

	"github.com/vnetbench/vnetbench/runner/proc"
	"github.com/vnetbench/vnetbench/scenarios"
)

// Generators against the recording fake: the argv they run is golden,
// their outputs (captured on a CI-kind machine) are parsed.
func TestGeneratorsWithFake(t *testing.T) {
	trafOut, _ := os.ReadFile("testdata/trafgen-5s-output.txt")
	iperfOut, _ := os.ReadFile("testdata/iperf3-host-to-guest-tcg.json")
	f := &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) {
		switch c.Argv[0] {
		case "trafgen":
			return string(trafOut), false, nil // runs until SIGINT
		case "iperf3":
			return string(iperfOut), true, nil
		}
		return "", false, nil
	}}
	dir := t.TempDir()
	w := &Window{Exec: f, Netns: "vnb-test", Dev: "vnbt0", DevMAC: "02:00:00:00:00:01", Dst: GuestIP, DstMAC: GuestMAC,
		Artifacts: dir, RelDir: "artifacts/c/host/0", Agent: &fakeAgent{}}

	tg := &trafgenGen{cfg: scenarios.Trafgen{Duration: 200 * time.Millisecond, PktSize: 60, CPUs: 1}}
	if err := tg.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := tg.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Packets != 437644 || res.PPS <= 0 || len(res.Artifacts) != 2 {
		t.Errorf("trafgen result %+v", res)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "trafgen.cfg"))
	if !strings.Contains(string(cfg), "fill(0x00, 18)") {
		t.Errorf("trafgen.cfg %q", cfg)
	}

	ig := &iperf3Gen{cfg: scenarios.Iperf3{Duration: 10 * time.Second, Parallel: 1, Protocol: "tcp"}}
	if err := ig.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err = ig.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.ThroughputBps < 2e9 || res.ThroughputBps > 3e9 {
		t.Errorf("iperf3 throughput %v", res.ThroughputBps)
	}
	if _, err := os.Stat(filepath.Join(dir, "iperf3.json")); err != nil {
		t.Error(err)
	}
	golden.Check(t, "generators-fake.golden", strings.ReplaceAll(f.Transcript(), dir, "ARTIFACTS"))
}
