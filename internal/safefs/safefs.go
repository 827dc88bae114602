// Package safefs is how vnetbench, which runs as root, writes under a
// directory it was given: a run directory, a merge's or a bisection's
// output directory, the directory of a report file. Every write goes
// through a Dir, an os.Root on that directory, so no name under it leads
// a write outside it, whatever was planted there before (a run resumed with
// --resume, a pre-made -o, a lab VM's part of the run directory that the
// kernel under test can write). On top of os.Root, which follows a link
// that stays inside the root, a Dir writes through no symbolic link at
// all: a link at a directory on the way, or at a file it appends to, is
// refused (bad input: remove it); a file written whole replaces a link at
// its name (a new file renamed over it), never its target.
//
// The directory itself is the caller's: the path given on the command
// line is followed as the user wrote it. The package also bounds reads
// (ReadFile, Reader): no input file, however large or endless (/dev/zero,
// a FIFO), makes vnetbench read more than its kind can hold.
//
// It does not decide what is written, nor where the run directory's
// files live (internal/results owns the layout).
package safefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Dir is a directory that writes stay under.
type Dir struct {
	root *os.Root
	path string
}

// Open opens the existing directory path.
func Open(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r, path: path}, nil
}

// MkdirAll makes the directory path (the caller's: a link in it is
// followed as given) and opens it.
func MkdirAll(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	return Open(path)
}

// Path is the directory's path as opened.
func (d *Dir) Path() string { return d.path }

// Join is the path of name under the directory, for messages and for
// programs that take a path.
func (d *Dir) Join(name string) string { return filepath.Join(d.path, name) }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// LinkError is a symbolic link where a Dir writes.
type LinkError struct{ Path string }

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link; vnetbench writes nothing through a link (remove it)", e.Path)
}

// Is makes a LinkError bad input.
func (e *LinkError) Is(target error) bool { return target == fault.ErrInput }

// clean checks name: relative, inside the directory, slash-separated.
func (d *Dir) clean(name string) (string, error) {
	n := path.Clean(filepath.ToSlash(name))
	if n == "." || n == ".." || strings.HasPrefix(n, "../") || path.IsAbs(n) {
		return "", fault.Input("%s is not a name under %s", name, d.path)
	}
	return n, nil
}

// noLinks checks that no existing component of name is a symbolic link
// (the last one too when last). It returns the cleaned name.
func (d *Dir) noLinks(name string, last bool) (string, error) {
	n, err := d.clean(name)
	if err != nil {
		return "", err
	}
	parts := strings.Split(n, "/")
	if !last {
		parts = parts[:len(parts)-1]
	}
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := d.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return n, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", &LinkError{d.Join(p)}
		}
	}
	return n, nil
}

// MkdirAll makes name and its parents under the directory; each that
// exists must be a directory, not a link.
func (d *Dir) MkdirAll(name string) error {
	n, err := d.noLinks(name, true)
	if err != nil {
		return err
	}
	parts := strings.Split(n, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		err := d.root.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			fi, lerr := d.root.Lstat(p)
			switch {
			case lerr != nil:
				return lerr
			case fi.Mode()&fs.ModeSymlink != 0:
				return &LinkError{d.Join(p)}
			case !fi.IsDir():
				return fault.Input("%s is not a directory (a %v); remove it", d.Join(p), fi.Mode().Type())
			}
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Sub makes name (MkdirAll) and opens it as a Dir of its own.
func (d *Dir) Sub(name string) (*Dir, error) {
	if err := d.MkdirAll(name); err != nil {
		return nil, err
	}
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r, path: d.Join(name)}, nil
}

// WriteFile writes name whole: a new temporary file beside it, renamed
// over it. A link at name is replaced, not followed; its parents are made
// as MkdirAll makes them.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return d.write(name, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith writes name whole as WriteFile does, from what fill writes.
func (d *Dir) WriteWith(name string, perm fs.FileMode, fill func(io.Writer) error) error {
	return d.write(name, perm, fill)
}

func (d *Dir) write(name string, perm fs.FileMode, fill func(io.Writer) error) error {
	n, err := d.clean(name)
	if err != nil {
		return err
	}
	if dir := path.Dir(n); dir != "." {
		if err := d.MkdirAll(dir); err != nil {
			return err
		}
	}
	f, tmp, err := d.createTemp(n)
	if err != nil {
		return fmt.Errorf("write %s: %w", d.Join(n), err)
	}
	err = fill(f)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.root.Rename(tmp, n)
	}
	if err != nil {
		d.root.Remove(tmp)
		return fmt.Errorf("write %s: %w", d.Join(n), err)
	}
	return nil
}

// createTemp makes a new file beside name (O_EXCL: never an existing one).
func (d *Dir) createTemp(name string) (*os.File, string, error) {
	dir, base := path.Split(name)
	for i := 0; ; i++ {
		tmp := fmt.Sprintf("%s.%s.tmp-%d-%d", dir, base, os.Getpid(), i)
		f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			continue
		}
		return f, tmp, err
	}
}

// Create makes name as a new, empty file (O_EXCL: an existing file or
// link there is an error); its parents are made as MkdirAll makes them.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	n, err := d.clean(name)
	if err != nil {
		return nil, err
	}
	if dir := path.Dir(n); dir != "." {
		if err := d.MkdirAll(dir); err != nil {
			return nil, err
		}
	}
	return d.root.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// CopyMode is how Copy writes its copy.
type CopyMode int

const (
	// CopyNew makes the copy a new file, as Create does: an existing file
	// or link at its name is an error.
	CopyNew CopyMode = iota
	// CopyReplace writes the copy whole over what is at its name, as
	// WriteWith does: a reader of the name finds the old file or the new
	// one, never a part.
	CopyReplace
)

// Copy copies the regular file name of src (opened as src.Open opens
// it) to dst under d, with perm, as mode says. A function of two Dirs,
// not a method: it reads one and writes the other.
func Copy(d *Dir, dst string, src *Dir, name string, perm fs.FileMode, mode CopyMode) error {
	f, err := src.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if mode == CopyReplace {
		return d.WriteWith(dst, perm, func(w io.Writer) error {
			_, err := io.Copy(w, f)
			return err
		})
	}
	o, err := d.Create(dst, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, f); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// Append opens name to append to, creating it with perm; a link there or
// on the way is refused.
func (d *Dir) Append(name string, perm fs.FileMode) (*os.File, error) {
	n, err := d.noLinks(name, true)
	if err != nil {
		return nil, err
	}
	return d.root.OpenFile(n, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
}

// OpenFile opens name with flag (O_RDWR to cut a torn line, say); a
// link there or on the way is refused.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	n, err := d.noLinks(name, true)
	if err != nil {
		return nil, err
	}
	return d.root.OpenFile(n, flag, perm)
}

// RemoveAll removes name and what is under it (a link there is removed,
// not followed); a link among its parents is refused.
func (d *Dir) RemoveAll(name string) error {
	n, err := d.noLinks(name, false)
	if err != nil {
		return err
	}
	return d.root.RemoveAll(n)
}

// RemoveOwn removes name, which vnetbench itself writes under the
// directory, with what is under it; an absent name is no error. It is
// the one way a fixed name is removed from a directory that is
// vnetbench's own, and the caller proves both halves of that: the
// directory is its own (a run directory, made new or empty by
// results.Create, which writes results.jsonl there with O_EXCL, and
// resumed only while it holds that file; or a directory vnetbench made
// under one) and name is one vnetbench writes there. What RemoveOwn
// proves is that the removal stays on that name: a symbolic link on the
// way to it is refused (a LinkError) and left as it is; a link at name,
// planted where vnetbench writes a file of its own, is removed, never
// followed, so its target is untouched and the run writes its own file
// there (cmd/vnetbench's TestRunWritesThroughNoLinkE2E). Links inside a
// directory it removes are removed, not followed. A function, not a
// method: a Dir has its share of them.
func RemoveOwn(d *Dir, name string) error {
	n, err := d.noLinks(name, false)
	if err != nil {
		return err
	}
	return d.root.RemoveAll(n)
}

// Rename renames oldname to newname, both under the directory.
func (d *Dir) Rename(oldname, newname string) error {
	o, err := d.noLinks(oldname, false)
	if err != nil {
		return err
	}
	n, err := d.noLinks(newname, false)
	if err != nil {
		return err
	}
	return d.root.Rename(o, n)
}

// Lstat describes name without following a link there.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	n, err := d.clean(name)
	if err != nil {
		return nil, err
	}
	return d.root.Lstat(n)
}

// ReadDir lists the directory name (no link on the way).
func (d *Dir) ReadDir(name string) ([]fs.DirEntry, error) {
	n := "."
	if name != "." {
		var err error
		if n, err = d.noLinks(name, true); err != nil {
			return nil, err
		}
	}
	f, err := d.root.Open(n)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// NoLink refuses a symbolic link at any of paths (the last component):
// for files a library opens by name, such as SQLite's database and the
// journals it makes beside it, which it would follow.
func NoLink(paths ...string) error {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &LinkError{p}
		}
	}
	return nil
}

// ChosenLink refuses a symbolic link at any existing component of rel,
// the part of a path that vnetbench chose by default (runs/NAME under
// the working directory, vnetbench under the cache home): base, the
// user's, is followed as given, but a link there in what vnetbench chose
// is no one's choice, and root would write through it. fix says how to
// give the path instead (the flag or variable). A component that does
// not exist ends the check: what vnetbench makes there is no link. Any
// other error reading a component (a file where a directory should be,
// no permission) is bad input too, with Lstat's error wrapped.
func ChosenLink(base, rel, fix string) error {
	p, full := base, filepath.Join(base, rel)
	for _, c := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fault.Input("%w, on the way to %s, which vnetbench chose by default: %s, or make %s a directory", err, full, fix, filepath.Dir(p))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(p)
			what := "a path"
			if full != p {
				what = "on the way to " + full + ","
			}
			return fault.Input("%s is a symbolic link (to %s), %s which vnetbench chose by default; it writes nothing through a link it chose: %s, or remove the link", p, to, what, fix)
		}
	}
	return nil
}

// MkdirChosen makes the directory rel under base, the part of its path
// vnetbench chose by default (as ChosenLink checks it), and opens it,
// with no time between a check and the making: each component is made
// (mkdirat; one already there is used) and opened relative to the last
// with O_NOFOLLOW, so a link at any component, put there before or while
// it runs, is refused as ChosenLink refuses it (bad input), never
// followed. The Dir returned, opened by its path, is checked to be the
// directory that walk reached (the same device and inode).
func MkdirChosen(base, rel, fix string) (*Dir, error) {
	full := filepath.Join(base, rel)
	fd, err := syscall.Open(base, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	p := base
	for _, c := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		p = filepath.Join(p, c)
		if err := syscall.Mkdirat(fd, c, 0o755); err != nil && err != syscall.EEXIST {
			syscall.Close(fd)
			return nil, chosenError(base, rel, fix, p, err)
		}
		next, err := syscall.Openat(fd, c, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		syscall.Close(fd)
		if err != nil {
			return nil, chosenError(base, rel, fix, p, err)
		}
		fd = next
	}
	defer syscall.Close(fd)
	var made syscall.Stat_t
	if err := syscall.Fstat(fd, &made); err != nil {
		return nil, err
	}
	d, err := Open(full)
	if err != nil {
		return nil, chosenError(base, rel, fix, full, err)
	}
	if !sameFile(d, &made) {
		d.Close()
		return nil, chosenError(base, rel, fix, full, errors.New("it is not the directory just made there (it changed meanwhile)"))
	}
	return d, nil
}

// sameFile reports whether d is the directory st describes.
func sameFile(d *Dir, st *syscall.Stat_t) bool {
	fi, err := d.root.Stat(".")
	if err != nil {
		return false
	}
	s, ok := fi.Sys().(*syscall.Stat_t)
	return ok && s.Dev == st.Dev && s.Ino == st.Ino
}

// chosenError is MkdirChosen's error at p: ChosenLink's, which names a
// link or a file on the way, or else err with what to do.
func chosenError(base, rel, fix, p string, err error) error {
	if cerr := ChosenLink(base, rel, fix); cerr != nil {
		return cerr
	}
	return fault.Input("%s: %v, on the way to %s, which vnetbench chose by default: %s", p, err, filepath.Join(base, rel), fix)
}

// OwnFile is the file that proves a directory is vnetbench's: written in
// it when vnetbench makes it (MkdirOwn, MarkOwn), checked before it is
// removed (RemoveOwnDir). It says what the directory is, one line, so a
// directory of one kind never passes for another. A temporary directory
// of internal/ledger holds the same file, naming its ledger.
const OwnFile = ".vnetbench-owner"

// MkdirOwn makes name under d, new (an existing entry there is an
// error, fs.ErrExist), and writes its OwnFile saying what.
func MkdirOwn(d *Dir, name, what string) error {
	n, err := d.noLinks(name, false)
	if err != nil {
		return err
	}
	if err := d.root.Mkdir(n, 0o755); err != nil {
		return err
	}
	return MarkOwn(d, n, what)
}

// MarkOwn writes the OwnFile saying what into name under d: a directory
// this process has just made new, through a program (git worktree add
// makes its directory itself), or one MkdirOwn made whose OwnFile a copy
// into it may have replaced. The caller proves the directory new; MarkOwn
// only refuses a link at name or on the way.
func MarkOwn(d *Dir, name, what string) error {
	n, err := d.noLinks(name, true)
	if err != nil {
		return err
	}
	return d.WriteFile(path.Join(n, OwnFile), []byte(what+"\n"), 0o644)
}

// NotOwnError is something at a name vnetbench would remove that does not
// prove itself vnetbench's (no OwnFile saying what it is): it is left as
// it is, for the user to move or remove.
type NotOwnError struct {
	Path string
	Why  string // "it is a symbolic link (to /x)", "it has no .vnetbench-owner"
}

func (e *NotOwnError) Error() string {
	return fmt.Sprintf("%s is in the way and not provably vnetbench's (%s); vnetbench removes only what it made: remove or move it by hand", e.Path, e.Why)
}

// Is makes a NotOwnError bad input.
func (e *NotOwnError) Is(target error) bool { return target == fault.ErrInput }

// RemoveOwnDir removes the directory name under d, with what is under
// it, when its OwnFile (a regular file, no link) says what; an absent
// name is no error. Anything else at name (a symbolic link, which is
// neither followed nor removed, a file, a directory without that
// OwnFile) stays, and is a *NotOwnError; a link on the way to name is a
// LinkError. Links inside the directory are removed, not followed.
func RemoveOwnDir(d *Dir, name, what string) error {
	n, err := d.noLinks(name, false)
	if err != nil {
		return err
	}
	fi, err := d.root.Lstat(n)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		to, _ := d.root.Readlink(n)
		return &NotOwnError{d.Join(n), fmt.Sprintf("it is a symbolic link (to %s)", to)}
	case !fi.IsDir():
		return &NotOwnError{d.Join(n), fmt.Sprintf("it is a %v, not a directory", fi.Mode().Type())}
	}
	b, err := d.ReadFile(path.Join(n, OwnFile), 4096)
	if err != nil {
		return &NotOwnError{d.Join(n), "it has no " + OwnFile + " that vnetbench wrote"}
	}
	if got := strings.TrimSpace(string(b)); got != what {
		return &NotOwnError{d.Join(n), fmt.Sprintf("its %s says %q, not %q", OwnFile, got, what)}
	}
	return d.root.RemoveAll(n)
}
