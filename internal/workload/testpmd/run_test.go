package testpmd

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/testenv/nstest"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/internal/workload/afxdp"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
	"github.com/vnetbench/vnetbench/scenarios"
)

func TestMain(m *testing.M) {
	workload.Register(afxdp.Workload{})
	workload.Register(Workload{})
	netns.Main(m)
}

const netns = nstest.Prefix("vnbwpmd")

// The argv as the shell would see it: copy mode with force_copy, zero-copy
// without it, several ports on consecutive queues, pinned lcores.
func TestArgvGolden(t *testing.T) {
	var b strings.Builder
	line := func(argv []string) { b.WriteString(proc.Quote(argv) + "\n") }
	line(Args(Config{PktSize: 64, Mode: "copy", Threads: 1}, "vnbt0", "52:54:00:12:34:56", "10.0.0.1", "10.0.0.2", "vnb-1-1", "0-1"))
	line(Args(Config{PktSize: 1024, Mode: "zerocopy", Threads: 2, FirstQueue: 1}, "vnbt0", "52:54:00:12:34:56", "10.0.0.1", "10.0.0.2", "vnb-1-2", "1"))
	golden.Check(t, "argv.golden", b.String())
}

// Bad input: one line at its key.
func TestValidateErrors(t *testing.T) {
	for src, msg := range map[string]string{
		"generator: {testpmd: {duration: 0s}}\n":          "t.yaml:1:33: generator.testpmd.duration must be above 0 (testpmd forwards until stopped)",
		"generator: {testpmd: {pkt_size: 41}}\n":          "t.yaml:1:33: generator.testpmd.pkt_size: 41 bytes is below the Ethernet (14) + IPv4 (20) + UDP (8) headers; use 42 or more",
		"queues: 1\ngenerator: {testpmd: {threads: 2}}\n": "t.yaml:2:32: generator.testpmd.threads: threads 2 from first_queue 0 send on tap queue 1, but queues is 1 (the tap has queue 0 only; one AF_XDP socket per queue); set queues: 2 or queues: auto",
	} {
		_, err := scenarios.Load("t.yaml", []byte(src))
		if err == nil || err.Error() != msg {
			t.Errorf("%q:\n got %v\nwant %s", src, err, msg)
		}
	}
	s, err := scenarios.Load("t.yaml", []byte("pin: {generator: 1}\ngenerator: {testpmd: {threads: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Expand()[0]
	cmds := c.Generator.Config.Commands(workload.PlanEnv{Netns: "vnb-RUNID", Dev: "vnbt0", DstMAC: "52:54:00:12:34:56", Src: "10.0.0.1", Dst: "10.0.0.2"})
	if len(cmds) != 2 || !strings.Contains(cmds[0], "--lcores '(0-1)@(1)'") || !strings.HasPrefix(cmds[0], "ip netns exec vnb-RUNID dpdk-testpmd ") {
		t.Errorf("commands %q: want testpmd's lcores on pin.generator's CPU", cmds)
	}
	if n := c.Generator.Config.Needs(); !slices.Equal(n.Tools, []string{Tool}) || !slices.Contains(n.Features, series.Feature) {
		t.Errorf("needs %+v", n)
	}
}

// Against the recording fake, with testpmd's real interactive output: the
// generator waits for the prompt, starts, stops at the window's end,
// and reads TX-packets over its forwarding time.
func TestGeneratorWithFake(t *testing.T) {
	out, err := os.ReadFile("testdata/testpmd-txonly-interactive.txt")
	if err != nil {
		t.Fatal(err)
	}
	quitTimeout = 50 * time.Millisecond
	t.Cleanup(func() { quitTimeout = 20 * time.Second })
	f := &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) { return string(out), false, nil }}
	dir := t.TempDir()
	w := &workload.Window{Exec: f, Netns: "vnb-test", Dev: "vnbnone0", DstMAC: "52:54:00:12:34:56", Src: "10.0.0.1", Dst: "10.0.0.2",
		Artifacts: dir, RelDir: "artifacts/x"}
	cfg := &Config{PktSize: 64, Mode: "copy", Threads: 1, Duration: 200 * time.Millisecond}
	gen := cfg.Generator()
	if err := gen.(workload.Preparer).Prepare(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if tids, whole := gen.Threads(); len(tids) != 1 || !whole {
		t.Errorf("threads %v %v: want the process", tids, whole)
	}
	if err := gen.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := gen.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Transcript(), "start ip netns exec vnb-test dpdk-testpmd --no-huge -m 512 --no-pci --no-shconf --file-prefix vnb-") {
		t.Errorf("transcript:\n%s", f.Transcript())
	}
	// 132928 frames over the ~200ms between start and stop.
	if tx := res.Metrics["tx_pps"]; tx < 132928/0.4 || tx > 132928/0.2 || res.Elapsed < 200*time.Millisecond {
		t.Errorf("tx_pps %.0f over %v", tx, res.Elapsed)
	}
	if _, ok := res.Metrics["lost_pps"]; ok || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "lost_pps is over the window") }) {
		t.Errorf("no tap here: lost_pps %v, warnings %q", res.Metrics, res.Warnings)
	}
	if !res.CountsDrops || len(res.Artifacts) != 1 {
		t.Errorf("result %+v", res)
	}
}

// The real thing at host level, on a tap read by a reader that never
// reads (the tap drops): testpmd reaches its prompt, forwards for the
// window and Lost is the tap's drops over the same time; zero-copy is
// n/a on a stock kernel with afxdp's reason.
func TestGeneratorOnTap(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, taps, AF_XDP sockets")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	testenv.NeedCommand(t, Tool, "dpdk-dev")
	if p := probePMD(); !p.OK {
		testenv.Skipf(t, "%s", p.Why)
	}
	ns := netns.New(t)
	const dev = "vnbwp0"
	if err := ns.CreateTap(hostnet.Tap{Name: dev}); err != nil {
		t.Fatal(err)
	}
	files, err := ns.AttachTap(dev, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer files[0].Close()
	dir := t.TempDir()
	w := &workload.Window{Exec: proc.Real{}, Netns: ns.Name, Dev: dev, DstMAC: "52:54:00:12:34:56", Src: "10.0.0.1", Dst: "10.0.0.2",
		Artifacts: dir, RelDir: "artifacts/x", InNetns: ns.Do}
	cfg := &Config{PktSize: 128, Mode: "copy", Threads: 1, Duration: time.Second}
	gen := cfg.Generator()
	if err := gen.(workload.Preparer).Prepare(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if err := gen.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := gen.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tx, lost := res.Metrics["tx_pps"], res.Metrics["lost_pps"]
	t.Logf("tx %.0f pps, lost %.0f pps over %v, busy %.2f, warnings %q", tx, lost, res.Elapsed, res.BusyFrac, res.Warnings)
	if tx <= 0 || lost <= 0 || lost > tx*1.05 || res.Elapsed < time.Second {
		t.Errorf("result %+v", res)
	}
	if prefixes, _ := os.ReadDir("/var/run/dpdk"); slices.ContainsFunc(prefixes, func(e os.DirEntry) bool {
		return strings.HasPrefix(e.Name(), fmt.Sprintf("vnb-%d-", os.Getpid()))
	}) {
		t.Error("testpmd's runtime directory left in /var/run/dpdk")
	}

	cfg.Mode = "zerocopy"
	gen = cfg.Generator()
	err = gen.Start(t.Context(), w)
	why, na := workload.IsUnsupported(err)
	if !na {
		if err == nil {
			gen.Wait(t.Context())
			testenv.NotApplicable(t, "this kernel's tun binds AF_XDP zero-copy (a patched kernel): nothing to refuse")
		}
		t.Fatal(err)
	}
	if want := "unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)"; why != want {
		t.Errorf("reason %q, want %q", why, want)
	}
}
