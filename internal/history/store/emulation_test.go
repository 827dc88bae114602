package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vnetbench/vnetbench/internal/history"
)

// tcgRuns are the real TCG captures of report/testdata.
var tcgRuns = []string{"quickstart-tcg", "lab-pktgen-tcg", "iperf3-udp-tcp-tcg"}

// The real TCG runs, added to an index, read back emulated: every point
// of every series. The index kept no accelerator, so history could not
// tell a TCG fleet's numbers from a kernel's.
func TestIndexKeepsEmulation(t *testing.T) {
	x, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, name := range tcgRuns {
		r, err := ReadRun(realRuns + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Add(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	series, err := x.Series(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) < 20 {
		t.Fatalf("%d series, want the three runs'", len(series))
	}
	for _, s := range series {
		if got := history.Summarize(s.Points); got != history.EmulatedAll {
			t.Errorf("%s: emulated %q, want all (every run is TCG)", s.Title(), got)
		}
	}
}

// An index written by main at 5f17121 (before the emulated column:
// 'history add' of report/testdata/real/quickstart-tcg) opens, its run
// reads as unknown, not as "not emulated", and a run added now is known.
// The old vnetbench reads the migrated file too (checked by hand: its
// 'history --db' printed the same series).
func TestIndexMigratesOldIndex(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "index-5f17121.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(db, old, 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	before := txPPS(t, x)
	if len(before.Points) != 1 || before.Points[0].Emulated != history.EmulationUnknown {
		t.Fatalf("old index's tx_pps points %+v, want 1 of unknown emulation", before.Points)
	}
	r, err := ReadRun(realRuns + "quickstart-tcg") // another path than the old record's: a second run
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	after := txPPS(t, x)
	if len(after.Points) != 2 || after.Points[0].Emulated != history.EmulationUnknown || after.Points[1].Emulated != history.Emulated {
		t.Fatalf("tx_pps points %+v, want the old unknown and the new emulated", after.Points)
	}
	if got := history.Summarize(after.Points); got != history.EmulatedSome {
		t.Errorf("summary %q, want some", got)
	}
}

// txPPS is the index's series of the quickstart's trafgen tx_pps.
func txPPS(t *testing.T, x *Index) history.Series {
	t.Helper()
	series, err := x.Series(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range series {
		if s.Metric == "tx_pps" && s.Cell == "tap/trafgen/pfifo_fast" {
			return s
		}
	}
	t.Fatal("no tx_pps of tap/trafgen/pfifo_fast")
	return history.Series{}
}
