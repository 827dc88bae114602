package vmimages

import "fmt"

// InputError is bad input or a missing capability: a kernel path that does
// not exist, a module the kernel does not have, a host without apt-get. Its
// message says what is wrong and how to fix it. The CLI exits 2 on it.
type InputError struct {
	Msg string
	Err error // optional cause
}

func (e *InputError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *InputError) Unwrap() error { return e.Err }

// ExitCode returns 2 (bad input or missing capability).
func (e *InputError) ExitCode() int { return 2 }

func inputErrorf(cause error, format string, a ...any) *InputError {
	return &InputError{Msg: fmt.Sprintf(format, a...), Err: cause}
}
