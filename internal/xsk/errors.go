package xsk

import (
	"errors"
	"fmt"

	"github.com/vnetbench/vnetbench/internal/fault"
	"golang.org/x/sys/unix"
)

var (
	// ErrUnsupported is a bind mode the kernel or driver refuses (a tap's
	// zero-copy on a stock kernel). It is a result for a cell ("n/a"),
	// not a harness failure. The error is an *UnsupportedError.
	ErrUnsupported = errors.New("unsupported")
	// ErrNoAFXDP is a kernel without AF_XDP sockets (EAFNOSUPPORT); it is
	// also a fault.ErrCapability.
	ErrNoAFXDP = errors.New("kernel has no AF_XDP sockets")
	// ErrInvalid is a configuration that cannot work: a frame size out
	// of range, a queue the device does not have, a device without a
	// reader. Its message says what to change; it is also a
	// fault.ErrInput.
	ErrInvalid = errors.New("invalid AF_XDP configuration")
)

// UnsupportedError is a bind the kernel refused for lack of support.
// Error() is the reason a report prints for the cell, e.g.
// "unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)".
type UnsupportedError struct {
	Mode   Mode
	Driver string // the device's driver ("tun" for a tap)
	Errno  unix.Errno
}

func (e *UnsupportedError) Error() string {
	what := "AF_XDP zero-copy"
	if e.Mode == Copy {
		what = "AF_XDP copy mode"
	}
	return fmt.Sprintf("unsupported (%s: this kernel's %s has no %s)", errnoName(e.Errno), e.Driver, what)
}

// errnoName is the errno's symbol; EOPNOTSUPP by that name (Linux gives
// ENOTSUP the same number, and unix.ErrnoName picks that one).
func errnoName(e unix.Errno) string {
	if e == unix.EOPNOTSUPP {
		return "EOPNOTSUPP"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Unwrap returns the errno.
func (e *UnsupportedError) Unwrap() error { return e.Errno }

// classError is one of this package's sentinels, in one of the module's
// classes (internal/fault), with its own message.
type classError struct {
	msg             string
	sentinel, class error
}

func (e *classError) Error() string        { return e.msg }
func (e *classError) Is(target error) bool { return target == e.sentinel || target == e.class }

func invalidf(format string, a ...any) error {
	return &classError{msg: fmt.Sprintf(format, a...), sentinel: ErrInvalid, class: fault.ErrInput}
}
