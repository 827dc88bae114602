package latprobe

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/latency"
)

// echo reflects datagrams on loopback until the test ends, except those
// whose sequence number drop says to drop.
func echo(t testing.TB, drop func(seq uint32) bool) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if n >= headerLen && drop(binary.BigEndian.Uint32(buf[4:8])) {
				continue
			}
			c.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// run probes dst through an idle and a load phase of n probes each
// (waiting for the probes, not for a time) and returns the records.
func run(t *testing.T, dst netip.AddrPort, sizes []int, n int) []latency.Record {
	t.Helper()
	p, err := Open(Config{Dst: dst, Src: netip.MustParseAddr("127.0.0.1"), Interval: time.Millisecond, Sizes: sizes, Timeout: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := func() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.recs) }
	p.Start()
	for sent() < n {
		time.Sleep(time.Millisecond)
	}
	p.SetPhase(latency.PhaseLoad)
	for sent() < 2*n {
		time.Sleep(time.Millisecond)
	}
	recs, warns := p.Stop()
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	return recs
}

// Every probe on loopback is answered, and its kernel stamps come in
// order: send call <= SCHED <= SOFTWARE <= reply received (lo has no
// qdisc, but the SCHED stamp is taken on entry to the device layer all
// the same).
func TestProbeLoopbackStamps(t *testing.T) {
	recs := run(t, echo(t, func(uint32) bool { return false }), []int{64, 1400}, 30)
	phases := map[string]int{}
	for i, r := range recs {
		phases[r.Phase]++
		if r.Seq != uint32(i) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		if want := []int{64, 1400}[i%2]; r.Size != want {
			t.Errorf("probe %d: size %d, want %d (sizes in turn)", i, r.Size, want)
		}
		if r.Lost {
			t.Errorf("probe %d lost on loopback: %+v", i, r)
			continue
		}
		if r.Sched == 0 || r.Soft == 0 {
			t.Errorf("probe %d: SCHED %d SOFTWARE %d: a transmit stamp is missing", i, r.Sched, r.Soft)
			continue
		}
		if !(r.Sent <= r.Sched && r.Sched <= r.Soft && r.Soft <= r.Recv) {
			t.Errorf("probe %d: stamps out of order: sent %d sched %d soft %d recv %d", i, r.Sent, r.Sched, r.Soft, r.Recv)
		}
	}
	if phases[latency.PhaseIdle] < 30 || phases[latency.PhaseLoad] == 0 {
		t.Errorf("phases %v: want >= 30 idle probes, then load probes", phases)
	}
	s := latency.Summarize(recs)
	if s.Metrics["probe_loss_frac"] != 0 || s.Metrics["rtt_p50_s"] <= 0 || s.Metrics["rtt_idle_p50_s"] <= 0 {
		t.Errorf("summary %v", s.Metrics)
	}
}

// A probe the reflector does not answer is lost; the others are not.
func TestProbeLoss(t *testing.T) {
	recs := run(t, echo(t, func(seq uint32) bool { return seq%5 == 2 }), []int{64}, 20)
	for _, r := range recs {
		if want := r.Seq%5 == 2; r.Lost != want {
			t.Errorf("probe %d: lost %v, want %v", r.Seq, r.Lost, want)
		}
	}
}

func TestOpenRefusesSmallSize(t *testing.T) {
	_, err := Open(Config{Dst: netip.MustParseAddrPort("127.0.0.1:9"), Interval: time.Millisecond, Sizes: []int{8}, Timeout: time.Second}, nil)
	if err == nil {
		t.Error("size 8: no error")
	}
}
