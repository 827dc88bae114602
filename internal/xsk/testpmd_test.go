package xsk

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/perfparse"
)

// TestTestpmdTxonlyTap runs the series' own generator at host level:
// dpdk-testpmd in txonly mode on the AF_XDP PMD in copy mode, into a
// drained tap, stopped with SIGINT. perfparse reads what it printed, and
// its TX-packets agree with what the tap took (tx_packets + tx_dropped).
// It belongs to the testpmd workload, which does not exist yet.
func TestTestpmdTxonlyTap(t *testing.T) {
	needHost(t)
	testenv.NeedCommand(t, "dpdk-testpmd", "dpdk-dev")
	ns := testTapQLen(t, 1, 0)
	d := startDrain(t, ns, 1, 1)
	before, err := ns.LinkStats(testDev)
	if err != nil {
		t.Fatal(err)
	}
	p := startInNetns(t, ns, os.Environ(), "dpdk-testpmd", "--no-huge", "-m", "512", "--no-pci",
		"--vdev", "net_af_xdp0,iface="+testDev+",force_copy=1", "--",
		"--forward-mode=txonly", "--txpkts=128", "--stats-period", "1", "--total-num-mbufs=16384")
	waitSending(t, ns, p)
	time.Sleep(2500 * time.Millisecond)
	if err := p.interrupt(t); err != nil {
		t.Fatalf("testpmd: %v\n%s", err, p.output())
	}
	after, err := ns.LinkStats(testDev)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := perfparse.ParseTestpmd(bytes.NewReader(p.out.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, p.output())
	}
	if tp.Mode != "txonly" || tp.PacketLen != 128 || tp.Accumulated == nil || len(tp.Forward) != 1 || len(tp.PortStats) < 2 {
		t.Fatalf("testpmd output read as %+v\n%s", tp, p.output())
	}
	sent := tp.Accumulated.TxPackets
	tapTook := after.TxPackets + after.TxDropped - before.TxPackets - before.TxDropped
	t.Logf("testpmd TX-packets %d (dropped %d), tap took %d (dropped %d), reader got %d", sent, tp.Accumulated.TxDropped,
		tapTook, after.TxDropped-before.TxDropped, d.total())
	// The PMD counts what it put on the Tx ring; the kernel has taken all
	// of it once testpmd stopped (its kick loops until sendto succeeds).
	if sent == 0 || tapTook != sent {
		t.Errorf("testpmd says it sent %d frames, the tap took %d", sent, tapTook)
	}
	last := tp.PortStats[len(tp.PortStats)-1]
	if last.TxPPS <= 0 || last.TxBytes != last.TxPackets*128 {
		t.Errorf("last port statistics: %+v", last)
	}
	d.mu.Lock()
	kept := d.kept[0]
	d.mu.Unlock()
	if len(kept) != 1 || len(kept[0]) != 128 {
		t.Errorf("the reader kept %d IPv4 frames, want one of 128 bytes", len(kept))
	}
}
