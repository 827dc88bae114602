package afxdp_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/testenv/nstest"
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/internal/workload/afxdp"
	_ "github.com/vnetbench/vnetbench/internal/workload/all"
	xdp "github.com/vnetbench/vnetbench/internal/xsk"
	"github.com/vnetbench/vnetbench/internal/xsk/series"
	"github.com/vnetbench/vnetbench/scenarios"
)

func TestMain(m *testing.M) {
	netns.Main(m)
}

const netns = nstest.Prefix("vnbwafx")

const scenario = `
name: x
backend: tap
generator:
  afxdp: {pkt_size: [64, 1024], mode: [copy, zerocopy], duration: 2s}
repetitions: 1
`

// The keys decode with their defaults and axes, the cells are named by
// size and mode, and the scenario reference documents the section.
func TestValidate(t *testing.T) {
	s, err := scenarios.Load("x.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range s.Expand() {
		names = append(names, c.Name)
		cfg := c.Generator.Config.(*afxdp.Config)
		if cfg.Threads != 1 || cfg.Batch != 64 || cfg.Duration != 2*time.Second || c.Queues != 1 {
			t.Errorf("%s: %+v, queues %d", c.Name, cfg, c.Queues)
		}
	}
	want := []string{"tap/afxdp-t1/pkt64/copy", "tap/afxdp-t1/pkt64/zerocopy", "tap/afxdp-t1/pkt1024/copy", "tap/afxdp-t1/pkt1024/zerocopy"}
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("cells %q, want %q", names, want)
	}
	ref := scenarios.Reference()
	for _, row := range []string{"| `generator.afxdp.mode` | `copy`, `zerocopy` | `copy` |  | yes |", "| `generator.afxdp.pkt_size` | integer | `64` | bytes | yes |"} {
		if !strings.Contains(ref, row) {
			t.Errorf("reference lacks %s", row)
		}
	}
}

// Bad input is one line at its key: a frame below the headers, a queue
// the tap does not have, no bound on the run, more threads than CPUs.
func TestValidateErrors(t *testing.T) {
	for src, msg := range map[string]string{
		"generator: {afxdp: {pkt_size: 40}}\n":              "t.yaml:1:31: generator.afxdp.pkt_size: 40 bytes is below the Ethernet (14) + IPv4 (20) + UDP (8) headers; use 42 or more",
		"generator: {afxdp: {pkt_size: [64, 41]}}\n":        "t.yaml:1:36: generator.afxdp.pkt_size: 41 bytes is below the Ethernet (14) + IPv4 (20) + UDP (8) headers; use 42 or more",
		"generator: {afxdp: {pkt_size: 5000}}\n":            "t.yaml:1:31: generator.afxdp.pkt_size: 5000 bytes is above one AF_XDP UMEM chunk; use 4096 or less",
		"queues: 1\ngenerator: {afxdp: {first_queue: 1}}\n": "t.yaml:2:34: generator.afxdp.first_queue: threads 1 from first_queue 1 send on tap queue 1, but queues is 1 (the tap has queue 0 only; one AF_XDP socket per queue); set queues: 2 or queues: auto",
		"queues: 2\ngenerator: {afxdp: {threads: 3}}\n":     "t.yaml:2:30: generator.afxdp.threads: threads 3 from first_queue 0 send on tap queue 2, but queues is 2 (the tap has queues 0-1; one AF_XDP socket per queue); set queues: 3 or queues: auto",
		"generator: {afxdp: {duration: 0s}}\n":              "t.yaml:1:31: generator.afxdp: duration and count are both 0; set one (the generator sends until it reaches it)",
		"generator: {afxdp: {mode: zc}}\n":                  `t.yaml:1:27: unknown generator.afxdp.mode "zc" (allowed: copy, zerocopy)`,
	} {
		_, err := scenarios.Load("t.yaml", []byte(src))
		if err == nil || err.Error() != msg || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\n got %v\nwant %s", src, err, msg)
		}
	}
	// queues: auto gives the tap first_queue + threads queues; the
	// default single queue is too few.
	if _, err := scenarios.Load("t.yaml", []byte("generator: {afxdp: {threads: 2}}\n")); err == nil || !strings.Contains(err.Error(), "set queues: 2 or queues: auto") {
		t.Errorf("2 threads on the default single queue: %v", err)
	}
	s, err := scenarios.Load("t.yaml", []byte("queues: auto\ngenerator: {afxdp: {threads: 2, first_queue: 1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Expand()[0]; c.Queues != 3 {
		t.Errorf("queues auto = %d, want 3", c.Queues)
	}
}

// The generator as the runner drives it, on a real tap read by a
// reader: Start binds and starts the threads (their ids for perf),
// nothing is sent before Go, Wait returns Transmitted over its own run
// time and Lost from the tap over the same run; a zero-copy bind the
// kernel refuses is "unsupported" with the kernel's reason.
func TestGeneratorOnTap(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, taps, AF_XDP sockets")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	ns := netns.New(t)
	const dev = "vnbwx0"
	if err := ns.CreateTap(hostnet.Tap{Name: dev, TxQLen: 64}); err != nil {
		t.Fatal(err)
	}
	files, err := ns.AttachTap(dev, 1) // a reader that never reads: the tap drops
	if err != nil {
		t.Fatal(err)
	}
	defer files[0].Close()
	dir := t.TempDir()
	w := &workload.Window{Dev: dev, DstMAC: "52:54:00:12:34:56", Src: "10.0.0.1", Dst: "10.0.0.2", Artifacts: dir, RelDir: "artifacts/x",
		InNetns: ns.Do, Note: func(string) {}}

	cfg := &afxdp.Config{PktSize: 64, Mode: series.ModeCopy, Threads: 1, Duration: 300 * time.Millisecond, Batch: 64}
	gen := cfg.Generator()
	if err := gen.(workload.Preparer).Prepare(t.Context(), w); errors.Is(err, xdp.ErrNoAFXDP) {
		testenv.Skipf(t, "%v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	tids, whole := gen.Threads()
	if len(tids) != 1 || whole {
		t.Fatalf("threads %v (whole %v), want one thread id", tids, whole)
	}
	time.Sleep(30 * time.Millisecond)
	st, _ := ns.LinkStats(dev)
	if st.TxPackets+st.TxDropped > 20 { // a few IPv6/ARP frames of the kernel's own at most
		t.Errorf("%d frames before Go", st.TxPackets+st.TxDropped)
	}
	if err := gen.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := gen.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tx, lost := res.Metrics["tx_pps"], res.Metrics["lost_pps"]
	t.Logf("tx %.0f pps, lost %.0f pps over %v, busy %.2f", tx, lost, res.Elapsed, res.BusyFrac)
	if tx <= 0 || lost <= 0 || lost > tx || res.Elapsed < 300*time.Millisecond || len(res.Threads) != 1 || res.InHarnessCPU <= 0 {
		t.Errorf("result %+v", res)
	}
	if len(res.Artifacts) != 1 {
		t.Errorf("artifacts %v", res.Artifacts)
	} else if _, err := os.Stat(filepath.Join(dir, "afxdp.json")); err != nil {
		t.Error(err)
	}

	// Zero-copy: stock tun refuses it.
	cfg.Mode = series.ModeZeroCopy
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

// doctor's line: the capability of this kernel in both modes.
func TestFeature(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, taps, AF_XDP sockets")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	var f *workload.Feature
	for _, x := range workload.AllFeatures() {
		if x.Name == series.Feature {
			f = &x
		}
	}
	if f == nil {
		t.Fatal("no AF_XDP feature registered")
	}
	p := f.Probe()
	t.Logf("AF_XDP: ok=%v %s", p.OK, p.Detail)
	if !p.OK && strings.Contains(p.Detail, "no AF_XDP sockets") {
		testenv.Skipf(t, "%s", p.Detail)
	}
	if !p.OK || !strings.HasPrefix(p.Detail, "copy ok, zerocopy ") {
		t.Errorf("probe %+v", p)
	}
}
