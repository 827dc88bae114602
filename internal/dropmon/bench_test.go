package dropmon

import (
	"net"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// BenchmarkDroppedDatagram is the counting's cost per drop: one op sends
// a UDP datagram to a closed loopback port, which the kernel drops as
// NO_SOCKET (and answers with an ICMP error, itself rate limited), with
// the counter detached and attached. The difference of the two ns/op is
// what the program adds to each drop; run the two in one invocation
// (-count N) so a busy machine slows both alike.
func BenchmarkDroppedDatagram(b *testing.B) {
	testenv.NeedRoot(b, "loading an eBPF program")
	dst := unreachablePort(b)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	send := func(b *testing.B) {
		for b.Loop() {
			if _, err := c.WriteToUDP([]byte("x"), dst); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("uncounted", send)
	b.Run("counted", func(b *testing.B) {
		mon, err := Attach()
		if err != nil {
			testenv.SkipUnavailable(b, err, "attach the drop counter")
		}
		defer mon.Close()
		send(b)
		b.StopTimer()
		snap, err := mon.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		var n uint64
		for _, v := range snap {
			n += v
		}
		if n < uint64(b.N) {
			b.Fatalf("counted %d drops in %d sends", n, b.N)
		}
		b.ReportMetric(float64(n)/float64(b.N), "drops/op")
	})
}
