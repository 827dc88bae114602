package results

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A run directory can hold names a process other than this one planted
// (a lab VM writes into its part of the run directory; a directory given
// with -o may not be new). Nothing here follows a symbolic link at a name
// of the layout: fixed names open with O_NOFOLLOW, whole files are written
// through a new temporary file and a rename, and directories are made one
// component at a time, each checked to be a directory.

// OpenNoFollow opens path like os.OpenFile with O_NOFOLLOW added: a
// symbolic link at path is an error, not followed.
func OpenNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link; the run directory's files must be plain files (remove it)", path)
	}
	return f, err
}

// ReadFileNoFollow reads path without following a symbolic link there.
func ReadFileNoFollow(path string) ([]byte, error) {
	f, err := OpenNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFileAtomic writes data to dir/name through a new temporary file in
// dir (created exclusively: a planted name is never followed) renamed over
// name (which replaces a symbolic link there, not its target).
func WriteFileAtomic(dir, name string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// MkdirNoFollow makes base/rel (rel relative, clean) one component at a
// time: each that exists must be a directory, not a symbolic link.
func MkdirNoFollow(base, rel string) error {
	p := base
	for _, c := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			return fmt.Errorf("directory %s leaves %s", rel, base)
		}
		p = filepath.Join(p, c)
		err := os.Mkdir(p, 0o755)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, lerr := os.Lstat(p)
		if lerr != nil {
			return lerr
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory (a %v); the run directory's directories must be plain directories (remove it)", p, fi.Mode().Type())
		}
	}
	return nil
}
