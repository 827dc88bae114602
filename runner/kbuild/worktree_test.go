package kbuild

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// A work tree is made anew only over what vnetbench made: a directory at
// its name without the work tree's OwnFile, or a link there, stays (its
// content and the link's target too) and the build is refused; one it
// made is removed and made again.
func TestWorkTreeRemovesOnlyItsOwn(t *testing.T) {
	needTools(t, "make", "git", "cp")
	tree := fakeTree(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("keep"), 0o644)
	for _, tc := range []struct {
		name string
		at   func(p *Plan) string // the name planted under DIR/work
		make func(at string)
	}{
		{"tree not ours", func(p *Plan) string { return p.workID }, func(at string) {
			os.Mkdir(at, 0o755)
			os.WriteFile(filepath.Join(at, "keep"), []byte("keep"), 0o644)
		}},
		{"state not ours", func(p *Plan) string { return p.workID + ".vnb" }, func(at string) {
			os.Mkdir(at, 0o755)
			os.WriteFile(filepath.Join(at, "keep"), []byte("keep"), 0o644)
		}},
		{"older vnetbench's, not ready", func(p *Plan) string { return p.workID }, func(at string) {
			os.MkdirAll(filepath.Join(at+".vnb", "applied"), 0o755) // no OwnFile in either
			os.Mkdir(at, 0o755)
			os.WriteFile(filepath.Join(at, "keep"), []byte("keep"), 0o644)
		}},
		{"link at the tree", func(p *Plan) string { return p.workID }, func(at string) { os.Symlink(outside, at) }},
		{"link at the copy", func(p *Plan) string { return p.workID + ".tmp" }, func(at string) { os.Symlink(outside, at) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBuilder(t)
			p, err := b.Resolve(t.Context(), Spec{Label: "stock", Tree: tree})
			if err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(b.Dir, "work", tc.at(p))
			os.MkdirAll(filepath.Dir(at), 0o755)
			tc.make(at)
			w, err := b.openWork(t.Context(), p)
			var ne *safefs.NotOwnError
			if err == nil {
				w.unlock()
			}
			if !errors.As(err, &ne) || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), at+" is in the way") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("openWork = %v; want it to refuse %s, one line", err, at)
			}
			if _, err := os.Lstat(at); err != nil {
				t.Errorf("%s removed: %v", at, err)
			}
			for _, f := range []string{filepath.Join(at, "keep"), filepath.Join(outside, "keep")} {
				if b, err := os.ReadFile(f); err != nil || string(b) != "keep" {
					t.Errorf("%s removed or changed: %q, %v", f, b, err)
				}
			}
		})
	}
	t.Run("ours", func(t *testing.T) {
		b, log := newBuilder(t)
		p, err := b.Resolve(t.Context(), Spec{Label: "stock", Tree: tree})
		if err != nil {
			t.Fatal(err)
		}
		w, err := b.openWork(t.Context(), p)
		if err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		w.unlock()
		stale := filepath.Join(w.dir, "stale")
		os.WriteFile(stale, nil, 0o644)
		os.Remove(filepath.Join(w.state, "ready")) // as an interrupted create leaves it
		if w, err = b.openWork(t.Context(), p); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		defer w.unlock()
		if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the work tree was not made anew: %v", err)
		}
		if !w.ready() {
			t.Errorf("the work tree made anew is not ready")
		}
	})
}

// A ready work tree of an older vnetbench (no OwnFile) is still built in:
// it is used as it is, not made anew, so nothing is removed.
func TestOlderReadyWorkTreeIsUsed(t *testing.T) {
	needTools(t, "make", "git", "cp")
	b, log := newBuilder(t)
	p, err := b.Resolve(t.Context(), Spec{Label: "stock", Tree: fakeTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.openWork(t.Context(), p)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	w.unlock()
	for _, d := range []string{w.dir, w.state} {
		if err := os.Remove(filepath.Join(d, safefs.OwnFile)); err != nil {
			t.Fatal(err)
		}
	}
	kept := filepath.Join(w.dir, "kept")
	os.WriteFile(kept, nil, 0o644)
	if w, err = b.openWork(t.Context(), p); err != nil {
		t.Fatalf("an older ready work tree: %v\n%s", err, log)
	}
	w.unlock()
	if _, err := os.Lstat(kept); err != nil {
		t.Errorf("the older work tree was made anew: %v", err)
	}
}
