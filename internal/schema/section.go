package schema

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parent is a field with keys below it.
type parent interface {
	Field
	// children are the fields of the current value (nil: absent).
	children() []Field
	// template are the fields of a fresh value (for the reference).
	template() []Field
}

// Sect is a nested mapping.
type Sect struct {
	info  Info
	cur   func() []Field
	fresh func() []Field
	alloc func() // optional sections: allocate before decoding
	isNil func() bool
	list  *listInfo
}

type listInfo struct {
	max     int
	example string
	set     func(n int) []func() []Field // resize the slice, fields of each element
	deflt   func()
}

func (s *Sect) Info() *Info { return &s.info }

// Doc sets the one-line description.
func (s *Sect) Doc(text string) *Sect { s.info.Doc = text; return s }

// Hidden keeps the section out of the reference and Values.
func (s *Sect) Hidden() *Sect { s.info.Hidden = true; return s }

func (s *Sect) children() []Field {
	if s.isNil != nil && s.isNil() || s.list != nil {
		return nil
	}
	return s.cur()
}

func (s *Sect) template() []Field { return s.fresh() }

// Section binds a mapping that is always there (absent = every key at
// its default).
func Section(key string, s Fielder) *Sect {
	return SectionFunc(key, s.Fields)
}

// SectionFunc is Section for a value that lists its keys with fields
// (e.g. a method value choosing another documentation for a shared type).
func SectionFunc(key string, fields func() []Field) *Sect {
	return &Sect{info: Info{Key: key, Type: "mapping", Section: "mapping"}, cur: fields, fresh: fields}
}

// Optional binds a mapping that is off (nil) unless given; "key:" or
// "key: {}" turns it on with every sub-key at its default.
func Optional[T any, PT interface {
	*T
	Fielder
}](p **T, key string) *Sect {
	return &Sect{
		info:  Info{Key: key, Type: "mapping", Section: "optional"},
		cur:   func() []Field { return PT(*p).Fields() },
		fresh: func() []Field { return PT(new(T)).Fields() },
		alloc: func() { *p = new(T) },
		isNil: func() bool { return *p == nil },
	}
}

// List binds a list of mappings; one mapping alone is a list of one.
// example shows an element in the message for a non-mapping element,
// e.g. "{label: stock}".
func List[T any, PT interface {
	*T
	Fielder
}](p *[]T, key string, max int, example string) *ListField[T] {
	s := &Sect{
		info:  Info{Key: key, Type: "list of mappings", Section: "list"},
		fresh: func() []Field { return PT(new(T)).Fields() },
	}
	s.list = &listInfo{max: max, example: example, set: func(n int) []func() []Field {
		*p = make([]T, n)
		fs := make([]func() []Field, n)
		for i := range n {
			fs[i] = PT(&(*p)[i]).Fields
		}
		return fs
	}}
	return &ListField[T]{Sect: s, p: p}
}

// ListField is a List, with its default.
type ListField[T any] struct {
	*Sect
	p *[]T
}

// Default sets the list taken when the key is absent; doc is its text
// in the reference.
func (l *ListField[T]) Default(v []T, doc string) *ListField[T] {
	l.info.Default, l.info.HasDefault = doc, true
	l.list.deflt = func() { *l.p = slices.Clone(v) }
	return l
}

// Doc sets the one-line description.
func (l *ListField[T]) Doc(text string) *ListField[T] { l.info.Doc = text; return l }

func (s *Sect) decode(d *Decoder, _, _, n *yaml.Node, path string) error {
	if s.list != nil {
		return s.decodeList(d, n, path)
	}
	if n == nil {
		if s.alloc != nil {
			return nil // off
		}
		return d.section(nil, s.cur(), path)
	}
	d.pos[path] = n
	if s.alloc != nil {
		s.alloc()
	}
	return d.section(n, s.cur(), path)
}

func (s *Sect) decodeList(d *Decoder, n *yaml.Node, path string) error {
	l := s.list
	if n == nil {
		if l.deflt != nil {
			l.deflt()
		}
		return nil
	}
	d.pos[path] = n
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	if len(items) == 0 {
		return d.errAt(n, "%s: empty list; give at least one entry or leave the key out", path)
	}
	if len(items) > l.max {
		return d.errAt(n, "%s: %d entries; at most %d", path, len(items), l.max)
	}
	fields := l.set(len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.pos[p] = it
		if it.Kind != yaml.MappingNode {
			return d.errAt(it, "%s: want a mapping such as %s, got %s", p, l.example, Describe(it))
		}
		if err := d.section(it, fields[i](), p); err != nil {
			return err
		}
	}
	return nil
}

// Variant is one alternative of a OneOf.
type Variant struct {
	Name string
	Doc  string
	New  func() Fielder
}

// Choice is a OneOf: a mapping whose keys name variants, each with its
// own section. Several variants in one file are an axis.
type Choice struct {
	info     Info
	variants []Variant
	get      func() (string, Fielder)
	set      func(string, Fielder)
	example  string
}

// OneOf binds a required mapping of variants: get and set read and
// write the chosen variant and its section.
func OneOf(key string, variants []Variant, get func() (string, Fielder), set func(string, Fielder)) *Choice {
	return &Choice{info: Info{Key: key, Type: "mapping", Section: "mapping", Required: true, Axis: true},
		variants: variants, get: get, set: set}
}

func (c *Choice) Info() *Info { return &c.info }

// Doc sets the one-line description.
func (c *Choice) Doc(text string) *Choice { c.info.Doc = text; return c }

// Example is shown in the message for a missing or empty choice, e.g.
// "generator: {iperf3: {duration: 10s}}".
func (c *Choice) Example(s string) *Choice { c.example = s; return c }

// Variants returns the alternatives.
func (c *Choice) Variants() []Variant { return c.variants }

func (c *Choice) names() []string {
	out := make([]string, len(c.variants))
	for i, v := range c.variants {
		out[i] = v.Name
	}
	return out
}

func (c *Choice) children() []Field {
	_, f := c.get()
	if f == nil {
		return nil
	}
	return f.Fields()
}

func (c *Choice) template() []Field { return nil }

func (c *Choice) decode(d *Decoder, parent, k, n *yaml.Node, path string) error {
	names := c.names()
	hint := fmt.Sprintf("add one of %s (e.g. %s)", strings.Join(names, ", "), c.example)
	if n == nil || IsNull(n) {
		at := parent
		if k != nil {
			at = k
		}
		return d.errAt(at, "%s: required; %s", path, hint)
	}
	m, err := d.entries(n, names, path)
	if err != nil {
		return err
	}
	var chosen []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		chosen = append(chosen, n.Content[i].Value)
	}
	if len(chosen) == 0 {
		return d.errAt(n, "%s: empty; %s", path, hint)
	}
	a := &Axis{Key: path, Node: n, Values: chosen}
	if len(chosen) > 1 {
		d.axes = append(d.axes, a)
	}
	for _, name := range chosen {
		v := c.variants[slices.IndexFunc(c.variants, func(v Variant) bool { return v.Name == name })]
		f := v.New()
		p := Join(path, name)
		vn := m[name].v
		d.pos[p] = vn
		old := d.scope
		d.scope = name
		err := d.section(vn, f.Fields(), p)
		d.scope = old
		if err != nil {
			return err
		}
		a.vals = append(a.vals, f)
		a.nodes = append(a.nodes, m[name].k)
	}
	c.set(chosen[0], a.vals[0].(Fielder))
	return nil
}

// Clone returns a shallow copy of the struct f points to: sections are
// pointers to structs, and a cell's copy must not share them.
func Clone[F Fielder](f F) F {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return f
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(F)
}
