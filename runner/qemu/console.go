package qemu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"golang.org/x/sys/unix"
)

// A guest's console log is written by QEMU (-chardev file), as fast as the
// guest prints; the harness, running as root, must not hold or keep
// whatever a misbehaving guest prints. These bound it.
const (
	// MaxConsoleLine bounds a console line the harness keeps; the rest
	// of a longer line is read and discarded.
	MaxConsoleLine = 64 << 10
	// ConsoleCap is the console log's size above which a follower
	// (ConsoleFile) drops its middle: the file keeps its first
	// ConsoleHead bytes (the boot) and its last ConsoleKeep bytes (what
	// led to the end), the rest becomes a hole (no disk space) whose
	// start holds a line saying what was dropped.
	ConsoleCap  = 32 << 20
	ConsoleHead = 1 << 20
	ConsoleKeep = 8 << 20
	// consoleTailRead is how much of the log's end FileTail reads.
	consoleTailRead = 64 << 10
)

// ConsoleFile follows a console log that QEMU appends to (it may not exist
// yet): Lines returns the complete lines appended since the last call,
// each cut at MaxConsoleLine, and keeps the file under about ConsoleCap
// bytes on disk.
type ConsoleFile struct {
	path string
	f    *os.File
	rd   *bufio.Reader
	pos  int64 // file offset of the next byte rd returns
	part []byte
	// partLen is the unfinished line's length so far (part holds at most
	// MaxConsoleLine of it).
	partLen int
	// Dropped is how many bytes the cap has dropped so far.
	Dropped int64
}

// NewConsoleFile follows path.
func NewConsoleFile(path string) *ConsoleFile { return &ConsoleFile{path: path} }

// Lines reads what was appended since the last call and returns its
// complete lines (without line ends); an unfinished last line waits for
// its end. It then caps the file (capFile).
func (c *ConsoleFile) Lines() []string {
	if c.f == nil {
		// Read-write: capFile punches the middle out. No link is followed.
		f, err := os.OpenFile(c.path, os.O_RDWR|unix.O_NOFOLLOW, 0)
		if err != nil {
			if f, err = os.OpenFile(c.path, os.O_RDONLY|unix.O_NOFOLLOW, 0); err != nil {
				return nil
			}
		}
		c.f, c.rd = f, bufio.NewReaderSize(f, 64<<10)
	}
	var lines []string
	for {
		frag, err := c.rd.ReadSlice('\n')
		c.pos += int64(len(frag))
		if room := MaxConsoleLine - len(c.part); room > 0 {
			c.part = append(c.part, frag[:min(len(frag), room)]...)
		}
		c.partLen += len(frag)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break
		}
		line := strings.TrimRight(string(c.part), "\r\n")
		if c.partLen > MaxConsoleLine {
			line += fmt.Sprintf(" [line of %d bytes cut]", c.partLen)
		}
		c.part, c.partLen = c.part[:0], 0
		lines = append(lines, line)
	}
	c.capFile()
	return lines
}

// capFile drops the middle of a log grown past ConsoleCap: it punches a
// hole (FALLOC_FL_PUNCH_HOLE: QEMU keeps writing at its own offset, the
// file's size stays) from ConsoleHead to ConsoleKeep before the end,
// writes a note at the hole's start, and skips the reader past the hole.
// On a file system without holes it does nothing.
func (c *ConsoleFile) capFile() {
	fi, err := c.f.Stat()
	if err != nil || fi.Size() <= ConsoleCap {
		return
	}
	const block = 4096
	start := int64(ConsoleHead+block-1) / block * block
	end := (fi.Size() - ConsoleKeep) / block * block
	if end-start < 2*block {
		return
	}
	if err := unix.Fallocate(int(c.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, start, end-start); err != nil {
		return
	}
	// Every punch starts at the same place: the hole is all that was
	// dropped.
	c.Dropped = end - start
	note := fmt.Sprintf("\n[vnetbench: console output from byte %d to %d dropped; the log keeps its first %d MiB and last %d MiB]\n",
		start, end, ConsoleHead>>20, ConsoleKeep>>20)
	c.f.WriteAt([]byte(note), start)
	if c.pos < end {
		if _, err := c.f.Seek(end, io.SeekStart); err == nil {
			c.rd.Reset(c.f)
			c.pos = end
			c.part, c.partLen = c.part[:0], 0
		}
	}
}

// Offset is the file offset up to which Lines has read: it moves when
// the console grew.
func (c *ConsoleFile) Offset() int64 { return c.pos }

// Close closes the file.
func (c *ConsoleFile) Close() {
	if c.f != nil {
		c.f.Close()
	}
}

// FileTail returns the last n non-empty lines of a file ("" if
// unreadable), reading only its last 64 KiB, each line clipped to about
// 1 KiB (fault.Clip): a tail is quoted in errors. NUL bytes (a capped
// log's hole) are dropped.
func FileTail(path string, n int) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return ""
	}
	off := max(size-consoleTailRead, 0)
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	b = bytes.ReplaceAll(b, []byte{0}, nil)
	var lines []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if s := strings.TrimRight(string(l), "\r \t"); s != "" {
			lines = append(lines, fault.Clip(s))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
