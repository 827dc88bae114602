// Package cpio writes and reads the "newc" (SVR4, magic 070701) cpio format
// that the Linux kernel unpacks as an initramfs.
//
// The Writer is reproducible by construction: every entry gets mtime 0, uid
// and gid 0, one link, device 0 and an inode number counted from 1 in write
// order. Callers that want identical bytes for identical inputs add entries in
// a fixed (sorted) order; Archive does that for them. The package does not
// compress, and the reader only understands newc (not the crc or odc forms).
package cpio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Mode bits of the cpio header (the same values as the stat(2) S_IF* bits).
const (
	TypeDir     = 0o040000
	TypeRegular = 0o100000
	TypeSymlink = 0o120000
	TypeChar    = 0o020000
	typeMask    = 0o170000
)

// Entry is one archive member. Mode holds the type bits and permissions.
// For symlinks Data is the link target; for directories it is empty.
// Rmajor and Rminor are the device numbers of a character device node.
type Entry struct {
	Name   string
	Mode   uint32
	Data   []byte
	Rmajor uint32
	Rminor uint32
}

// IsDir reports whether e is a directory.
func (e Entry) IsDir() bool { return e.Mode&typeMask == TypeDir }

const trailer = "TRAILER!!!"

// Writer writes newc entries with fixed metadata.
type Writer struct {
	w     io.Writer
	n     int64
	ino   uint32
	err   error
	close bool
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write adds e. Names are stored without a leading "/".
func (w *Writer) Write(e Entry) error {
	if w.err != nil {
		return w.err
	}
	if w.close {
		return errors.New("cpio: write after close")
	}
	name := strings.TrimPrefix(e.Name, "/")
	if name == "" || name == trailer {
		return fmt.Errorf("cpio: invalid entry name %q", e.Name)
	}
	w.ino++
	w.err = w.entry(w.ino, name, e.Mode, e.Rmajor, e.Rminor, e.Data)
	return w.err
}

func (w *Writer) entry(ino uint32, name string, mode, rmaj, rmin uint32, data []byte) error {
	nlink := uint32(1)
	if mode&typeMask == TypeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmaj, rmin, len(name)+1, 0)
	if err := w.raw([]byte(hdr)); err != nil {
		return err
	}
	if err := w.raw(append([]byte(name), 0)); err != nil {
		return err
	}
	if err := w.pad(); err != nil {
		return err
	}
	if err := w.raw(data); err != nil {
		return err
	}
	return w.pad()
}

func (w *Writer) raw(b []byte) error {
	n, err := w.w.Write(b)
	w.n += int64(n)
	return err
}

func (w *Writer) pad() error {
	if r := w.n % 4; r != 0 {
		return w.raw(make([]byte, 4-r))
	}
	return nil
}

// Close writes the trailer. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.close {
		return nil
	}
	w.close = true
	w.err = w.entry(0, trailer, 0, 0, 0, nil)
	return w.err
}

// Archive is a set of entries written in sorted name order, with every
// parent directory created (mode 0755) when not given explicitly.
type Archive struct {
	entries map[string]Entry
}

// Add records e, replacing an earlier entry of the same name.
func (a *Archive) Add(e Entry) {
	if a.entries == nil {
		a.entries = map[string]Entry{}
	}
	e.Name = strings.Trim(e.Name, "/")
	a.entries[e.Name] = e
	for dir := parent(e.Name); dir != ""; dir = parent(dir) {
		if _, ok := a.entries[dir]; !ok {
			a.entries[dir] = Entry{Name: dir, Mode: TypeDir | 0o755}
		}
	}
}

// AddFile records a regular file.
func (a *Archive) AddFile(name string, perm fs.FileMode, data []byte) {
	a.Add(Entry{Name: name, Mode: TypeRegular | uint32(perm.Perm()), Data: data})
}

// AddDir records a directory.
func (a *Archive) AddDir(name string, perm fs.FileMode) {
	a.Add(Entry{Name: name, Mode: TypeDir | uint32(perm.Perm())})
}

// AddSymlink records a symbolic link name -> target.
func (a *Archive) AddSymlink(name, target string) {
	a.Add(Entry{Name: name, Mode: TypeSymlink | 0o777, Data: []byte(target)})
}

// AddCharDev records a character device node.
func (a *Archive) AddCharDev(name string, perm fs.FileMode, major, minor uint32) {
	a.Add(Entry{Name: name, Mode: TypeChar | uint32(perm.Perm()), Rmajor: major, Rminor: minor})
}

// Names returns the entry names in write order.
func (a *Archive) Names() []string {
	names := make([]string, 0, len(a.entries))
	for n := range a.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WriteTo writes the archive, trailer included, to w.
func (a *Archive) WriteTo(w io.Writer) (int64, error) {
	cw := NewWriter(w)
	for _, n := range a.Names() {
		if err := cw.Write(a.entries[n]); err != nil {
			return cw.n, err
		}
	}
	err := cw.Close()
	return cw.n, err
}

func parent(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// Read parses a newc archive and returns its entries up to the trailer.
func Read(r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	var off int64
	var out []Entry
	read := func(n int64) ([]byte, error) {
		b := make([]byte, n)
		_, err := io.ReadFull(br, b)
		off += n
		return b, err
	}
	skipPad := func() error {
		if r := off % 4; r != 0 {
			_, err := read(4 - r)
			return err
		}
		return nil
	}
	for {
		hdr, err := read(110)
		if err != nil {
			return out, fmt.Errorf("cpio: header at offset %d: %w", off-110, err)
		}
		if string(hdr[:6]) != "070701" {
			return out, fmt.Errorf("cpio: bad magic %q at offset %d (only newc is supported)", hdr[:6], off-110)
		}
		field := func(i int) (uint32, error) {
			v, err := strconv.ParseUint(string(hdr[6+8*i:14+8*i]), 16, 32)
			return uint32(v), err
		}
		var f [13]uint32
		for i := range f {
			if f[i], err = field(i); err != nil {
				return out, fmt.Errorf("cpio: bad header field %d at offset %d: %w", i, off-110, err)
			}
		}
		if f[11] == 0 || f[11] > 4096 || f[6] > 1<<30 {
			return out, fmt.Errorf("cpio: implausible header at offset %d", off-110)
		}
		nb, err := read(int64(f[11]))
		if err != nil {
			return out, fmt.Errorf("cpio: name: %w", err)
		}
		name := strings.TrimRight(string(nb), "\x00")
		if err := skipPad(); err != nil {
			return out, err
		}
		data, err := read(int64(f[6]))
		if err != nil {
			return out, fmt.Errorf("cpio: data of %s: %w", name, err)
		}
		if err := skipPad(); err != nil {
			return out, err
		}
		if name == trailer {
			return out, nil
		}
		out = append(out, Entry{Name: name, Mode: f[1], Data: data, Rmajor: f[9], Rminor: f[10]})
	}
}
