package xdpredirect

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/testenv/nstest"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// The package's namespaces; TestMain fails it when a test leaves one
// behind.
const netns = nstest.Prefix("vnbxr")

func TestMain(m *testing.M) { netns.Main(m) }

const (
	testTap   = "vnbxr0"
	guestMAC  = "52:54:00:12:34:56"
	guestIP   = "10.79.0.2"
	hostIP    = "10.79.0.1"
	xdpFrames = 0x0800 // IPv4 ethertype of the generator's frames
)

// tapReader reads a tap as a guest's NIC would, counting the
// generator's frames (IPv4 to guestMAC) and anything else, keeping the
// first frame; delay slows it down per frame.
type tapReader struct {
	f      *os.File
	delay  time.Duration
	frames atomic.Uint64
	other  atomic.Uint64
	mu     sync.Mutex
	first  []byte
	done   chan struct{}
}

func (r *tapReader) loop() {
	defer close(r.done)
	mac := []byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	buf := make([]byte, 65536)
	for {
		n, err := r.f.Read(buf)
		if err != nil {
			return
		}
		fr := buf[hostnet.VnetHdrLen:n]
		if len(fr) < 14 || !bytes.Equal(fr[:6], mac) || binary.BigEndian.Uint16(fr[12:]) != xdpFrames {
			r.other.Add(1)
			continue
		}
		if r.frames.Add(1) == 1 {
			r.mu.Lock()
			r.first = append([]byte(nil), fr...)
			r.mu.Unlock()
		}
		if r.delay > 0 {
			time.Sleep(r.delay)
		}
	}
}

// tapNetns makes a namespace (IPv6 off) with a tap of txqlen attached to
// a reader.
func tapNetns(t *testing.T, txqlen int, delay time.Duration) (*hostnet.Netns, *tapReader) {
	t.Helper()
	testenv.NeedRoot(t, "network namespaces, a tap, a veth pair, XDP and AF_XDP")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	ns := netns.NoIPv6(t)
	if err := ns.CreateTap(hostnet.Tap{Name: testTap, Addr: hostIP + "/24", TxQLen: txqlen}); err != nil {
		t.Fatal(err)
	}
	files, err := ns.AttachTap(testTap, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := &tapReader{f: files[0], delay: delay, done: make(chan struct{})}
	go r.loop()
	t.Cleanup(func() { r.f.Close(); <-r.done })
	return ns, r
}

// runWindow runs one window of cfg against the namespace's tap, as the
// runner does: Prepare, Start, Wait.
func runWindow(t *testing.T, ns *hostnet.Netns, cfg Config) (*workload.Result, outcome) {
	t.Helper()
	dir := t.TempDir()
	w := &workload.Window{Netns: ns.Name, InNetns: ns.Do, Dev: testTap, Src: hostIP, Dst: guestIP, DstMAC: guestMAC,
		Artifacts: dir, RelDir: "artifacts/c/host/0"}
	gen := cfg.Generator()
	if err := gen.(workload.Preparer).Prepare(t.Context(), w); err != nil {
		if why, ok := workload.IsUnsupported(err); ok {
			testenv.Skipf(t, "this kernel cannot redirect into a tap: %s", why)
		}
		t.Fatal(err)
	}
	if tids, _ := gen.Threads(); len(tids) != 1 {
		t.Errorf("threads after Prepare: %v, want the AF_XDP sender's", tids)
	}
	if err := gen.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := gen.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	raw, err := os.ReadFile(filepath.Join(dir, "xdp_redirect.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	// The veth pair went with the window.
	tx, rx := vethNames(testTap)
	for _, name := range []string{tx, rx} {
		err := ns.Do(func() error { _, err := netlink.LinkByName(name); return err })
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			t.Errorf("veth %s after the window: %v, want it deleted", name, err)
		}
	}
	return res, o
}

// A reader and a ring that holds the whole run: every frame the program
// redirected reaches the reader through tun_xdp_xmit, and the tap's
// tx_packets (Transmitted) counts exactly the frames the reader got. The
// ring holds the run when the generator sent at most ring frames (100 ms
// here: about 30k frames; under -race on 2 loaded cores a 300 ms run sent
// 91k, and a reader that fell behind lost some, as it should). A faster
// machine that sends more is checked for the accounting only.
func TestRedirectAllDelivered(t *testing.T) {
	const ring = 1 << 16
	ns, r := tapNetns(t, ring, 0)
	res, o := runWindow(t, ns, Config{PktSize: 64, Duration: 100 * time.Millisecond, Batch: 64})
	if o.Redirected == 0 || o.Redirected != o.Seen {
		t.Errorf("the program saw %d frames and redirected %d; want all of them, more than 0", o.Seen, o.Redirected)
	}
	if o.Seen > o.Sender.Packets {
		t.Errorf("the program saw %d frames, more than the %d sent", o.Seen, o.Sender.Packets)
	}
	if got := r.frames.Load(); got != o.TapTxPackets || o.Redirected != o.TapTxPackets+o.Lost {
		t.Errorf("the reader got %d frames, the tap's tx_packets grew by %d, redirected %d, lost %d: want reader = tx_packets = redirected - lost",
			got, o.TapTxPackets, o.Redirected, o.Lost)
	}
	if res.Metrics[TxPPS.Key] <= 0 {
		t.Errorf("metrics %v: want Transmitted > 0", res.Metrics)
	}
	if o.Sender.Packets <= ring && (o.Lost != 0 || res.Metrics[LostPPS.Key] != 0) {
		t.Errorf("%d frames sent into a %d-frame ring: lost %d (metrics %v), want 0", o.Sender.Packets, ring, o.Lost, res.Metrics)
	} else if o.Sender.Packets > ring {
		t.Logf("%d frames sent, more than the %d-frame ring holds: Lost not checked", o.Sender.Packets, ring)
	}
	r.mu.Lock()
	first := r.first
	r.mu.Unlock()
	if len(first) != 64 || !bytes.Equal(first[30:34], []byte{10, 79, 0, 2}) {
		t.Errorf("first frame (%d bytes) % x: want 64 bytes to %s", len(first), first, guestIP)
	}
	t.Logf("sent %d, redirected %d, transmitted %d (%.0f pps) in %.2f s", o.Sender.Packets, o.Redirected, o.TapTxPackets, res.Metrics[TxPPS.Key], o.RunS)
}

// A slow reader behind a short ring: tun_xdp_xmit finds the ring full,
// Lost is what the reader did not get, and the tap's tx_dropped counts
// at most one drop per lost frame (one per refused batch).
func TestRedirectRingFull(t *testing.T) {
	ns, r := tapNetns(t, 64, time.Millisecond)
	res, o := runWindow(t, ns, Config{PktSize: 64, Duration: 300 * time.Millisecond, Batch: 64})
	if o.Lost == 0 || o.TapTxDropped == 0 {
		t.Fatalf("lost %d, tap tx_dropped %d: want both > 0 behind a 64-frame ring and a 1 ms reader", o.Lost, o.TapTxDropped)
	}
	if got := r.frames.Load(); got != o.TapTxPackets || o.Redirected != o.TapTxPackets+o.Lost {
		t.Errorf("reader %d, tap tx_packets %d, redirected %d, lost %d: want reader = tx_packets and redirected = tx_packets + lost",
			got, o.TapTxPackets, o.Redirected, o.Lost)
	}
	if o.TapTxDropped > o.Lost {
		t.Errorf("tap tx_dropped %d above the %d frames lost", o.TapTxDropped, o.Lost)
	}
	if want := float64(o.Lost) / o.RunS; res.Metrics[LostPPS.Key] != want {
		t.Errorf("xdp_lost_pps %v, want lost / run time = %v", res.Metrics[LostPPS.Key], want)
	}
	t.Logf("redirected %d, transmitted %d, lost %d, tap tx_dropped %d", o.Redirected, o.TapTxPackets, o.Lost, o.TapTxDropped)
}

// A kernel whose devmap or tun takes no XDP frame for the tap shows as
// frames redirected that neither the reader got nor the ring dropped:
// the cell is n/a. A full ring (drops counted) or any frame through is a
// result.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		o    outcome
		want bool
	}{
		{outcome{Redirected: 1000}, true},
		{outcome{Redirected: 1000, TapTxDropped: 1, Lost: 1000}, false},
		{outcome{Redirected: 1000, TapTxPackets: 3, Lost: 997}, false},
		{outcome{}, false},
	} {
		if got := refused(tc.o) != ""; got != tc.want {
			t.Errorf("refused(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}

// A counter that read less after the run than before it fails the sample
// with its name, instead of a rate of 2^64 less a little.
func TestCounterWentBack(t *testing.T) {
	g := &generator{ctr0: counts{seen: 100, redirected: 90}, tap0: hostnet.LinkStats{TxPackets: 50, TxDropped: 5}}
	if err := g.wentBack(counts{seen: 200, redirected: 190}, hostnet.LinkStats{TxPackets: 150, TxDropped: 5}); err != nil {
		t.Errorf("counters that grew or held: %v", err)
	}
	for name, tc := range map[string]struct {
		c   counts
		tap hostnet.LinkStats
	}{
		"the XDP program's seen count":       {counts{seen: 10, redirected: 190}, hostnet.LinkStats{TxPackets: 150, TxDropped: 5}},
		"the XDP program's redirected count": {counts{seen: 200, redirected: 1}, hostnet.LinkStats{TxPackets: 150, TxDropped: 5}},
		"the tap's tx_packets":               {counts{seen: 200, redirected: 190}, hostnet.LinkStats{TxPackets: 3, TxDropped: 5}},
		"the tap's tx_dropped":               {counts{seen: 200, redirected: 190}, hostnet.LinkStats{TxPackets: 150, TxDropped: 0}},
	} {
		if err := g.wentBack(tc.c, tc.tap); err == nil || !strings.Contains(err.Error(), name+" went back") {
			t.Errorf("%s went back: error %v", name, err)
		}
	}
}
