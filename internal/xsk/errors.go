package xsk

import (
	"errors"
	"fmt"

	"github.com/vnetbench/vnetbench/internal/fault"
	"golang.org/x/sys/unix"
)

var (
	// ErrNoAFXDP is a kernel without AF_XDP sockets (EAFNOSUPPORT); it is
	// also a fault.ErrCapability.
	ErrNoAFXDP = errors.New("kernel has no AF_XDP sockets")
	// ErrInvalid is a configuration that cannot work: a frame size out
	// of range, a queue the device does not have, a device without a
	// reader. Its message says what to change; it is also a
	// fault.ErrInput.
	ErrInvalid = errors.New("invalid AF_XDP configuration")
)

// UnsupportedError is a bind the kernel refused for lack of support. Its
// NotSupported method makes it a refused configuration to the workloads
// (workload.IsUnsupported: the cell is n/a), which print the reason, e.g.
// "unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)".
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return "not supported: " + e.Reason }

// NotSupported is the reason.
func (e *UnsupportedError) NotSupported() string { return e.Reason }

// unsupported is the *UnsupportedError of a bind in mode m that the
// kernel refused with errno.
func unsupported(m Mode, driver string, errno unix.Errno) error {
	what := "AF_XDP zero-copy"
	if m == Copy {
		what = "AF_XDP copy mode"
	}
	return &UnsupportedError{Reason: fmt.Sprintf("unsupported (%s: this kernel's %s has no %s)", errnoName(errno), driver, what)}
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
