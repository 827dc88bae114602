package xsk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// openOrSkip opens a generator, skipping (failing in CI) on a kernel
// without AF_XDP.
func openOrSkip(t *testing.T, c Config) *Generator {
	t.Helper()
	g, err := Open(c)
	if errors.Is(err, ErrNoAFXDP) {
		testenv.Skipf(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return g
}

func TestCopySendsToTap(t *testing.T) {
	needHost(t)
	ns := testTap(t, 1)
	d := startDrain(t, ns, 1, 4)
	const n = 20000
	frame := Frame{Size: 64, DstMAC: net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}, SrcPort: 1000, SrcPorts: 4}
	g := openOrSkip(t, Config{Dev: testDev, Mode: Copy, Frame: frame, Count: n, InNetns: ns.Do})
	before, err := ns.LinkStats(testDev)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := d.waitTotal(n)
	after, err := ns.LinkStats(testDev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames in %v: %.0f pps, %.0f ns CPU/packet (user %v, system %v), %d kicks (%d EAGAIN, %d EBUSY), budget %d",
		res.Packets, res.Duration, res.PPS(), res.CPUPerPacket(), res.Queues[0].UserCPU, res.Queues[0].SystemCPU,
		res.Queues[0].Kicks, res.Queues[0].Again, res.Queues[0].Busy, res.TxBudget)
	q := res.Queues[0]
	if res.Packets != n || res.Submitted != n || res.Outstanding != 0 || q.Packets != n || q.InvalidDescs != 0 {
		t.Errorf("completions %d (queue %d), submitted %d, outstanding %d, invalid %d; want %d, %d, 0, 0",
			res.Packets, q.Packets, res.Submitted, res.Outstanding, q.InvalidDescs, n, n)
	}
	dropped := after.TxDropped - before.TxDropped
	if got != n || after.TxPackets-before.TxPackets != got+d.other.Load() {
		t.Errorf("reader got %d (and %d other frames), tap tx_packets +%d, tx_dropped +%d; want %d", got, d.other.Load(),
			after.TxPackets-before.TxPackets, dropped, n)
	}
	if dropped != 0 {
		t.Errorf("the tap dropped %d frames with room for %d", dropped, testTxQLen)
	}
	if res.Duration <= 0 || res.PPS() <= 0 || res.CPU() <= 0 {
		t.Errorf("duration %v, pps %.0f, cpu %v", res.Duration, res.PPS(), res.CPU())
	}
	// What arrived is what was built: the tap's MAC as source, the
	// source ports cycling.
	mac, err := ns.LinkMAC(testDev)
	if err != nil {
		t.Fatal(err)
	}
	want, err := frame.withMAC(mustMAC(t, mac)).Build()
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	kept := d.kept[0]
	d.mu.Unlock()
	if len(kept) != 4 {
		t.Fatalf("kept %d frames", len(kept))
	}
	for i, b := range kept {
		if err := verifyFrame(b); err != nil {
			t.Errorf("frame %d: %v", i, err)
		}
		p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
		if p.ErrorLayer() != nil || p.Layer(layers.LayerTypeUDP) == nil {
			t.Errorf("frame %d does not parse as Ethernet/IPv4/UDP: %v", i, p)
		}
		if !bytes.Equal(b, want[i]) {
			t.Errorf("frame %d:\n got % x\nwant % x", i, b, want[i])
		}
	}
}

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestZeroCopyUnsupported(t *testing.T) {
	needHost(t)
	ns := testTap(t, 1)
	startDrain(t, ns, 1, 0)
	g, err := Open(Config{Dev: testDev, Mode: ZeroCopy, InNetns: ns.Do})
	if errors.Is(err, ErrNoAFXDP) {
		testenv.Skipf(t, "%v", err)
	}
	if err == nil {
		g.Close()
		testenv.NotApplicable(t, "this kernel's tun binds AF_XDP zero-copy (a patched kernel): nothing to refuse")
	}
	why, ok := workload.IsUnsupported(err)
	if !ok {
		t.Fatalf("zerocopy bind: %v; want a *workload.UnsupportedError (EOPNOTSUPP)", err)
	}
	if want := "unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)"; why != want {
		t.Errorf("reason %q, want %q", why, want)
	}
	if !strings.Contains(err.Error(), "bind "+testDev+" queue 0 zerocopy") {
		t.Errorf("error %q does not say which bind", err)
	}
	// Nothing half-done: copy mode binds the same queue afterwards.
	openOrSkip(t, Config{Dev: testDev, InNetns: ns.Do})
}

func TestBadQueuesAndDevices(t *testing.T) {
	needHost(t)
	single := testTap(t, 1)
	multi := testTap(t, 4)
	// Without a reader first.
	_, err := Open(Config{Dev: testDev, InNetns: single.Do})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no carrier") {
		t.Errorf("tap without reader: %v", err)
	}
	startDrain(t, single, 1, 0)
	startDrain(t, multi, 2, 0)
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"single-queue", Config{Dev: testDev, Queues: []int{1}, InNetns: single.Do}, "queue 1: tap vnbx0 is single-queue (queue 0 only)"},
		{"multi-queue", Config{Dev: testDev, Queues: []int{0, 2}, InNetns: multi.Do}, "queue 2: tap vnbx0 has 2 queues (0-1, one per attached reader)"},
		{"missing", Config{Dev: "vnbnosuch", InNetns: single.Do}, "device vnbnosuch does not exist"},
	} {
		_, err := Open(c.cfg)
		if errors.Is(err, ErrNoAFXDP) {
			testenv.Skipf(t, "%v", err)
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrInvalid with %q", c.name, err, c.want)
		}
	}
	// Two generators on one queue: the second bind is refused.
	openOrSkip(t, Config{Dev: testDev, InNetns: single.Do})
	_, err = Open(Config{Dev: testDev, InNetns: single.Do})
	if !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "another AF_XDP socket") {
		t.Errorf("second socket on queue 0: %v", err)
	}
}

func TestMultiQueue(t *testing.T) {
	needHost(t)
	ns := testTap(t, 4)
	d := startDrain(t, ns, 2, 0)
	const n = 5000
	g := openOrSkip(t, Config{Dev: testDev, Queues: []int{0, 1}, Count: n, InNetns: ns.Do})
	res, err := g.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d.waitTotal(2 * n)
	if res.Packets != 2*n || len(res.Queues) != 2 {
		t.Fatalf("completions %d over %d queues, want %d over 2", res.Packets, len(res.Queues), 2*n)
	}
	for i, q := range res.Queues {
		// Queue i of a tap is its i-th reader.
		if q.Queue != i || q.Packets != n || d.counts[i].Load() != n {
			t.Errorf("queue %d (%d): %d completions, reader %d got %d; want %d", i, q.Queue, q.Packets, i, d.counts[i].Load(), n)
		}
		// The thread CPU clock, not getrusage's tick-sampled split: a
		// queue done within a tick shows 0 there (a -race run beside a
		// lab VM did).
		if q.CPUTime <= 0 || q.CPUTime > res.Duration+time.Second {
			t.Errorf("queue %d: CPU time %v over a %v run", i, q.CPUTime, res.Duration)
		}
	}
}

func TestDurationAndCancel(t *testing.T) {
	needHost(t)
	ns := testTap(t, 1)
	startDrain(t, ns, 1, 0)
	g := openOrSkip(t, Config{Dev: testDev, Duration: 200 * time.Millisecond, InNetns: ns.Do})
	res, err := g.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Packets == 0 || res.Duration < 200*time.Millisecond || res.Duration > 2*time.Second || res.Outstanding != 0 {
		t.Errorf("200ms run: %d packets in %v, outstanding %d", res.Packets, res.Duration, res.Outstanding)
	}
	if _, err := g.Run(t.Context()); err == nil {
		t.Error("second Run: no error")
	}
	g.Close()

	// No Count or Duration: ctx ends the run, and that is no error.
	g = openOrSkip(t, Config{Dev: testDev, InNetns: ns.Do})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res, err = g.Run(ctx)
	if err != nil || res.Packets == 0 {
		t.Errorf("until ctx: %d packets, %v", res.Packets, err)
	}
	g.Close()

	// A count that ctx cuts short: the partial result and ctx's error.
	g = openOrSkip(t, Config{Dev: testDev, Count: 1 << 40, InNetns: ns.Do})
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res, err = g.Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || res.Packets == 0 || res.Packets != res.Submitted {
		t.Errorf("count cut by ctx: %d packets of %d submitted, %v", res.Packets, res.Submitted, err)
	}
}

// Start gives the queue threads' ids before anything is sent (perf and
// pinning attach to them), Go lets them send, and Stop before Go ends
// the run with nothing sent.
func TestStartGoThreads(t *testing.T) {
	needHost(t)
	ns := testTap(t, 4)
	d := startDrain(t, ns, 2, 0)
	const n = 3000
	g := openOrSkip(t, Config{Dev: testDev, Queues: []int{0, 1}, Count: n, InNetns: ns.Do})
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	tids := g.Threads()
	if len(tids) != 2 || tids[0] == tids[1] {
		t.Fatalf("thread ids %v, want two distinct", tids)
	}
	for _, tid := range tids {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); err != nil {
			t.Errorf("thread %d is not one of this process's: %v", tid, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if got := d.total(); got != 0 {
		t.Errorf("%d frames arrived before Go", got)
	}
	g.Go()
	res, err := g.Wait()
	if err != nil || res.Packets != 2*n || d.waitTotal(2*n) != 2*n {
		t.Errorf("after Go: %d completions, reader got %d, %v; want %d", res.Packets, d.total(), err, 2*n)
	}
	g.Close()

	g = openOrSkip(t, Config{Dev: testDev, Count: n, InNetns: ns.Do})
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	g.Stop()
	res, err = g.Wait()
	if err != nil || res.Packets != 0 || res.Submitted != 0 {
		t.Errorf("stopped before Go: %d completions, %d submitted, %v; want none and no error", res.Packets, res.Submitted, err)
	}
}
