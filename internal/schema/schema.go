// Package schema is the vocabulary of the scenario language: keys bound to
// Go fields (durations, sizes, CPU lists, enums, integers in a range,
// nested mappings, a choice of variants), decoded from a yaml.v3 node tree
// with file:line:col errors and did-you-mean suggestions, and described
// for the generated scenario reference.
//
// A section is a Go struct with a Fields method that lists its keys bound
// to the struct's own fields, in reference order:
//
//	func (c *Config) Fields() []schema.Field {
//		return []schema.Field{
//			schema.Int(&c.Threads, "threads", 1, 1024).Default(1).Unit("threads").Axis().
//				Doc("worker threads"),
//			schema.Duration(&c.Duration, "duration").Default(10 * time.Second).Doc("how long it sends"),
//		}
//	}
//
// The kind of a value is its constructor (compiler-checked: Int binds an
// integer field, Duration a time.Duration); doc, unit, default and whether
// the key is a matrix axis are methods on the field. The same list decodes
// a file (Decoder), describes the key for the reference (Rows), prints the
// current values (Values) and sets an axis value on a copy (Set), so the
// decoder, the reference and the plan cannot disagree.
//
// Decoding is strict: an unknown key, a wrong type or a value outside the
// allowed set is an *Error at the value's position. A key marked Axis may
// be given a YAML list; the decoder checks every element once and records
// the list (Decoder.Axes) for the caller to expand. The package is pure: no
// files, no host.
package schema

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Error is a bad scenario: a file position and a message that says what is
// wrong and how to fix it. It prints as "file:line:col: msg" (the parts that
// are known).
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

// Is makes a bad scenario bad input (errors.Is(err, fault.ErrInput)).
func (e *Error) Is(target error) bool { return target == fault.ErrInput }

// Pos maps a key's path ("generator.pktgen.burst", "kernels[1].label") to
// the node its value came from. An axis key maps to the element a cell
// uses.
type Pos map[string]*yaml.Node

// Errorf returns an *Error positioned at path's node, or at the closest
// parent that has one (a key left out is reported at its section).
func (p Pos) Errorf(file, path, format string, a ...any) *Error {
	e := &Error{File: file, Msg: fmt.Sprintf(format, a...)}
	for q := path; q != ""; {
		if n := p[q]; n != nil && n.Line > 0 {
			e.Line, e.Col = n.Line, n.Column
			break
		}
		i := strings.LastIndexAny(q, ".[")
		if i < 0 {
			break
		}
		q = q[:i]
	}
	return e
}

// Clone returns a copy of p.
func (p Pos) Clone() Pos {
	c := make(Pos, len(p))
	for k, v := range p {
		c[k] = v
	}
	return c
}

// Join appends key to a path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Describe names what a node is, for "want X, got Y" messages.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing (null)"
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		return strconv.Quote(n.Value) + " (a string)"
	}
	return "an unsupported YAML node"
}

// IsNull reports whether n is an explicit null ("key:" with no value).
func IsNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// DidYouMean returns "; did you mean X?" for the closest candidate within
// two edits, or "".
func DidYouMean(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if d := editDistance(strings.ToLower(s), c); d < bestD && d < len(c) {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
