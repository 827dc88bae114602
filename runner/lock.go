package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"golang.org/x/sys/unix"
)

// DefaultLockPath is the host lock that keeps two runs from measuring at
// the same time.
const DefaultLockPath = "/run/vnetbench.lock"

// BusyError means another run holds the host lock: the host cannot
// measure now (class fault.ErrCapability).
type BusyError struct {
	Path  string
	Owner string
	// Waited is how long AcquireLockWait waited (its wait, --lock-wait);
	// 0 when it failed at once.
	Waited time.Duration
}

func (e *BusyError) Error() string {
	msg := fmt.Sprintf("another vnetbench run (pid %s) is measuring on this host (lock %s)", e.Owner, e.Path)
	if e.Waited > 0 {
		return fmt.Sprintf("%s, still after --lock-wait %s; wait longer or for it to finish", msg, e.Waited)
	}
	return msg + "; wait for it to finish, or pass --lock-wait 10m to wait here"
}

// Is makes a busy host a missing capability (errors.Is(err,
// fault.ErrCapability)).
func (e *BusyError) Is(target error) bool { return target == fault.ErrCapability }

// Lock is a held host lock.
type Lock struct{ f *os.File }

// AcquireLock takes an exclusive flock on path without waiting.
func AcquireLock(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("host lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &BusyError{Path: path, Owner: strings.TrimSpace(string(b))}
		}
		return nil, fmt.Errorf("host lock %s: %w", path, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &Lock{f: f}, nil
}

// AcquireLockWait is AcquireLock retried every half second for up to wait
// while another run holds the lock (0 = fail at once).
func AcquireLockWait(ctx context.Context, path string, wait time.Duration) (*Lock, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := AcquireLock(path)
		var be *BusyError
		if err == nil || !errors.As(err, &be) {
			return l, err
		}
		if time.Now().After(deadline) {
			be.Waited = wait
			return nil, be
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
