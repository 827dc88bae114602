package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Driver.Counters is read at the moments tx_dropped is: a counter that
// follows the tap's drops (as the kernel's FULL_RING count in
// tun_net_xmit does) grows by exactly Result.TxDropped, one that did not
// move is absent, and a counter that cannot be read is an error beside a
// good TxDropped.
func TestRunCountersBracket(t *testing.T) {
	f := newFake(t, "1")
	f.result = fixture(t, "pktgen-tap0-L1-with-L2-vhost-off.txt")
	f.dropsDuringRun = 2537342
	stats := filepath.Join(f.sys, "vnbt0", "statistics")
	os.MkdirAll(stats, 0o755)
	os.WriteFile(filepath.Join(stats, "tx_dropped"), []byte("1000\n"), 0o644)
	d := f.driver()
	reads := 0
	d.Counters = func() (map[string]uint64, error) {
		reads++
		b, err := os.ReadFile(filepath.Join(stats, "tx_dropped"))
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return map[string]uint64{"FULL_RING@tun_net_xmit": n + 5, "qdisc": 7}, err
	}
	res, err := d.Run(t.Context(), Config{Mode: ModeMultiqueue, Dev: "vnbt0", Threads: 2, Count: 100000, DstMAC: "52:54:00:12:34:56"})
	if err != nil {
		t.Fatal(err)
	}
	if res.CountersErr != nil || len(res.Counters) != 1 || res.Counters["FULL_RING@tun_net_xmit"] != res.TxDropped || res.TxDropped != 2537342 {
		t.Fatalf("counters %v (err %v), tx_dropped %d: want FULL_RING's growth = tx_dropped's", res.Counters, res.CountersErr, res.TxDropped)
	}
	if reads != 2 {
		t.Errorf("Counters read %d times, want 2 (before and after)", reads)
	}
	g := newFake(t, "1")
	g.result = f.result
	os.MkdirAll(filepath.Join(g.sys, "vnbt0", "statistics"), 0o755)
	os.WriteFile(filepath.Join(g.sys, "vnbt0", "statistics", "tx_dropped"), []byte("0\n"), 0o644)
	e := g.driver()
	e.Counters = func() (map[string]uint64, error) { return nil, errors.New("map gone") }
	res, err = e.Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", Count: 100000, DstMAC: "52:54:00:12:34:56"})
	if err != nil || !res.TxDroppedOK || res.Counters != nil || res.CountersErr == nil {
		t.Errorf("unreadable counters: %v (err %v), tx_dropped ok %v, run err %v", res.Counters, res.CountersErr, res.TxDroppedOK, err)
	}
}
