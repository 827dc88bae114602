package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/scenarios"
)

// The pktgen generator against a fake /proc/net/pktgen: the plan's writes
// land in the files, every write goes through InNetns, the Result is parsed.
func TestPktgenGeneratorFakeProc(t *testing.T) {
	dir := t.TempDir()
	procDir, sysNet := filepath.Join(dir, "pktgen"), filepath.Join(dir, "net")
	os.MkdirAll(procDir, 0o755)
	os.MkdirAll(filepath.Join(sysNet, "vnbt0"), 0o755)
	for _, f := range []string{"pgctrl", "kpktgend_0", "vnbt0"} {
		os.WriteFile(filepath.Join(procDir, f), nil, 0o644)
	}
	os.WriteFile(filepath.Join(sysNet, "vnbt0", "carrier"), []byte("1\n"), 0o644)
	var inNS []string
	var notes []string
	w := &Window{Dev: "vnbt0", Dst: GuestIP, DstMAC: GuestMAC, Artifacts: dir, RelDir: "artifacts/c/host/0",
		InNetns: func(fn func() error) error { inNS = append(inNS, "write"); return fn() },
		Note:    func(l string) { notes = append(notes, l) }}
	g := &pktgenGenerator{cfg: scenarios.Pktgen{Mode: "simple", Threads: 1, Count: 100000, PktSize: 60},
		testProc: procDir, testSys: sysNet}
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	fixture, _ := os.ReadFile("testdata/pktgen-tap0-L1-drain-ok.txt")
	os.WriteFile(filepath.Join(procDir, "vnbt0"), fixture, 0o644)
	time.Sleep(50 * time.Millisecond)
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.PPS != 155742 || res.Packets != 100000 || len(res.Threads) != 1 || res.Threads[0].TxPPS != 155742 {
		t.Errorf("result %+v", res)
	}
	// Every write from inside the netns (pgctrl acts on the writer's
	// namespace): the plan's setup, start, and the final reset.
	if want := len(g.sess.Plan().Setup) + 2; len(inNS) != want {
		t.Errorf("writes through InNetns: %d, want %d", len(inNS), want)
	}
	if got, _ := os.ReadFile(filepath.Join(procDir, "pgctrl")); strings.TrimSpace(string(got)) != "reset" {
		t.Errorf("pgctrl last write %q, want reset", got)
	}
	if len(notes) == 0 || !strings.Contains(notes[len(notes)-1], `echo "start" > `+procDir+"/pgctrl") {
		t.Errorf("notes %v", notes)
	}
	// NO-CARRIER is refused before any write.
	os.WriteFile(filepath.Join(sysNet, "vnbt0", "carrier"), []byte("0\n"), 0o644)
	g = &pktgenGenerator{cfg: scenarios.Pktgen{Mode: "simple", Threads: 1, Count: 10}, testProc: procDir, testSys: sysNet}
	err = g.Start(t.Context(), w)
	var ec interface{ ExitCode() int }
	if err == nil || !strings.Contains(err.Error(), "NO-CARRIER") || !errors.As(err, &ec) {
		t.Errorf("no carrier: %v", err)
	}
}
