package dropmon

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// TestMonitorCountsNoSocket attaches to the running kernel, sends UDP
// datagrams to a closed loopback port (each one dropped by the UDP
// receive path as NO_SOCKET) and finds them, by reason and function, in
// the difference of two snapshots: counted in the kernel, named from
// its own tables.
func TestMonitorCountsNoSocket(t *testing.T) {
	testenv.NeedRoot(t, "loading an eBPF program")
	mon, err := Attach()
	if err != nil {
		testenv.SkipUnavailable(t, err, "attach the drop counter")
	}
	defer mon.Close()
	names, err := LoadNames()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe %s", mon.Probe)
	dst := unreachablePort(t)
	before, err := mon.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Unconnected: the port unreachable errors do not stop the sends.
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for range n {
		if _, err := c.WriteToUDP([]byte("x"), dst); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	after, err := mon.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	got := Delta(names.Counts(before), names.Counts(after))
	var noSocket uint64
	for k, v := range got {
		reason, fn := SplitRowKey(k)
		if reason == "NO_SOCKET" && strings.Contains(fn, "udp") {
			noSocket += v
		}
	}
	if noSocket < n {
		t.Fatalf("NO_SOCKET drops in a udp function: %d, want at least %d (all: %v)", noSocket, n, got)
	}
}

// unreachablePort is a loopback UDP address at which no socket takes
// datagrams (the kernel drops them as NO_SOCKET), held until the test
// ends: its port is bound by a socket connected to another peer, which
// takes only that peer's datagrams. A port bound and closed again would
// be free for another process to bind before the sends.
func unreachablePort(tb testing.TB) *net.UDPAddr {
	tb.Helper()
	lo := net.IPv4(127, 0, 0, 1)
	h, err := net.DialUDP("udp4", &net.UDPAddr{IP: lo}, &net.UDPAddr{IP: lo, Port: 9})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	return h.LocalAddr().(*net.UDPAddr)
}

// unreachablePort's port cannot be bound while the test runs, and a
// datagram sent to it reaches no socket.
func TestUnreachablePortHeld(t *testing.T) {
	dst := unreachablePort(t)
	if l, err := net.ListenUDP("udp4", &net.UDPAddr{Port: dst.Port}); err == nil {
		l.Close()
		t.Fatalf("port %d: bound by another socket while the test holds it", dst.Port)
	}
	c, err := net.DialUDP("udp4", nil, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// The kernel answers a datagram no socket takes with ICMP port
	// unreachable, which a connected sender reads as an error.
	c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("read after the send = %v, want ECONNREFUSED (port unreachable)", err)
	}
}

// TestInheritReadsTheSameMap passes the map to "another process" the way
// a lab VM's init does (a duplicated descriptor and the EnvVar value)
// and reads it through the inherited monitor.
func TestInheritReadsTheSameMap(t *testing.T) {
	testenv.NeedRoot(t, "loading an eBPF program")
	mon, err := Attach()
	if err != nil {
		testenv.SkipUnavailable(t, err, "attach the drop counter")
	}
	defer mon.Close()
	f, err := mon.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := mon.Env(int(f.Fd()))
	v, ok := strings.CutPrefix(env, EnvVar+"=")
	if !ok {
		t.Fatalf("Env = %q", env)
	}
	child, err := Inherit(v)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if child.Probe != mon.Probe {
		t.Fatalf("inherited probe %q, attached %q", child.Probe, mon.Probe)
	}
	// Both read one map: a key written through one is seen by the other.
	k := Key{Addr: 1, Reason: 0xfffffff0}
	if err := mon.m.Put(k, uint64(7)); err != nil {
		t.Fatal(err)
	}
	snap, err := child.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if snap[k] != 7 {
		t.Fatalf("inherited map has %d at the parent's key, want 7", snap[k])
	}
	if _, err := Inherit("fd=x probe=y"); err == nil {
		t.Fatal("Inherit accepted a bad fd")
	}
}
