package perfkeys

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// Hold opens one event per software kind the kernel has, on this thread,
// and Release closes them all.
func TestHold(t *testing.T) {
	k, err := Hold()
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOENT) {
		testenv.Skipf(t, "perf events cannot be opened here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// page-faults, context-switches, cpu-migrations, minor and major
	// faults, alignment and emulation faults, dummy: every kernel since
	// 3.x has at least these.
	if k.Held() < 8 {
		t.Errorf("held %d events, want at least 8", k.Held())
	}
	fds := append([]int(nil), k.fds...)
	k.Release()
	if k.Held() != 0 {
		t.Errorf("still holds %d after Release", k.Held())
	}
	for _, fd := range fds {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			t.Errorf("fd %d still open", fd)
		}
	}
	var nilKeys *Keys
	nilKeys.Release() // no-op
}
