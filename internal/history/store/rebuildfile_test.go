package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// notADatabase writes an index SQLite cannot read at dir/h.db.
func notADatabase(t *testing.T, dir string) string {
	t.Helper()
	db := filepath.Join(dir, "h.db")
	b := make([]byte, 8192)
	for i := range b {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return db
}

// plant writes the files names under dir, each holding its name.
func plant(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kept fails unless each of names under dir still holds its name.
func kept(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != n {
			t.Errorf("%s, not vnetbench's, was removed or changed: %q, %v", n, b, err)
		}
	}
}

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestRebuildUnreadableRemovesOnlyItsOwn: replacing an index SQLite
// cannot read leaves files of similar names it did not make (it deleted
// PATH.rebuild and its journals before writing there).
func TestRebuildUnreadableRemovesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	db := notADatabase(t, dir)
	theirs := []string{"h.db.rebuild", "h.db.rebuild-wal", "h.db.rebuild-shm", "h.db.rebuild-keep"}
	plant(t, dir, theirs...)
	n, err := Rebuild(t.Context(), db, []string{realRuns + "quickstart-tcg"})
	if err != nil || n != 1 {
		t.Fatalf("rebuild of an unreadable index: %d runs, %v", n, err)
	}
	kept(t, dir, theirs...)
	if got, want := entries(t, dir), append([]string{"h.db"}, theirs...); !sameSet(got, want) {
		t.Errorf("files after the rebuild %v, want %v", got, want)
	}
	x, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if paths, err := x.Paths(t.Context()); err != nil || len(paths) != 1 {
		t.Errorf("rebuilt index records %v (%v), want the one run", paths, err)
	}
}

// TestRebuildUnreadableFailsCleanly: a rebuild that fails writing the new
// index removes its temporary file alone and leaves the old index.
func TestRebuildUnreadableFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	db := notADatabase(t, dir)
	plant(t, dir, "h.db.rebuild-keep")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Rebuild(ctx, db, []string{realRuns + "quickstart-tcg"}); err == nil {
		t.Fatal("rebuild with a cancelled context succeeded")
	}
	kept(t, dir, "h.db.rebuild-keep")
	if got := entries(t, dir); !sameSet(got, []string{"h.db", "h.db.rebuild-keep"}) {
		t.Errorf("files after a failed rebuild %v, want the old index and the planted file", got)
	}
}

// TestRebuildUnreadableKeepsOldJournals: journals beside an unreadable
// index that were there before Rebuild opened it, and that SQLite's open
// kept, are not vnetbench's: refused, exit 2, and everything is left as
// it was. (SQLite's failed open of a file that is no database removes
// journals it cannot use, so this calls rebuildFile as Rebuild would.)
func TestRebuildUnreadableKeepsOldJournals(t *testing.T) {
	dir := t.TempDir()
	db := notADatabase(t, dir)
	plant(t, dir, "h.db-wal", "h.db-shm")
	_, err := rebuildFile(t.Context(), db, []string{realRuns + "quickstart-tcg"}, journals(db))
	if !errors.Is(err, fault.ErrInput) {
		t.Fatalf("rebuild beside old journals: %v, want an input error", err)
	}
	kept(t, dir, "h.db-wal", "h.db-shm")
	if got := entries(t, dir); !sameSet(got, []string{"h.db", "h.db-wal", "h.db-shm"}) {
		t.Errorf("files after a refused rebuild %v", got)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestRebuildUnreadableKeepsMode: the new index keeps the mode of the
// one it replaces: os.CreateTemp makes its file 0600, and a 0640 index
// that others read came back 0600.
func TestRebuildUnreadableKeepsMode(t *testing.T) {
	dir := t.TempDir()
	db := notADatabase(t, dir)
	if err := os.Chmod(db, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Rebuild(t.Context(), db, []string{realRuns + "quickstart-tcg"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("rebuilt index mode %v, want 0640, the replaced index's", fi.Mode().Perm())
	}
}
