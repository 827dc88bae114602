package safefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Bounds of what vnetbench reads, by kind of input: each is far above any
// real input of its kind and far below the memory of a small machine.
const (
	// MaxToolOutput bounds a tool's output read whole (vnetbench parse,
	// a run's artifacts): iperf3's JSON of an hour at 0.1 s intervals is
	// about 30 MB.
	MaxToolOutput = 64 << 20
	// MaxResults bounds a run directory's results.jsonl: a million
	// samples of 1 KB.
	MaxResults = 1 << 30
	// MaxSmall bounds a small file of a run or the cache: env.json,
	// reproduce.sh, bisect.json, a scenario, a build's record.
	MaxSmall = 64 << 20
	// MaxCSV bounds a history CSV: 10,000 points of 100 metrics are
	// about 10 MB. Go's csv reader holds a long field several times over,
	// so this stays far below MaxResults.
	MaxCSV = 64 << 20
)

// TooLargeError is an input longer than its bound.
type TooLargeError struct {
	Name string
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: longer than %d MiB, more than any input of its kind; is it the right file?", e.Name, e.Max>>20)
}

// Is makes a TooLargeError bad input.
func (e *TooLargeError) Is(target error) bool { return target == fault.ErrInput }

// Reader is r cut at max bytes: reading past max returns a
// *TooLargeError naming name.
func Reader(r io.Reader, max int64, name string) io.Reader {
	return &limited{r: r, left: max, max: max, name: name}
}

type limited struct {
	r         io.Reader
	left, max int64
	name      string
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, &TooLargeError{l.name, l.max}
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n - 1, &TooLargeError{l.name, l.max}
	}
	return n, err
}

// ReadFile reads the file path (a path the user gave: a link there is
// followed) up to max bytes. A FIFO or a device is read as a stream, cut
// at max.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(Reader(f, max, path))
}

// Open opens the regular file name under the directory for reading,
// following no link (at name or on the way) and opening no FIFO or
// device.
func (d *Dir) Open(name string) (*os.File, error) {
	n, err := d.noLinks(name, true)
	if err != nil {
		return nil, err
	}
	f, err := d.root.OpenFile(n, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fault.Input("%s is not a regular file (a %v); remove it", d.Join(n), fi.Mode().Type())
	}
	return f, nil
}

// ReadFile reads the regular file name under the directory (as Open
// opens it), up to max bytes.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(Reader(f, max, d.Join(name)))
	if errors.Is(err, syscall.EAGAIN) {
		err = fmt.Errorf("read %s: %w", d.Join(name), err)
	}
	return b, err
}
