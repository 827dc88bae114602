// Package linkcheck is for the tests of commands that write under an
// output directory (run, lab, merge, bisect, history, report): with a
// symbolic link planted at any path such a command writes, nothing
// outside the directory may change. It lists what a command wrote,
// makes the victims links point at, plants the links and snapshots a
// tree to compare. It runs no command itself: a test says how (Writer).
package linkcheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Paths lists every file and directory under dir, relative to it,
// sorted (parents before children).
func Paths(tb testing.TB, dir string) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// The kinds of victim a planted link points at (Target).
const (
	Files = "files"
	Dirs  = "dirs"
)

// Outside makes a directory, outside every output directory, of victims
// for planted links: for each of n paths a file and a directory holding
// one, all "[]" (an empty JSON list, which a state file's reader would
// accept), so that a write through a link, of a file or into a
// directory, changes it.
func Outside(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	os.MkdirAll(filepath.Join(dir, Files), 0o755)
	for i := range n {
		os.MkdirAll(Target(dir, Dirs, i), 0o755)
		os.WriteFile(filepath.Join(Target(dir, Dirs, i), "victim"), []byte("[]"), 0o644)
		os.WriteFile(Target(dir, Files, i), []byte("[]"), 0o644)
	}
	return dir
}

// Target is the victim of kind (Files or Dirs) for the i-th path in
// outside.
func Target(outside, kind string, i int) string {
	return filepath.Join(outside, kind, fmt.Sprint(i))
}

// Plant replaces whatever is at link with a symbolic link to target,
// making link's directory when it is missing.
func Plant(tb testing.TB, link, target string) {
	tb.Helper()
	os.MkdirAll(filepath.Dir(link), 0o755)
	os.RemoveAll(link)
	if err := os.Symlink(target, link); err != nil {
		tb.Fatal(err)
	}
}

// Tree is every name under dir with its mode, content and link target:
// what a write anywhere under it changes.
func Tree(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			b.WriteString("error " + err.Error() + "\n")
			return nil
		}
		fi, _ := e.Info()
		b.WriteString(p + " " + fi.Mode().String())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		case e.Type().IsRegular():
			c, _ := os.ReadFile(p)
			b.WriteString(" " + string(c))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// Writer is a command that writes under an output directory.
type Writer struct {
	Name string
	// Prepare readies a fresh output directory before a link is planted
	// in it (nil: none).
	Prepare func(t *testing.T, out string)
	Run     func(t *testing.T, out string) error
	// Extra are paths it writes that are gone when it ends (SQLite's
	// journal files).
	Extra []string
}

// Check runs w once into a fresh directory to learn every path it
// writes, then again into a fresh directory per path with a symbolic
// link planted at that path (to a file and to a directory outside,
// absolute and relative): nothing outside the directory changes,
// whatever the command answers. It returns the paths.
func Check(t *testing.T, w Writer) []string {
	t.Helper()
	ref := filepath.Join(t.TempDir(), "out")
	if w.Prepare != nil {
		w.Prepare(t, ref)
	}
	if err := w.Run(t, ref); err != nil {
		t.Fatalf("%s: the reference run failed: %v", w.Name, err)
	}
	paths := append(Paths(t, ref), w.Extra...)
	if len(paths) == 0 {
		t.Fatalf("%s wrote nothing", w.Name)
	}
	outside := Outside(t, len(paths))
	for i, p := range paths {
		for _, kind := range []string{Files, Dirs, "relative"} {
			out := filepath.Join(t.TempDir(), "out")
			if w.Prepare != nil {
				w.Prepare(t, out)
			}
			link := filepath.Join(out, p)
			target := Target(outside, kind, i)
			if kind == "relative" {
				target, _ = filepath.Rel(filepath.Dir(link), Target(outside, Dirs, i))
			}
			Plant(t, link, target)
			before := Tree(outside)
			err := w.Run(t, out)
			if after := Tree(outside); after != before {
				t.Errorf("%s with a link at %s to %s: wrote outside its directory (it said %v)", w.Name, p, target, err)
			}
		}
	}
	return paths
}
