package proc

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A child started by a goroutine that then returns while locked to its
// thread (Go ends that thread; the kernel sends the child its parent-death
// signal when the forking thread exits) lives on: Start forks from a
// thread that lives as long as the process. Before, such a child was
// killed (a lab's nested QEMU, when the vsock server's thread ended).
func TestChildOutlivesLockedThread(t *testing.T) {
	type started struct {
		p   Process
		err error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread exits with the goroutine
		p, err := Real{}.Start(t.Context(), Cmd{Argv: []string{"sleep", "30"}})
		ch <- started{p, err}
	}()
	s := <-ch
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer s.p.Stop(syscall.SIGKILL, time.Second)
	select {
	case <-s.p.Done():
		t.Fatalf("the child died when the thread that started it ended: %v", s.p.Wait())
	case <-time.After(500 * time.Millisecond):
	}
}
