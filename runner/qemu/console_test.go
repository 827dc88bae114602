package qemu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
)

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// An unfinished line is kept only up to MaxConsoleLine (before, the
// watcher kept all of it: a guest printing without a newline grew the
// harness without bound), and the line, cut, comes out at its end.
func TestConsoleFileLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	appendTo(t, path, []byte("boot\n"))
	w := newConsoleWatch(path, time.Now())
	defer w.Close()
	if got := w.Poll(); len(got) != 1 || got[0] != "boot" {
		t.Fatalf("lines %q", got)
	}
	for range 16 {
		appendTo(t, path, bytes.Repeat([]byte("x"), 1<<20))
		if got := w.Poll(); len(got) != 0 {
			t.Fatalf("an unfinished line came out: %d lines", len(got))
		}
	}
	if held := len(w.file.part); held > MaxConsoleLine {
		t.Errorf("holds %d bytes of an unfinished line, want at most %d", held, MaxConsoleLine)
	}
	appendTo(t, path, []byte("\n[    1.000000] Kernel panic - not syncing: x\n"))
	got := w.Poll()
	if len(got) != 2 || len(got[0]) > MaxConsoleLine+64 || !strings.HasSuffix(got[0], fmt.Sprintf("[line of %d bytes cut]", 16<<20+1)) {
		t.Fatalf("%d lines, first %d bytes", len(got), len(got[0]))
	}
	if w.Fault == "" {
		t.Error("the fault line after the long line was not seen")
	}
}

// A log grown past ConsoleCap keeps its head and its tail on disk, with a
// note where the middle was; FileTail reads the end by seeking.
func TestConsoleFileCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	appendTo(t, path, []byte("first line\n"))
	c := NewConsoleFile(path)
	defer c.Close()
	c.Lines()
	line := []byte(strings.Repeat("y", 1023) + "\n")
	chunk := bytes.Repeat(line, 1024) // 1 MiB
	for range (ConsoleCap >> 20) + 8 {
		appendTo(t, path, chunk)
	}
	appendTo(t, path, []byte("last line\n"))
	lines := c.Lines()
	if len(lines) == 0 || lines[len(lines)-1] != "last line" {
		t.Fatalf("the last line was not read (%d lines)", len(lines))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if c.Dropped == 0 {
		t.Skipf("this file system has no holes (FALLOC_FL_PUNCH_HOLE): the log is not capped")
	}
	if disk := st.Blocks * 512; disk > ConsoleHead+ConsoleKeep+1<<20 {
		t.Errorf("the log uses %d bytes on disk after the cap, want about %d", disk, ConsoleHead+ConsoleKeep)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("first line\n")) || !bytes.Contains(b[:ConsoleHead+8192], []byte("[vnetbench: console output from byte")) {
		t.Error("the head or the note is missing")
	}
	if got := FileTail(path, 2); got != strings.TrimSpace(string(line))+"\nlast line" {
		t.Errorf("FileTail = %.80q", got)
	}
}

// FileTail reads only the end of a file (before, the whole log: a guest
// could make the harness read gigabytes to quote 20 lines).
func TestFileTailSeeks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(256 << 20) // sparse
	f.WriteAt([]byte("\nend\n"), 256<<20)
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := FileTail(path, 3)
	runtime.ReadMemStats(&after)
	if got != "end" {
		t.Errorf("FileTail = %q", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("FileTail allocated %d bytes for a 256 MiB file", alloc)
	}
}

// What errors quote from a console is clipped to about fault.MaxQuote: a
// fault line and the tail's lines (before, a 60 KiB line went whole into
// the error, and with it into results.jsonl).
func TestConsoleQuotesClipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	long := "[    1.000000] Kernel panic - not syncing: " + strings.Repeat("z", 60<<10)
	appendTo(t, path, []byte(long+"\n"))
	w := newConsoleWatch(path, time.Now())
	defer w.Close()
	w.Poll()
	if w.Fault == "" || len(w.Fault) > fault.MaxQuote+64 {
		t.Errorf("fault line of %d bytes", len(w.Fault))
	}
	if tail := FileTail(path, 5); len(tail) > fault.MaxQuote+64 || !strings.HasPrefix(tail, "[    1.000000] Kernel panic") {
		t.Errorf("tail of %d bytes", len(tail))
	}
}
