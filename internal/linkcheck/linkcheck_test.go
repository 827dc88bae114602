package linkcheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A write through a planted link shows in Tree of the outside; a write
// that replaces the link (a new file renamed over it) does not.
func TestTreeShowsWriteThroughLink(t *testing.T) {
	outside := Outside(t, 2)
	out := t.TempDir()
	for i, kind := range []string{Files, Dirs} {
		Plant(t, filepath.Join(out, "sub", kind), Target(outside, kind, i))
	}
	if got, want := Paths(t, out), []string{"sub", "sub/dirs", "sub/files"}; !slices.Equal(got, want) {
		t.Errorf("Paths = %v, want %v", got, want)
	}
	before := Tree(outside)
	tmp := filepath.Join(out, "tmp")
	os.WriteFile(tmp, []byte("{}"), 0o644)
	if err := os.Rename(tmp, filepath.Join(out, "sub", Files)); err != nil {
		t.Fatal(err)
	}
	if Tree(outside) != before {
		t.Errorf("replacing a link changed the outside:\n%s\nwas\n%s", Tree(outside), before)
	}
	os.WriteFile(filepath.Join(out, "sub", Dirs, "victim"), []byte("{}"), 0o644)
	if Tree(outside) == before {
		t.Errorf("a write through the link to a directory did not show:\n%s", before)
	}
}
