package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vnetbench/vnetbench/internal/history"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// A history CSV is read up to safefs.MaxCSV: a CSV of zeros (a link to
// /dev/zero once took 4.2 GB and 33 s to reach the 1 GiB bound of
// results.jsonl, the csv reader holding its one field several times over)
// is refused as too large, named once. The file here is sparse.
func TestCSVBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "zeros.csv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(safefs.MaxCSV + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Inputs(t.Context(), []string{p}, "", false, func(string) history.Better { return history.Neutral })
	var tl *safefs.TooLargeError
	if !errors.As(err, &tl) || tl.Max != safefs.MaxCSV {
		t.Fatalf("history of %d MiB of zeros: %v, want too large at %d MiB", (safefs.MaxCSV+1)>>20, err, safefs.MaxCSV>>20)
	}
}
