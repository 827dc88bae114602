package agent

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// TestIfStatFilesReadAgain: the statistics files opened once give the
// counters anew at each read: lo's packets sent between two reads of the
// same open files show up in the second, and each read agrees with a
// fresh read of the file.
func TestIfStatFilesReadAgain(t *testing.T) {
	f, err := openIfStats("lo")
	if err != nil {
		testenv.Skipf(t, "no sysfs statistics of lo here: %v", err)
	}
	defer f.close()
	before, err := f.read()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("udp", "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 50
	for range n {
		c.Write([]byte("vnetbench"))
	}
	after, err := f.read()
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TxPackets - before.TxPackets; got < n {
		t.Errorf("lo tx_packets went up by %d over %d packets sent between two reads of the open files", got, n)
	}
	if after.TxBytes <= before.TxBytes {
		t.Errorf("lo tx_bytes did not grow: %d then %d", before.TxBytes, after.TxBytes)
	}
	b, err := os.ReadFile(filepath.Join("/sys/class/net/lo/statistics", "tx_packets"))
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if fresh < after.TxPackets {
		t.Errorf("a fresh read of tx_packets (%d) is below the open file's (%d)", fresh, after.TxPackets)
	}
}

// TestIfStatFilesMissingDevice: a device without statistics is an error
// naming it, and leaves no file open.
func TestIfStatFilesMissingDevice(t *testing.T) {
	if _, err := openIfStats("vnb-no-such-dev"); err == nil || !strings.Contains(err.Error(), "vnb-no-such-dev") {
		t.Fatalf("openIfStats of a missing device: %v, want an error naming it", err)
	}
}
