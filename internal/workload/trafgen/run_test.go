package trafgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/workload"
)

const (
	hostIP   = "10.0.0.1"
	guestIP  = "10.0.0.2"
	guestMAC = "52:54:00:12:34:56"
	tapMAC   = "02:00:00:00:00:01"
)

// The argv and packet configuration, as the shell would see them.
func TestArgvGolden(t *testing.T) {
	var b strings.Builder
	line := func(argv []string) { b.WriteString(proc.Quote(argv) + "\n") }
	line(Args(Config{Duration: 5 * time.Second, PktSize: 60, CPUs: 2, Rate: "10kpps"}, "vnbt0", "/r/trafgen.cfg"))
	line(Args(Config{}, "vnbt0", "/r/trafgen.cfg"))
	b.WriteString(PacketConfig(60, tapMAC, hostIP, guestMAC, guestIP))
	b.WriteString(PacketConfig(1500, tapMAC, hostIP, guestMAC, guestIP))
	golden.Check(t, "argv.golden", b.String())
}

// The fixture's configuration was captured with the same layout.
func TestPacketConfigMatchesFixture(t *testing.T) {
	got := PacketConfig(60, tapMAC, hostIP, guestMAC, guestIP)
	want := "{ eth(da=52:54:00:12:34:56, sa=02:00:00:00:00:01), ipv4(sa=10.0.0.1, da=10.0.0.2), udp(sp=9, dp=9), fill(0x00, 18) }\n"
	if got != want {
		t.Errorf("got %q", got)
	}
}

func TestParsePackets(t *testing.T) {
	b, err := os.ReadFile("testdata/trafgen-5s-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	n, err := parsePackets(b)
	if err != nil || n != 437644 {
		t.Errorf("got %d, %v", n, err)
	}
	if _, err := parsePackets([]byte("Running! Hang up with ^C!\n")); err == nil {
		t.Error("no summary: want an error")
	}
}

// Against the recording fake: the argv it runs is golden, the output
// (captured on a CI-kind machine) is parsed into tx_pps.
func TestGeneratorWithFake(t *testing.T) {
	out, err := os.ReadFile("testdata/trafgen-5s-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	f := &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) {
		return string(out), false, nil // runs until SIGINT
	}}
	dir := t.TempDir()
	w := &workload.Window{Exec: f, Netns: "vnb-test", Dev: "vnbt0", DevMAC: tapMAC, Src: hostIP, Dst: guestIP, DstMAC: guestMAC,
		Artifacts: dir, RelDir: "artifacts/c/host/0"}
	cfg := Config{Duration: 200 * time.Millisecond, PktSize: 60, CPUs: 1}
	g := cfg.Generator()
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// 437644 packets over about 200ms.
	if pps := res.Metrics["tx_pps"]; pps < 437644/1.0 || pps > 437644/0.15 || len(res.Artifacts) != 2 {
		t.Errorf("trafgen result %+v", res)
	}
	cfgText, _ := os.ReadFile(filepath.Join(dir, "trafgen.cfg"))
	if !strings.Contains(string(cfgText), "fill(0x00, 18)") || !strings.Contains(string(cfgText), "sa="+hostIP) {
		t.Errorf("trafgen.cfg %q", cfgText)
	}
	golden.Check(t, "generator-fake.golden", strings.ReplaceAll(f.Transcript(), dir, "ARTIFACTS"))
	// Its working directory is the temporary directory (a tmpfs in a lab
	// VM), never the run directory: trafgen maps a file it creates there
	// MAP_SHARED, which the lab's 9p run directory refuses.
	if calls := f.Calls(); len(calls) != 1 {
		t.Errorf("%d commands, want trafgen alone", len(calls))
	} else if calls[0].Dir != os.TempDir() {
		t.Errorf("trafgen runs in %q, want %q", calls[0].Dir, os.TempDir())
	}
}
