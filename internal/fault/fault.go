// Package fault classifies errors for the whole module: bad input (a
// scenario, a flag, a file, a configuration) and a capability the host or
// kernel lacks. Libraries return errors of these classes; only cmd maps a
// class to an exit code (0 ok, 1 measured failure or gate tripped, 2 bad
// input or missing capability), so no library knows the CLI's policy.
//
// Errors that carry more than a message (a scenario error with its file
// position, a perfparse syntax error) keep their own types and join a
// class with an Is method:
//
//	func (e *Error) Is(target error) bool { return target == fault.ErrInput }
//
// Callers branch with errors.Is(err, fault.ErrInput) or
// errors.Is(err, fault.ErrCapability); any other error is a failure of
// what was measured or of the harness.
package fault

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// The classes. They never appear in messages: errors.Is finds them.
var (
	// ErrInput is bad input: what the user gave is wrong and the message
	// says how to fix it.
	ErrInput = errors.New("bad input")
	// ErrCapability is something the host or kernel lacks (a tool, a
	// device, a kernel feature); the fix is on the host or in the
	// scenario.
	ErrCapability = errors.New("missing capability")
	// ErrUndecided is a comparison the runs cannot decide yet (a verdict
	// of UNKNOWN): more repetitions may; it is neither a pass nor a
	// failure.
	ErrUndecided = errors.New("undecided")
	// ErrVoid is a measurement that measured nothing valid, most likely
	// through no fault of the kernel under test (a tool's race with
	// itself, such as pktgen removing a device late; a guest's iperf3
	// server breaking a test off): the runner runs it once more, the
	// sample says so, and a second failure fails the cell.
	ErrVoid = errors.New("void measurement")
)

// Void marks err as ErrVoid (errors.Is finds both).
func Void(err error) error { return &voidError{err: err} }

// VoidBecause is Void with a short cause ("connection reset by peer"),
// by which reports count a kernel's void measurements (VoidCause).
func VoidBecause(cause string, err error) error { return &voidError{err: err, cause: cause} }

// VoidCause returns the cause of the first void error in err's tree ("" if
// it was given none) and whether err is void at all.
func VoidCause(err error) (cause string, ok bool) {
	var ve *voidError
	if errors.As(err, &ve) {
		return ve.cause, true
	}
	return "", false
}

type voidError struct {
	err   error
	cause string
}

func (e *voidError) Error() string        { return e.err.Error() }
func (e *voidError) Unwrap() error        { return e.err }
func (e *voidError) Is(target error) bool { return target == ErrVoid }

// InputError is bad input: Msg says what is wrong and how to fix it; Err is
// the cause, printed after Msg as "msg: cause" (or alone when Msg is "").
type InputError struct {
	Msg string
	Err error
}

func (e *InputError) Error() string { return join(e.Msg, e.Err) }

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInput.
func (e *InputError) Is(target error) bool { return target == ErrInput }

// CapabilityError is a capability the host or kernel lacks: Msg says which
// and how to get it; Err is the cause, printed as InputError prints it.
type CapabilityError struct {
	Msg string
	Err error
}

func (e *CapabilityError) Error() string { return join(e.Msg, e.Err) }

// Unwrap returns the cause.
func (e *CapabilityError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCapability.
func (e *CapabilityError) Is(target error) bool { return target == ErrCapability }

// Input returns an *InputError formatted as fmt.Errorf does (%w wraps a
// cause that errors.Is and errors.As then find).
func Input(format string, a ...any) error {
	return &InputError{Err: fmt.Errorf(format, a...)}
}

// Capability returns a *CapabilityError formatted as fmt.Errorf does.
func Capability(format string, a ...any) error {
	return &CapabilityError{Err: fmt.Errorf(format, a...)}
}

// join is "msg: cause", or whichever of the two is set.
func join(msg string, cause error) string {
	switch {
	case cause == nil:
		return msg
	case msg == "":
		return cause.Error()
	}
	return msg + ": " + cause.Error()
}

// MaxQuote bounds the text an error message quotes from outside the
// harness (a guest's line, a tool's output): about 1 KiB, so a guest or a
// file cannot put megabytes into an error (and into results.jsonl).
const MaxQuote = 1 << 10

// Clip returns s, or when it is longer than MaxQuote its first MaxQuote
// bytes (cut at a UTF-8 boundary) followed by how long it was.
func Clip(s string) string {
	if len(s) <= MaxQuote {
		return s
	}
	cut := MaxQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes in all)", s[:cut], len(s))
}
