package schema

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Decoder decodes a YAML node tree into sections. It checks every value
// once, also every element of an axis list and every variant of a OneOf,
// and records the axes it met (Axes) and where every value came from
// (Pos). An axis key holds its first value afterwards; a OneOf its first
// variant.
type Decoder struct {
	file  string
	pos   Pos
	axes  []*Axis
	scope string
}

// NewDecoder returns a decoder whose errors name file.
func NewDecoder(file string) *Decoder { return &Decoder{file: file, pos: Pos{}} }

// Axis is a key given as a YAML list (or a OneOf given several variants).
type Axis struct {
	Key    string     // path, e.g. "generator.pktgen.threads"
	Node   *yaml.Node // the list (for a OneOf: its mapping)
	Scope  string     // "" or the OneOf variant the key belongs to ("pktgen")
	Values []string   // canonical values, in file order
	vals   []any
	nodes  []*yaml.Node
}

// Value returns the decoded value i (for a OneOf: the variant's Fielder).
func (a *Axis) Value(i int) any { return a.vals[i] }

// ElemNode returns the node of value i.
func (a *Axis) ElemNode(i int) *yaml.Node {
	if a.nodes != nil {
		return a.nodes[i]
	}
	return a.Node.Content[i]
}

// Pos returns where every decoded value came from.
func (d *Decoder) Pos() Pos { return d.pos }

// Axes returns the axes met, in the order met (schema order).
func (d *Decoder) Axes() []*Axis { return d.axes }

// Decode decodes mapping n into s.
func (d *Decoder) Decode(n *yaml.Node, s Fielder) error {
	return d.section(n, s.Fields(), "")
}

func (d *Decoder) errAt(n *yaml.Node, format string, a ...any) error {
	e := &Error{File: d.file, Msg: fmt.Sprintf(format, a...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

type entry struct{ k, v *yaml.Node }

// entries checks a mapping's keys against keys and returns key -> entry.
func (d *Decoder) entries(n *yaml.Node, keys []string, path string) (map[string]entry, error) {
	m := map[string]entry{}
	if n == nil || IsNull(n) {
		return m, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errAt(n, "%s: want a mapping (key: value lines), got %s", orTop(path), Describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, d.errAt(k, "%s: keys are plain words, got %s", orTop(path), Describe(k))
		}
		if !slices.Contains(keys, k.Value) {
			where := ""
			if path != "" {
				where = " in " + path
			}
			return nil, d.errAt(k, "unknown key %q%s%s (allowed: %s)", k.Value, where, DidYouMean(k.Value, keys), strings.Join(keys, ", "))
		}
		if prev, dup := m[k.Value]; dup {
			return nil, d.errAt(k, "%s given twice (first at line %d); keep one", Join(path, k.Value), prev.k.Line)
		}
		m[k.Value] = entry{k, v}
	}
	return m, nil
}

func orTop(path string) string {
	if path == "" {
		return "scenario"
	}
	return path
}

// section decodes mapping n (nil = absent: every key takes its default)
// with fields fs, in schema order.
func (d *Decoder) section(n *yaml.Node, fs []Field, path string) error {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.Info().Key
	}
	m, err := d.entries(n, keys, path)
	if err != nil {
		return err
	}
	for _, f := range fs {
		e := m[f.Info().Key]
		if err := f.decode(d, n, e.k, e.v, Join(path, f.Info().Key)); err != nil {
			return err
		}
	}
	return nil
}
