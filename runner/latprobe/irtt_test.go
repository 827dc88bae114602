package latprobe

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/vmimages/agent"
)

// link joins two fresh namespaces, a (10.77.0.1) and b (10.77.0.2),
// deleted when the test ends.
type link func(t *testing.T, a, b *hostnet.Netns)

// newPair makes the two namespaces and joins them with mk.
func newPair(t *testing.T, mk link) (a, b *hostnet.Netns) {
	t.Helper()
	id := strconv.Itoa(os.Getpid())
	var err error
	if a, err = hostnet.CreateNetns("vnblatA" + id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Delete() })
	if b, err = hostnet.CreateNetns("vnblatB" + id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Delete() })
	mk(t, a, b)
	return a, b
}

// vethLink is a veth pair.
func vethLink(t *testing.T, a, b *hostnet.Netns) {
	t.Helper()
	for _, args := range [][]string{
		{"-n", a.Name, "link", "add", "vnbla", "type", "veth", "peer", "name", "vnblb", "netns", b.Name},
		{"-n", a.Name, "addr", "add", "10.77.0.1/24", "dev", "vnbla"},
		{"-n", a.Name, "link", "set", "vnbla", "up"},
		{"-n", b.Name, "addr", "add", "10.77.0.2/24", "dev", "vnblb"},
		{"-n", b.Name, "link", "set", "vnblb", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
}

// tapLink is a tap in each namespace (as the harness makes them:
// vnet_hdr, one queue) and a reader that copies every frame of one to the
// other, as a guest's NIC would take them: each request passes a's root
// qdisc, tun's ring and a read() of its fd, as the probe's does in a run.
func tapLink(t *testing.T, a, b *hostnet.Netns) {
	t.Helper()
	var fds [2]*os.File
	for i, side := range []struct {
		ns   *hostnet.Netns
		name string
		addr string
	}{{a, "vnbla", "10.77.0.1/24"}, {b, "vnblb", "10.77.0.2/24"}} {
		if err := side.ns.CreateTap(hostnet.Tap{Name: side.name, Addr: side.addr}); err != nil {
			t.Fatal(err)
		}
		f, err := side.ns.AttachTap(side.name, 1)
		if err != nil {
			t.Fatal(err)
		}
		fds[i] = f[0]
	}
	done := make(chan struct{}, 2)
	copyFrames := func(from, to *os.File) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 65536+64)
		for {
			n, err := from.Read(buf)
			if err != nil {
				return // closed at cleanup
			}
			to.Write(buf[:n]) // a full peer drops, as a NIC would
		}
	}
	go copyFrames(fds[0], fds[1])
	go copyFrames(fds[1], fds[0])
	t.Cleanup(func() {
		fds[0].Close()
		fds[1].Close()
		<-done
		<-done
	})
}

// irttMedian runs irtt's client from ns a to a server in ns b: n round
// trips of 64 bytes every 5 ms; it returns their median RTT in seconds.
// It may run on another goroutine than the test's: it returns errors.
func irttMedian(a, b *hostnet.Netns, out string, n int) (float64, error) {
	srv := exec.Command("ip", "netns", "exec", b.Name, "irtt", "server", "-b", "10.77.0.2:2112", "-i", "0")
	if err := srv.Start(); err != nil {
		return 0, err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	dur := time.Duration(n) * 5 * time.Millisecond
	var err error
	for try := 0; try < 20; try++ { // until the server listens
		cmd := exec.Command("ip", "netns", "exec", a.Name, "irtt", "client", "-i", "5ms", "-d", dur.String(), "-l", "64", "-Q", "-o", out, "10.77.0.2:2112")
		var msg []byte
		if msg, err = cmd.CombinedOutput(); err == nil {
			break
		}
		err = fmt.Errorf("%w: %s", err, msg)
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return 0, fmt.Errorf("irtt client: %w", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return 0, err
	}
	var res struct {
		Stats struct {
			RTT struct {
				Median float64 `json:"median"` // ns
			} `json:"rtt"`
			Received int `json:"packets_received"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return 0, fmt.Errorf("irtt json: %w", err)
	}
	// A median needs some replies, not all: under load (a race run of
	// four packages at once, load 5.8 on 2 cores) irtt got 146 of 400
	// back in time, and its median of those still agreed with the probe.
	if res.Stats.Received < n/10 {
		return 0, fmt.Errorf("irtt: %d of %d round trips", res.Stats.Received, n)
	}
	return res.Stats.RTT.Median / 1e9, nil
}

// The probe and irtt (Debian's irtt 0.9.0) agree on an idle link: their
// medians over 400 round trips between two namespaces, joined by a veth
// pair and by two taps with a frame copier between them (the tap path of
// a run: qdisc, tun's ring, a reader),
// each against its own reflector (the guest agent's, irtt's server),
// differ by at most what their methods allow: the probe's round trip
// ends at the kernel's receive stamp, irtt's when its client reads the
// reply, and each reflector wakes its own thread. Here (2 shared cores)
// the medians were 98-133 us against 97-151 us on the veth and
// 168-187 us against 208-294 us on the taps.
func TestProbeAgreesWithIrtt(t *testing.T) {
	testenv.NeedRoot(t, "network namespaces, a veth pair and taps")
	testenv.NeedCommand(t, "irtt", "irtt")
	testenv.NeedCommand(t, "ip", "iproute2")
	for _, tc := range []struct {
		name string
		mk   link
	}{{"veth", vethLink}, {"tap", tapLink}} {
		t.Run(tc.name, func(t *testing.T) { probeAgainstIrtt(t, tc.name, tc.mk) })
	}
}

func probeAgainstIrtt(t *testing.T, name string, mk link) {
	a, b := newPair(t, mk)
	refl := agent.NewReflector()
	if err := b.Do(func() error { return refl.Start(7007) }); err != nil {
		t.Fatal(err)
	}
	defer refl.Stop()
	const n = 400
	p, err := Open(Config{Dst: netip.MustParseAddrPort("10.77.0.2:7007"), Src: netip.MustParseAddr("10.77.0.1"),
		Interval: 5 * time.Millisecond, Sizes: []int{64}, Timeout: time.Second}, a.Do)
	if err != nil {
		t.Fatal(err)
	}
	// Both at once, so both see the same machine: on 2 shared cores, a
	// probe run after irtt's saw medians 6x irtt's when a neighbour's
	// load came and went between them.
	type res struct {
		median float64
		err    error
	}
	irtt := make(chan res, 1)
	out := filepath.Join(t.TempDir(), "irtt.json")
	p.SetPhase(latency.PhaseWarmup) // ARP and the first wakeups, left out
	p.Start()
	time.Sleep(300 * time.Millisecond)
	go func() { m, err := irttMedian(a, b, out, n); irtt <- res{m, err} }()
	p.SetPhase(latency.PhaseLoad)
	var r res
	for done := false; !done; {
		select {
		case r = <-irtt:
			done = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	recs, _ := p.Stop()
	ours := latency.Summarize(recs).Metrics["rtt_p50_s"]
	if r.err != nil {
		t.Fatal(r.err)
	}
	theirs := r.median
	t.Logf("median RTT on an idle %s: probe %.1f us, irtt %.1f us", name, ours*1e6, theirs*1e6)
	// On an idle machine the medians agree within 50% (above). In a CI
	// run beside other builds (load 20-40 on 2 cores) their ratio ranged
	// from 0.43 to 2.3 over 17 pairs, either way: each side's reflector
	// and reader wake at the scheduler's mercy (the probe's is Go code
	// under -race); in a cold CI whose other lanes compiled beside it,
	// 0.29 (probe 181 us, irtt 621 us). So the check is a factor of 5,
	// plus 100 us of scheduling above: it catches a wrong clock or unit
	// (a factor of 1000) or a stamp taken at the wrong end, not load.
	if ours <= 0 || ours > 5*theirs+100e-6 || ours < theirs/5 {
		t.Errorf("probe median %.1f us is not within a factor of 5 of irtt's %.1f us", ours*1e6, theirs*1e6)
	}
}
