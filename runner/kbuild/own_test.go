package kbuild

// What kbuild removes from its cache: only directories it made (their
// safefs.OwnFile), never through a link.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
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
		p, w := stockWork(t, b, tree)
		w.unlock()
		var err error
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
	p, w := stockWork(t, b, fakeTree(t))
	w.unlock()
	var err error
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

// stockWork resolves the spec {stock, tree} and opens its work tree
// (made, locked).
func stockWork(t *testing.T, b *Builder, tree string) (*Plan, *work) {
	t.Helper()
	p, err := b.Resolve(t.Context(), Spec{Label: "stock", Tree: tree})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.openWork(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	return p, w
}

// fakeHeadersExec answers DebianHeaders' apt and dpkg-deb commands with
// three tiny packages of linux-headers-6.1.0-57-amd64 6.1.192-3.
func fakeHeadersExec(t *testing.T) *proc.Fake {
	const rel, ver = "6.1.0-57-amd64", "6.1.192-3"
	pkgs := []string{"linux-headers-" + rel, "linux-headers-6.1.0-57-common", "linux-kbuild-6.1"}
	files := map[string]map[string]string{
		pkgs[0]: {"usr/src/linux-headers-" + rel + "/Makefile": "include /usr/src/linux-headers-6.1.0-57-common/Makefile\n"},
		pkgs[1]: {"usr/src/linux-headers-6.1.0-57-common/Makefile": "# common\n"},
		pkgs[2]: {"usr/lib/linux-kbuild-6.1/scripts/x": "x\n"},
	}
	return &proc.Fake{Handler: func(c proc.Cmd) (string, bool, error) {
		switch a := c.Argv; {
		case a[0] == "apt-cache":
			return "Package: " + pkgs[0] + "\nDepends: " + pkgs[1] + " (= " + ver + "), " + pkgs[2] + " (= " + ver + ")\n", true, nil
		case a[0] == "apt-get":
			for _, p := range pkgs {
				if err := os.WriteFile(filepath.Join(c.Dir, p+"_"+ver+"_amd64.deb"), []byte(p), 0o644); err != nil {
					return "", true, err
				}
			}
		case a[0] == "dpkg-deb":
			p, _, _ := strings.Cut(filepath.Base(a[2]), "_")
			for name, text := range files[p] {
				dst := filepath.Join(a[3], name)
				os.MkdirAll(filepath.Dir(dst), 0o755)
				if err := os.WriteFile(dst, []byte(text), 0o644); err != nil {
					return "", true, err
				}
			}
		default:
			t.Errorf("unexpected command %v", a)
		}
		return "", true, nil
	}}
}

// DebianHeaders replaces an earlier attempt of its own (its OwnFile says
// so) but leaves a directory at the name that is not provably its own, and
// neither uses nor follows a link there, even to complete headers.
func TestDebianHeadersRemovesOnlyItsOwn(t *testing.T) {
	const rel, ver = "6.1.0-57-amd64", "6.1.192-3"
	name := "linux-headers-" + rel + "_" + ver
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, ".complete"), []byte(ver+"\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "keep"), []byte("keep"), 0o644)
	for _, tc := range []struct {
		name string
		make func(at string)
		own  bool // replaced by the fetch; else refused and left
	}{
		{"earlier attempt", func(at string) {
			os.Mkdir(at, 0o755)
			os.WriteFile(filepath.Join(at, safefs.OwnFile), []byte(headersOwner+"\n"), 0o644)
		}, true},
		{"not ours", func(at string) {
			os.Mkdir(at, 0o755)
			os.WriteFile(filepath.Join(at, "keep"), []byte("keep"), 0o644)
		}, false},
		{"link", func(at string) { os.Symlink(outside, at) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			at := filepath.Join(root, name)
			tc.make(at)
			h, err := DebianHeaders(t.Context(), fakeHeadersExec(t), root, rel, ver, nil)
			if tc.own {
				if err != nil || !h.complete() {
					t.Fatalf("DebianHeaders = %v; want the headers fetched", err)
				}
				if b, _ := os.ReadFile(filepath.Join(at, safefs.OwnFile)); string(b) != headersOwner+"\n" {
					t.Errorf("fetched headers' %s: %q", safefs.OwnFile, b)
				}
				return
			}
			var ne *safefs.NotOwnError
			if !errors.As(err, &ne) || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), at) {
				t.Fatalf("DebianHeaders = %v, %v; want it to refuse %s", h, err, at)
			}
			if fi, err := os.Lstat(at); err != nil || (fi.Mode()&fs.ModeSymlink == 0) != (tc.name != "link") {
				t.Errorf("%s changed: %v", at, err)
			}
			for _, f := range []string{filepath.Join(at, "keep"), filepath.Join(outside, "keep")} {
				if b, err := os.ReadFile(f); err != nil || string(b) != "keep" {
					t.Errorf("%s removed or changed: %q, %v", f, b, err)
				}
			}
		})
	}
}
