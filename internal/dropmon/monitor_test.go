package dropmon

import (
	"net"
	"strings"
	"testing"

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
	// A port nobody listens on: bind one, note it, close it.
	l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	dst := l.LocalAddr().(*net.UDPAddr)
	l.Close()
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
