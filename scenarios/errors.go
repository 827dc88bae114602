package scenarios

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Error is a bad scenario: a file position and a message that says what is
// wrong and how to fix it. It prints as "file:line:col: msg" (the parts that
// are known) and maps to exit code 2.
type Error struct {
	File string
	Line int // 1-based; 0 = unknown
	Col  int // 1-based; 0 = unknown
	Msg  string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return e.Msg
}

// ExitCode makes cmd exit with 2 (bad input).
func (e *Error) ExitCode() int { return 2 }

// posMap maps a YAML path ("generator.pktgen.burst") to the node a value
// came from.
type posMap map[string]*yaml.Node
