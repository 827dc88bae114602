package schema

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// A Field is one key of a section, bound to a Go value. Fields come from
// the constructors of this package (Int, Enum, Duration, Section, OneOf,
// ...); a section lists them in its Fields method.
type Field interface {
	// Info describes the key for the reference.
	Info() *Info
	// decode decodes the value node n of key node k in mapping parent (n
	// nil: the key is absent) into the bound value.
	decode(d *Decoder, parent, k, n *yaml.Node, path string) error
}

// Fielder is a section: a struct that lists its keys.
type Fielder interface {
	Fields() []Field
}

// Info describes a key.
type Info struct {
	Key  string
	Doc  string // one line: what the key means
	Unit string // unit of the value ("" = none or obvious)
	Type string // the type column of the reference
	// Default is the reference's text for the default; HasDefault tells an
	// empty default from none ("unset").
	Default    string
	HasDefault bool
	// Auto documents a default computed from other keys.
	Auto string
	// Axis: a YAML list means one cell per value.
	Axis bool
	// Hidden keys are decoded (to give a precise error) but neither
	// documented nor listed by Values.
	Hidden bool
	// Required: the key must be given.
	Required bool
	// Section is "mapping", "optional" (absent = off), "list" (of
	// mappings) or "" for a value.
	Section string
	// name renders an axis value as a cell-name part (nil = "KEY-VALUE").
	name func(v string) string
}

// NamePart renders axis value v of the key as a part of a cell name:
// "pkt1500", "burst-default", "script".
func (i *Info) NamePart(v string) string {
	if i.name != nil {
		return i.name(v)
	}
	return shortName(i.Key+"-", v)
}

func shortName(prefix, v string) string {
	if v == "" || v == "default" {
		return prefix + "-default"
	}
	return prefix + v
}

// Kind says how a value of type T is written in a scenario.
type Kind[T any] struct {
	// Type is the reference's type column, e.g. "duration".
	Type string
	// Parse reads one value (never a list given to an axis key: the
	// decoder passes each element). It returns the whole error message
	// ("" = ok); the decoder adds the node's position.
	Parse func(n *yaml.Node, c *Ctx) (T, string)
	// Format prints a value canonically (cell names, plan, axis values).
	Format func(T) string
	// DocFormat prints a default for the reference (nil = Format).
	DocFormat func(T) string
}

// Ctx is what Parse knows about the key it reads.
type Ctx struct {
	Path string // e.g. "generator.pktgen.burst"
	Axis bool   // the key is an axis (a list would have been expanded)
	at   *yaml.Node
	pos  Pos
}

// At reports the error Parse returns at node n (default: the value's node),
// e.g. one element of a list.
func (c *Ctx) At(n *yaml.Node) { c.at = n }

// Mark records the node of a part of the value (path "key[i]").
func (c *Ctx) Mark(path string, n *yaml.Node) { c.pos[path] = n }

// Leaf is a key holding one value of type T.
type Leaf[T any] struct {
	info   Info
	ptr    *T
	kind   Kind[T]
	def    T
	hasDef bool
}

// Value binds a key of a custom kind to *p.
func Value[T any](p *T, key string, k Kind[T]) *Leaf[T] {
	return &Leaf[T]{info: Info{Key: key, Type: k.Type}, ptr: p, kind: k}
}

func (f *Leaf[T]) Info() *Info { return &f.info }

// Doc sets the one-line description.
func (f *Leaf[T]) Doc(s string) *Leaf[T] { f.info.Doc = s; return f }

// Unit sets the unit column.
func (f *Leaf[T]) Unit(s string) *Leaf[T] { f.info.Unit = s; return f }

// Default sets the value taken when the key is absent.
func (f *Leaf[T]) Default(v T) *Leaf[T] {
	f.def, f.hasDef = v, true
	f.info.HasDefault = true
	if f.kind.DocFormat != nil {
		f.info.Default = f.kind.DocFormat(v)
	} else {
		f.info.Default = f.kind.Format(v)
	}
	return f
}

// Auto documents a default that Resolve computes from other keys.
func (f *Leaf[T]) Auto(text string) *Leaf[T] { f.info.Auto = text; return f }

// Axis makes a YAML list at this key a matrix axis.
func (f *Leaf[T]) Axis() *Leaf[T] { f.info.Axis = true; return f }

// Hidden keeps the key out of the reference and Values (it is still
// decoded, so a resolver can reject it with a precise message).
func (f *Leaf[T]) Hidden() *Leaf[T] { f.info.Hidden = true; return f }

// Short names an axis value in cell names as prefix+value ("pkt1500";
// "prefix-default" for unset or default).
func (f *Leaf[T]) Short(prefix string) *Leaf[T] {
	f.info.name = func(v string) string { return shortName(prefix, v) }
	return f
}

// Bare names an axis value in cell names by the value alone ("script").
func (f *Leaf[T]) Bare() *Leaf[T] {
	f.info.name = func(v string) string { return v }
	return f
}

// Pin names a CPU list axis value in cell names as PinPart(stem, value):
// "vhost-pin0", "gen-unpinned".
func (f *Leaf[T]) Pin(stem string) *Leaf[T] {
	f.info.name = func(v string) string { return PinPart(stem, v) }
	return f
}

// Name sets how an axis value reads in cell names.
func (f *Leaf[T]) Name(fn func(v string) string) *Leaf[T] { f.info.name = fn; return f }

// Get returns the bound value.
func (f *Leaf[T]) Get() T { return *f.ptr }

// Format prints the bound value canonically.
func (f *Leaf[T]) Format() string { return f.kind.Format(*f.ptr) }

func (f *Leaf[T]) decode(d *Decoder, _, _, n *yaml.Node, path string) error {
	if n == nil {
		if f.info.Required {
			return d.errAt(nil, "%s: required", path)
		}
		if f.hasDef {
			*f.ptr = cloneValue(f.def)
		}
		return nil
	}
	d.pos[path] = n
	ctx := &Ctx{Path: path, Axis: f.info.Axis, pos: d.pos}
	fail := func(n *yaml.Node, msg string) error {
		if ctx.at != nil {
			n = ctx.at
		}
		return d.errAt(n, "%s", msg)
	}
	if f.info.Axis && n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			return d.errAt(n, "%s: empty list; give one value, or a list of values to compare", path)
		}
		if len(n.Content) > MaxListLen {
			return d.errAt(n, "%s: %d values; an axis has at most %d", path, len(n.Content), MaxListLen)
		}
		a := &Axis{Key: path, Node: n, Scope: d.scope}
		for _, el := range n.Content {
			v, msg := f.kind.Parse(el, ctx)
			if msg != "" {
				return fail(el, msg)
			}
			a.Values = append(a.Values, f.kind.Format(v))
			a.vals = append(a.vals, v)
		}
		seen := map[string]bool{}
		for i, v := range a.Values {
			if seen[v] {
				return d.errAt(n.Content[i], "%s: value %s listed twice; list each value once", path, v)
			}
			seen[v] = true
		}
		d.axes = append(d.axes, a)
		d.pos[path] = n.Content[0]
		*f.ptr = a.vals[0].(T)
		return nil
	}
	v, msg := f.kind.Parse(n, ctx)
	if msg != "" {
		return fail(n, msg)
	}
	*f.ptr = v
	return nil
}

// set stores an axis value (one of Axis.vals).
func (f *Leaf[T]) set(v any) { *f.ptr = v.(T) }

// formatted is a leaf's canonical value, for Values.
type formatted interface{ Format() string }

// setter is a leaf that takes an axis value.
type setter interface{ set(v any) }

// cloneValue copies slices so that defaults are never shared.
func cloneValue[T any](v T) T {
	switch x := any(v).(type) {
	case []int:
		return any(slices.Clone(x)).(T)
	case []string:
		return any(slices.Clone(x)).(T)
	}
	return v
}
