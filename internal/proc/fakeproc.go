package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// FakeProc writes a /proc tree for tests of thread discovery: processes
// with named threads and kernel threads with start times, as a kernel
// other than the running one shows them. Its FS reads it.
type FakeProc struct {
	Root string
	err  error
}

// NewFakeProc returns a FakeProc writing under dir (which must exist).
func NewFakeProc(dir string) *FakeProc { return &FakeProc{Root: dir} }

// FS is the tree as an FS.
func (f *FakeProc) FS() FS { return FS{Root: f.Root} }

// Err is the first error writing the tree.
func (f *FakeProc) Err() error { return f.err }

func (f *FakeProc) write(path, content string) {
	if f.err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.err = err
		return
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		f.err = err
	}
}

// stat is a /proc/PID/stat line (52 fields as Linux 6.x prints them)
// with the fields the harness reads set.
func stat(pid int, comm string, ppid int, ticks, start uint64) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 0 0 0 0 %d 0 0 0 20 0 1 0 %d 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, ppid, pid, pid, ticks, start)
}

// Process adds a process pid named comm (a child of init) with threads
// (the first one is normally the main thread, tid == pid).
func (f *FakeProc) Process(pid int, comm string, threads ...Thread) {
	dir := filepath.Join(f.Root, strconv.Itoa(pid))
	f.write(filepath.Join(dir, "stat"), stat(pid, comm, 1, 0, 1000))
	f.write(filepath.Join(dir, "comm"), comm+"\n")
	for _, t := range threads {
		td := filepath.Join(dir, "task", strconv.Itoa(t.TID))
		f.write(filepath.Join(td, "comm"), t.Name+"\n")
		f.write(filepath.Join(td, "stat"), stat(t.TID, t.Name, 1, 0, 1000))
	}
}

// KernelThread adds a kernel thread (a child of kthreadd, pid 2) named
// comm, started start clock ticks after boot, having used ticks of CPU.
func (f *FakeProc) KernelThread(pid int, comm string, start, ticks uint64) {
	dir := filepath.Join(f.Root, strconv.Itoa(pid))
	f.write(filepath.Join(dir, "stat"), stat(pid, comm, 2, ticks, start))
	f.write(filepath.Join(dir, "comm"), comm+"\n")
	f.write(filepath.Join(dir, "task", strconv.Itoa(pid), "comm"), comm+"\n")
}
