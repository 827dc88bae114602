package safefs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// snapshot is every name under dir with its content (files) or target
// (links).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[p] = "-> " + l
		case e.Type().IsRegular():
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		default:
			m[p] = "dir"
		}
		return nil
	})
	return m
}

// Every way a Dir writes, with a link planted at the name it writes and
// at each directory on the way (to a file and a directory outside, by an
// absolute and a relative target, and to a file inside): nothing outside
// changes, and nothing inside is written through a link.
func TestDirWritesThroughNoLink(t *testing.T) {
	writes := map[string]func(d *Dir, name string) error{
		"WriteFile": func(d *Dir, n string) error { return d.WriteFile(n, []byte("new"), 0o644) },
		"Create": func(d *Dir, n string) error {
			f, err := d.Create(n, 0o644)
			if err == nil {
				f.WriteString("new")
				f.Close()
			}
			return err
		},
		"Append": func(d *Dir, n string) error {
			f, err := d.Append(n, 0o644)
			if err == nil {
				f.WriteString("new")
				f.Close()
			}
			return err
		},
		"OpenFile": func(d *Dir, n string) error {
			f, err := d.OpenFile(n, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		},
		"CopyNew":     func(d *Dir, n string) error { return Copy(d, n, d, "inside", 0o644, CopyNew) },
		"CopyReplace": func(d *Dir, n string) error { return Copy(d, n, d, "inside", 0o644, CopyReplace) },
		"MkdirAll":    func(d *Dir, n string) error { return d.MkdirAll(n + "/sub") },
		"RemoveAll":   func(d *Dir, n string) error { return d.RemoveAll(n) },
		"Rename": func(d *Dir, n string) error {
			if err := d.WriteFile("src", []byte("src"), 0o644); err != nil {
				return err
			}
			return d.Rename("src", n)
		},
	}
	for wname, write := range writes {
		for _, at := range []string{"f", "a/f", "a/b/f"} {
			for _, target := range []string{"abs-file", "abs-dir", "rel-dir", "inside"} {
				t.Run(wname+"/"+at+"/"+target, func(t *testing.T) {
					top := t.TempDir()
					outside := filepath.Join(top, "outside")
					os.MkdirAll(filepath.Join(outside, "a", "b"), 0o755)
					for _, f := range []string{"f", "a/f", "a/b/f", "a/b/f/sub"} {
						os.WriteFile(filepath.Join(outside, f), []byte("victim"), 0o644)
					}
					run := filepath.Join(top, "run")
					os.MkdirAll(filepath.Join(run, "a", "b"), 0o755)
					os.WriteFile(filepath.Join(run, "inside"), []byte("inside"), 0o644)
					// A link at each level of at: the name itself, its
					// parent, its grandparent.
					for _, link := range linksFor(at) {
						p := filepath.Join(run, link)
						os.RemoveAll(p)
						var to string
						switch target {
						case "abs-file":
							to = filepath.Join(outside, link)
						case "abs-dir":
							to = outside
						case "rel-dir":
							to = strings.Repeat("../", strings.Count(link, "/")+1) + "outside"
						case "inside":
							to = filepath.Join(run, "inside")
						}
						if err := os.Symlink(to, p); err != nil {
							t.Fatal(err)
						}
						before, inside := snapshot(t, outside), snapshot(t, run)
						d, err := Open(run)
						if err != nil {
							t.Fatal(err)
						}
						err = write(d, at)
						d.Close()
						if after := snapshot(t, outside); !equal(before, after) {
							t.Errorf("link at %s -> %s: %s changed outside: %v -> %v (err %v)", link, to, wname, before, after, err)
						}
						if b, _ := os.ReadFile(filepath.Join(run, "inside")); string(b) != "inside" {
							t.Errorf("link at %s -> %s: %s wrote through it to a file inside (err %v)", link, to, wname, err)
						}
						if err != nil && !errors.Is(err, fault.ErrInput) && !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTDIR) {
							t.Errorf("link at %s: %s: %v, want bad input", link, wname, err)
						}
						_ = inside
						os.RemoveAll(p)
						os.MkdirAll(filepath.Join(run, "a", "b"), 0o755)
					}
				})
			}
		}
	}
}

func linksFor(at string) []string {
	var out []string
	parts := strings.Split(at, "/")
	for i := range parts {
		out = append(out, strings.Join(parts[:i+1], "/"))
	}
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A name leaving the directory is bad input.
func TestDirRefusesEscapes(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, n := range []string{"../x", "/etc/x", "a/../../x", "."} {
		if err := d.WriteFile(n, nil, 0o644); !errors.Is(err, fault.ErrInput) {
			t.Errorf("WriteFile(%q): %v, want bad input", n, err)
		}
	}
}

// WriteFile replaces what is at the name, atomically, with the mode asked.
func TestDirWriteFile(t *testing.T) {
	dir := t.TempDir()
	d, _ := Open(dir)
	defer d.Close()
	if err := d.WriteFile("x/y/z.sh", []byte("one"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("x/y/z.sh", []byte("two"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "x/y/z.sh"))
	fi, _ := os.Stat(filepath.Join(dir, "x/y/z.sh"))
	if string(b) != "two" || fi.Mode().Perm() != 0o755 {
		t.Errorf("content %q mode %v", b, fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "x/y")); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// Copy copies a regular file between Dirs: CopyNew makes a new file (its
// parents too) and refuses an existing one; CopyReplace replaces one
// whole, leaving no temporary file; a link as the source is not followed.
func TestDirCopy(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "a"), []byte("one"), 0o600)
	os.Symlink(filepath.Join(src, "a"), filepath.Join(src, "link"))
	in, _ := Open(src)
	defer in.Close()
	out, _ := Open(dst)
	defer out.Close()
	if err := Copy(out, "x/a", in, "a", 0o644, CopyNew); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dst, "x/a"))
	fi, _ := os.Stat(filepath.Join(dst, "x/a"))
	if string(b) != "one" || fi.Mode().Perm() != 0o644 {
		t.Errorf("new copy: content %q mode %v", b, fi.Mode())
	}
	os.WriteFile(filepath.Join(src, "a"), []byte("two"), 0o600)
	if err := Copy(out, "x/a", in, "a", 0o644, CopyNew); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CopyNew over an existing file: %v, want fs.ErrExist", err)
	}
	if err := Copy(out, "x/a", in, "a", 0o644, CopyReplace); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "x/a")); string(b) != "two" {
		t.Errorf("replaced copy: %q, want two", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(dst, "x")); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	for _, mode := range []CopyMode{CopyNew, CopyReplace} {
		if err := Copy(out, "l", in, "link", 0o644, mode); !errors.Is(err, fault.ErrInput) {
			t.Errorf("copy of a link (mode %d): %v, want bad input", mode, err)
		}
	}
}

// Reads are bounded: an endless input is an error at the bound, not a
// machine out of memory; a FIFO or a link under a Dir is not opened.
func TestReadsAreBounded(t *testing.T) {
	if _, err := ReadFile("/dev/zero", 1<<20); !errors.As(err, new(*TooLargeError)) || !errors.Is(err, fault.ErrInput) {
		t.Errorf("/dev/zero: %v, want too large", err)
	}
	b, err := io.ReadAll(Reader(strings.NewReader("12345"), 5, "x"))
	if err != nil || string(b) != "12345" {
		t.Errorf("exactly the bound: %q %v", b, err)
	}
	if _, err := io.ReadAll(Reader(strings.NewReader("123456"), 5, "x")); !errors.As(err, new(*TooLargeError)) {
		t.Errorf("one past the bound: %v", err)
	}
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/etc/hostname", filepath.Join(dir, "link"))
	d, _ := Open(dir)
	defer d.Close()
	for _, n := range []string{"fifo", "link"} {
		if _, err := d.ReadFile(n, 1<<20); !errors.Is(err, fault.ErrInput) {
			t.Errorf("ReadFile(%s): %v, want bad input", n, err)
		}
	}
}

// ChosenLink: a link in the part of a path vnetbench chose is bad input
// naming the link and the fix; the base (the user's) is followed, and a
// missing component ends the check.
func TestChosenLink(t *testing.T) {
	tmp := t.TempDir()
	other := t.TempDir()
	base := filepath.Join(tmp, "base")
	os.Symlink(other, base) // the user's: followed
	if err := ChosenLink(base, "runs/x", "give -o DIR"); err != nil {
		t.Fatalf("nothing there: %v", err)
	}
	os.Mkdir(filepath.Join(other, "real"), 0o755)
	os.Symlink(t.TempDir(), filepath.Join(other, "runs"))
	for rel, bad := range map[string]bool{"runs/x": true, "runs": true, "real/x": false, "real": false} {
		err := ChosenLink(base, rel, "give -o DIR")
		if !bad {
			if err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			continue
		}
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), filepath.Join(base, "runs")+" is a symbolic link") ||
			!strings.Contains(err.Error(), "give -o DIR, or remove the link") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// ChosenLink ends its check only where a component does not exist: a
// component it cannot read (here a file where runs/ should be a
// directory) is an error, not the end of the path.
func TestChosenLinkUnreadable(t *testing.T) {
	base := t.TempDir()
	os.WriteFile(filepath.Join(base, "runs"), nil, 0o644)
	err := ChosenLink(base, "runs/x", "give -o DIR")
	if !errors.Is(err, syscall.ENOTDIR) || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), filepath.Join(base, "runs", "x")) || strings.Contains(err.Error(), "\n") {
		t.Errorf("runs a file: %v, want lstat's not a directory as one line of bad input", err)
	}
}

// RemoveOwn removes a name vnetbench wrote, with what is under it; a
// link planted on the way is refused and left, one at the name is
// removed, and no target outside changes.
func TestRemoveOwn(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("keep"), 0o644)
	os.MkdirAll(filepath.Join(dir, "mine", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "mine", "sub", "f"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "mine", "inner-link"))
	os.Symlink(filepath.Join(outside, "keep"), filepath.Join(dir, "file-link"))
	os.Symlink(outside, filepath.Join(dir, "dir-link"))
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want := snapshot(t, outside)
	// A link on the way is refused and stays.
	var le *LinkError
	if err := RemoveOwn(d, "dir-link/keep"); !errors.As(err, &le) || !errors.Is(err, fault.ErrInput) {
		t.Errorf("RemoveOwn(dir-link/keep) = %v, want a LinkError", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "dir-link")); err != nil {
		t.Errorf("RemoveOwn(dir-link/keep) removed the link on the way: %v", err)
	}
	// A link at the name is removed itself, its target untouched.
	for _, name := range []string{"file-link", "dir-link"} {
		if err := RemoveOwn(d, name); err != nil {
			t.Errorf("RemoveOwn(%s) = %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("RemoveOwn(%s) left the link: %v", name, err)
		}
	}
	if err := RemoveOwn(d, "mine"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "mine")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mine not removed: %v", err)
	}
	if err := RemoveOwn(d, "absent"); err != nil {
		t.Errorf("RemoveOwn(absent) = %v", err)
	}
	if got := snapshot(t, outside); !equal(got, want) {
		t.Errorf("outside changed: %v, want %v", got, want)
	}
}

// RemoveOwnDir removes only a directory whose OwnFile says what it is: a
// directory without one, one of another kind, a file and a link at the
// name stay (the link's target untouched), a link on the way is refused.
func TestRemoveOwnDir(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, OwnFile), []byte("tree\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "theirs", "sub"), 0o755)
	os.MkdirAll(filepath.Join(dir, "other"), 0o755)
	os.WriteFile(filepath.Join(dir, "other", OwnFile), []byte("headers\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "link"))
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := MkdirOwn(d, "mine", "tree"); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(dir, "mine", "inner-link"))
	if err := MkdirOwn(d, "theirs", "tree"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("MkdirOwn(theirs) = %v, want fs.ErrExist", err)
	}
	want := snapshot(t, outside)
	for _, name := range []string{"theirs", "other", "file", "link"} {
		var ne *NotOwnError
		if err := RemoveOwnDir(d, name, "tree"); !errors.As(err, &ne) || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "remove or move it by hand") {
			t.Errorf("RemoveOwnDir(%s) = %v, want a NotOwnError", name, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("RemoveOwnDir(%s) removed it: %v", name, err)
		}
	}
	var le *LinkError
	if err := RemoveOwnDir(d, "link/x", "tree"); !errors.As(err, &le) {
		t.Errorf("RemoveOwnDir(link/x) = %v, want a LinkError", err)
	}
	if err := RemoveOwnDir(d, "mine", "tree"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "mine")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mine not removed: %v", err)
	}
	if err := RemoveOwnDir(d, "absent", "tree"); err != nil {
		t.Errorf("RemoveOwnDir(absent) = %v", err)
	}
	if got := snapshot(t, outside); !equal(got, want) {
		t.Errorf("outside changed: %v, want %v", got, want)
	}
}

// MkdirChosen makes the chosen part under the user's base (a link there
// followed) and opens it; a link or a file in the chosen part is refused
// as ChosenLink refuses it, and nothing is made through the link.
func TestMkdirChosen(t *testing.T) {
	tmp, other := t.TempDir(), t.TempDir()
	base := filepath.Join(tmp, "base")
	os.Symlink(other, base) // the user's: followed
	d, err := MkdirChosen(base, "runs/x", "give -o DIR")
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if fi, err := os.Lstat(filepath.Join(other, "runs", "x")); err != nil || !fi.IsDir() || d.Path() != filepath.Join(base, "runs", "x") {
		t.Errorf("runs/x not made: %v, %v (path %s)", fi, err, d.Path())
	}
	if d, err = MkdirChosen(base, "runs/x", "give -o DIR"); err != nil { // there already: used
		t.Fatalf("runs/x again: %v", err)
	}
	d.Close()
	target := t.TempDir()
	os.Symlink(target, filepath.Join(other, "links"))
	os.WriteFile(filepath.Join(other, "file"), nil, 0o644)
	for rel, want := range map[string]string{
		"links/x": filepath.Join(base, "links") + " is a symbolic link",
		"links":   filepath.Join(base, "links") + " is a symbolic link",
		"file/x":  "not a directory",
	} {
		d, err := MkdirChosen(base, rel, "give -o DIR")
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "give -o DIR") {
			t.Errorf("%s: %v, want bad input with %q", rel, err, want)
		}
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("made through the link: %v", ents)
	}
}
