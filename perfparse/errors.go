package perfparse

import (
	"errors"
	"fmt"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// SyntaxError is malformed input. Its text is "perfparse: FILE:LINE: msg"
// (or "perfparse: LINE: msg" when the file name is unknown), like
// golang.org/x/perf/benchfmt's SyntaxError. It is bad input (class
// fault.ErrInput).
type SyntaxError struct {
	File string // file name, "" when unknown (set it with WithFile)
	Line int    // 1-based line number, 0 when the error is not tied to a line
	Msg  string
	Err  error // underlying error, if any
}

func (e *SyntaxError) Error() string {
	loc := ""
	switch {
	case e.File != "" && e.Line > 0:
		loc = fmt.Sprintf("%s:%d: ", e.File, e.Line)
	case e.File != "":
		loc = e.File + ": "
	case e.Line > 0:
		loc = fmt.Sprintf("%d: ", e.Line)
	}
	return "perfparse: " + loc + e.Msg
}

// Unwrap returns the underlying error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Is makes a syntax error bad input (errors.Is(err, fault.ErrInput)).
func (e *SyntaxError) Is(target error) bool { return target == fault.ErrInput }

func errorf(line int, format string, a ...any) error {
	return &SyntaxError{Line: line, Msg: fmt.Sprintf(format, a...)}
}

// WithFile returns err with the file name set when err is (or wraps) a
// *SyntaxError without one; other errors are returned unchanged.
func WithFile(err error, file string) error {
	var se *SyntaxError
	if file == "" || !errors.As(err, &se) || se.File != "" {
		return err
	}
	c := *se
	c.File = file
	return &c
}
