package proc

import (
	"os/exec"
	"runtime"
	"sync"
)

// The parent-death signal (Pdeathsig, which every child here gets so it
// dies with the harness) is tied to the thread that forked the child, not
// to the process: the kernel sends it when that thread exits. Go ends the
// thread of a goroutine that returns while locked with
// runtime.LockOSThread (netns helpers, the vsock server, AF_XDP workers
// do so on purpose), so a child forked by whatever goroutine last ran on
// that thread was killed with SIGKILL at a random later moment: a lab's
// nested guest QEMU died in the middle of a vsock cell when the host's
// vsock server thread ended. Children are therefore forked from one
// thread that never exits.
var spawner struct {
	once sync.Once
	req  chan func()
}

// onSpawner runs f on the spawning thread and returns when it is done.
func onSpawner(f func()) {
	spawner.once.Do(func() {
		spawner.req = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range spawner.req {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawner.req <- func() {
		defer close(done)
		f()
	}
	<-done
}

// StartCmd starts cmd (cmd.Start) from a thread that lives as long as the
// process, so a Pdeathsig in cmd.SysProcAttr fires only when the process
// ends. Every child with a Pdeathsig must be started with it.
func StartCmd(cmd *exec.Cmd) error {
	var err error
	onSpawner(func() { err = cmd.Start() })
	return err
}
