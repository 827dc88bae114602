package perfparse

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestTestpmdCapture(t *testing.T) {
	tp, err := ParseTestpmd(openT(t, "testdata/testpmd/real-txonly-copy-64.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if tp.Mode != "txonly" || tp.PacketLen != 64 || tp.Ports != 1 || len(tp.Forward) != 1 || tp.Accumulated == nil {
		t.Fatalf("%+v", tp)
	}
	if tp.Accumulated.TxPackets != 1101376 || tp.Forward[0].TxPackets != 1101376 || tp.Accumulated.TxDropped != 0 {
		t.Errorf("forward statistics: %+v %+v", tp.Forward[0], tp.Accumulated)
	}
	if len(tp.PortStats) != 6 {
		t.Fatalf("%d port stats blocks, want 6", len(tp.PortStats))
	}
	// The periodic blocks count up, and the rates are the differences
	// over about a second (the first block has none).
	first, last := tp.PortStats[0], tp.PortStats[5]
	if first.TxPPS != 0 || !first.Throughput || last.TxPPS != 109539 || last.TxBPS != 56084144 || last.TxPackets != 877664 || last.TxBytes != 877664*64 {
		t.Errorf("first %+v\nlast %+v", first, last)
	}
	for i := 1; i < len(tp.PortStats); i++ {
		if tp.PortStats[i].TxPackets < tp.PortStats[i-1].TxPackets {
			t.Errorf("block %d: TX-packets went down", i)
		}
	}
}

// TestTestpmdPasted reads the captures as pasted into a mail: whitespace
// collapsed, "> " quote marks, CRLF line ends. The records are the same.
func TestTestpmdPasted(t *testing.T) {
	for _, path := range goldenInputs(t, "testpmd") {
		if strings.Contains(path, "bad-") {
			continue
		}
		want, err := ParseTestpmd(openT(t, path))
		if err != nil {
			t.Fatal(err)
		}
		pasted := strings.ReplaceAll(collapseReport(readT(t, path)), "\n", "\r\n")
		got, err := ParseTestpmd(strings.NewReader(pasted))
		if err != nil {
			t.Fatalf("%s pasted: %v", path, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s pasted:\n got %+v\nwant %+v", path, got, want)
		}
	}
}

// TestTestpmdFormats covers testpmd's print formats that the captures do
// not show (several streams per port, checksum and burst lines, extra
// forward counters), written from app/test-pmd/testpmd.c's printf
// formats, and malformed input.
func TestTestpmdFormats(t *testing.T) {
	const streams = `
  ------- Forward Stats for RX Port= 0/Queue= 0 -> TX Port= 0/Queue= 0 -------
  RX-packets: 0              TX-packets: 12345678901234 TX-dropped: 7               RX- bad IP checksum: 0               Rx- bad L4 checksum: 3
  RX-bursts : 10 [90% of 32 pkts + 10% of other]

  ------- Forward Stats for RX Port= 0/Queue=13 -> TX Port= 1/Queue=13 -------
  RX-packets: 4              TX-packets: 5              TX-dropped: 0
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 4              RX-dropped: 0             RX-total: 4
  Bad-ipcsum: 1              Bad-l4csum: 12345678901234Bad-outer-l4csum: 2
  RX-error: 9
  TX-packets: 12345678901239 TX-dropped: 7             TX-total: 12345678901246
  ----------------------------------------------------------------------------
`
	tp, err := ParseTestpmd(strings.NewReader(streams))
	if err != nil {
		t.Fatal(err)
	}
	wantStreams := []TestpmdStream{
		{Line: 2, RxPort: 0, RxQueue: 0, TxPort: 0, TxQueue: 0, TxPackets: 12345678901234, TxDropped: 7,
			Other: map[string]uint64{"RX- bad IP checksum": 0, "Rx- bad L4 checksum": 3, "RX-bursts": 10}},
		{Line: 6, RxPort: 0, RxQueue: 13, TxPort: 1, TxQueue: 13, RxPackets: 4, TxPackets: 5},
	}
	if !reflect.DeepEqual(tp.StreamStats, wantStreams) {
		t.Errorf("streams:\n got %+v\nwant %+v", tp.StreamStats, wantStreams)
	}
	wantFwd := TestpmdForward{Line: 8, Port: 0, RxPackets: 4, RxTotal: 4, TxPackets: 12345678901239, TxDropped: 7, TxTotal: 12345678901246,
		Other: map[string]uint64{"Bad-ipcsum": 1, "Bad-l4csum": 12345678901234, "Bad-outer-l4csum": 2, "RX-error": 9}}
	if len(tp.Forward) != 1 || !reflect.DeepEqual(tp.Forward[0], wantFwd) || tp.Accumulated != nil {
		t.Errorf("forward:\n got %+v\nwant %+v", tp.Forward, wantFwd)
	}

	const nic = "  ######################## NIC statistics for port 0  ########################\n" +
		"  RX-packets: 0          RX-missed: 0          RX-bytes:  0\n"
	for _, c := range []struct{ in, want string }{
		{nic, "1: testpmd: statistics block cut off by the end of the input"},
		{nic + "  TX-bytes: 12\n  ##########\n", `1: testpmd: statistics block without TX-packets`},
		{nic + "  TX-packets: x\n  ##########\n", `3: testpmd: counter "TX-packets" has no number`},
		{nic + "  TX-packets: 99999999999999999999\n  ##########\n", "3: testpmd: counter TX-packets: "},
		{nic + "  RX-packets: 1\n  ##########\n", "3: testpmd: counter RX-packets twice in one block, 0 and 1"},
		{nic + "  ---------------------- Forward statistics for port 0  ----------------------\n", "3: testpmd: a new statistics block starts before the one at line 1 ended"},
		{"EAL: Error - exiting with code: 1\n  Cause: Creation of mbuf pool for socket 0 failed: Cannot allocate memory\n",
			`testpmd: no port or forward statistics found (testpmd said: "EAL: Error - exiting with code: 1; Cause: Creation of mbuf pool for socket 0 failed: Cannot allocate memory")`},
		{"", "testpmd: no port or forward statistics found"},
	} {
		_, err := ParseTestpmd(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

// With --rx-queue-stats-mapping, testpmd before DPDK 20.11 printed the
// port block in another layout, RX-errors twice (both stats.ierrors) and a
// "Stats reg N" line per mapped counter; written from its
// nic_stats_display format (the right-aligned %10 columns).
func TestTestpmdQueueStatsMapping(t *testing.T) {
	in := "  ######################## NIC statistics for port 0  ########################\n" +
		"  RX-packets:                 1234    RX-errors:          2    RX-bytes:      78976\n" +
		"  RX-errors:           2\n" +
		"  RX-nombuf:                     0\n" +
		"  TX-packets:                 1230    TX-errors:          0    TX-bytes:      78720\n" +
		"\n" +
		"  Stats reg  0 RX-packets:       1234    RX-errors:          0    RX-bytes:      78976\n" +
		"  ############################################################################\n"
	tp, err := ParseTestpmd(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	p := tp.PortStats[0]
	if p.RxPackets != 1234 || p.RxErrors != 2 || p.TxBytes != 78720 || p.Other["Stats reg 0 RX-packets"] != 1234 {
		t.Errorf("queue stats mapping layout: %+v", p)
	}
	if _, err := ParseTestpmd(strings.NewReader(strings.Replace(in, "RX-errors:           2", "RX-errors:           3", 1))); err == nil ||
		!strings.Contains(err.Error(), "RX-errors twice in one block, 2 and 3") {
		t.Errorf("RX-errors 2 then 3: %v", err)
	}
}

func readT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
