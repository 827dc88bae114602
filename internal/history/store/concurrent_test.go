package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// syntheticRun is a run of one value per series, at a distinct path.
func syntheticRun(dir string, i int) *Run {
	r := &Run{
		Path:     filepath.Join(dir, fmt.Sprintf("run-%03d", i)),
		Time:     time.Date(2026, 12, 1, 0, i, 0, 0, time.UTC),
		Scenario: "ci",
		Labels:   map[string]string{"running": fmt.Sprintf("c%03d", i)},
	}
	for c := range 20 {
		r.Values = append(r.Values, Value{Cell: fmt.Sprintf("cell%d", c), Kernel: "running", Metric: "tx_pps", Value: float64(1000 + i)})
	}
	return r
}

// TestConcurrentAdd: 10 writers that each open the index and add a run at
// the same moment all succeed, and every run is recorded. A deferred
// transaction that reads before it writes cannot wait for the lock
// (SQLite answers SQLITE_BUSY at once to avoid a deadlock); an immediate
// one takes the write lock first and waits for it.
func TestConcurrentAdd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	const writers = 10
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			x, err := Open(db)
			if err != nil {
				errs[i] = err
				return
			}
			defer x.Close()
			for k := range 5 {
				if err := x.Add(t.Context(), syntheticRun(dir, i*5+k)); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	x, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	paths, err := x.Paths(t.Context())
	if err != nil || len(paths) != writers*5 {
		t.Errorf("%d runs recorded (%v), want %d", len(paths), err, writers*5)
	}
}

// TestRebuildWithConcurrentWriters: a rebuild while writers add runs
// leaves an index that holds the rebuilt runs and every run a writer was
// told it recorded (none lost to a rebuild that replaced the file under
// it), and the writers all succeed.
func TestRebuildWithConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	q, err := ReadRun(realRuns + "quickstart-tcg")
	if err != nil {
		t.Fatal(err)
	}
	x, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	x.Close()
	const writers = 6
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, writers+1)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			x, err := Open(db)
			if err != nil {
				errs[i] = err
				return
			}
			defer x.Close()
			for k := range 5 {
				if err := x.Add(t.Context(), syntheticRun(dir, i*5+k)); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for range 3 {
			if _, err := Rebuild(t.Context(), db, []string{realRuns + "quickstart-tcg"}); err != nil {
				errs[writers] = err
				return
			}
		}
	}()
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	x, err = Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	paths, err := x.Paths(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A rebuild with explicit directories records those alone, so runs
	// added before a rebuild are gone after it; runs added after the
	// last one stay. What must hold: the quickstart is there, and the
	// file is a sound index whose every run reads back.
	if !slices.Contains(paths, absPath(realRuns+"quickstart-tcg")) {
		t.Errorf("rebuilt index lacks the quickstart run: %v", paths)
	}
	if _, err := x.Series(t.Context(), true); err != nil {
		t.Errorf("reading the index after concurrent rebuilds: %v", err)
	}
	for _, f := range []string{db + ".rebuild", db + ".rebuild-wal"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left behind", f)
		}
	}
}

// TestOpenOddNames: a database name holding '?' or '#' (or '%') names
// that file, not an SQLite URI with a query or a fragment.
func TestOpenOddNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"h?mode=ro.db", "h#frag.db", "h%41.db", "h?vfs=none.db"} {
		db := filepath.Join(dir, name)
		x, err := Open(db)
		if err != nil {
			t.Errorf("Open(%q): %v", name, err)
			continue
		}
		err = x.Add(t.Context(), syntheticRun(dir, 1))
		x.Close()
		if err != nil {
			t.Errorf("Add to %q: %v", name, err)
		}
		if _, err := os.Stat(db); err != nil {
			t.Errorf("%q: the database was not created at that name: %v", name, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !slices.Contains([]string{"h?mode=ro.db", "h#frag.db", "h%41.db", "h?vfs=none.db"}, e.Name()) &&
			!slices.ContainsFunc([]string{"-wal", "-shm"}, func(s string) bool { return len(e.Name()) > 4 && e.Name()[len(e.Name())-4:] == s }) {
			t.Errorf("stray file %q", e.Name())
		}
	}
}
