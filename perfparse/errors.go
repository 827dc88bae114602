package perfparse

import (
	"errors"
	"fmt"
)

// SyntaxError is malformed input. Its text is "perfparse: FILE:LINE: msg"
// (or "perfparse: LINE: msg" when the file name is unknown), like
// golang.org/x/perf/benchfmt's SyntaxError. Callers that classify errors
// (vnetbench's exit code 2 for bad input) look for it with errors.As.
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
