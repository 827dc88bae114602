package schema

import (
	"fmt"
	"strings"
)

// Row is one key of the reference.
type Row struct {
	Path string // e.g. "generator.pktgen.burst", "kernels[].label"
	Info *Info
}

// Rows lists every documented key under fs, depth first in schema order:
// absent optional sections and every variant of a OneOf included.
func Rows(fs []Field) []Row {
	var out []Row
	var walk func(fs []Field, path string)
	walk = func(fs []Field, path string) {
		for _, f := range fs {
			info := f.Info()
			if info.Hidden {
				continue
			}
			p := Join(path, info.Key)
			out = append(out, Row{p, info})
			switch f := f.(type) {
			case *Choice:
				for _, v := range f.variants {
					vi := &Info{Key: v.Name, Doc: v.Doc, Type: "mapping", Section: "optional"}
					out = append(out, Row{Join(p, v.Name), vi})
					walk(v.New().Fields(), Join(p, v.Name))
				}
			case parent:
				if info.Section == "list" {
					p += "[]"
				}
				walk(f.template(), p)
			}
		}
	}
	walk(fs, "")
	return out
}

// Param is a key and its current value, canonical ("" = unset).
type Param struct {
	Key   string
	Value string
}

// Values lists the current value of every documented key under fs, in
// schema order: an absent optional section as "off", of a OneOf only the
// chosen variant's keys, lists of mappings left out.
func Values(fs []Field) []Param {
	var out []Param
	Leaves(fs, func(path string, info *Info, value string) {
		out = append(out, Param{path, value})
	})
	return out
}

// Leaves calls fn for every documented key under fs with its current
// value, in the order of Values.
func Leaves(fs []Field, fn func(path string, info *Info, value string)) {
	var walk func(fs []Field, path string)
	walk = func(fs []Field, path string) {
		for _, f := range fs {
			info := f.Info()
			if info.Hidden {
				continue
			}
			p := Join(path, info.Key)
			switch f := f.(type) {
			case *Choice:
				if name, v := f.get(); v != nil {
					walk(v.Fields(), Join(p, name))
				}
			case *Sect:
				switch {
				case info.Section == "list":
				case f.isNil != nil && f.isNil():
					fn(p, info, "off")
				default:
					walk(f.cur(), p)
				}
			case formatted:
				fn(p, info, f.Format())
			}
		}
	}
	walk(fs, "")
}

// AxisKeys lists every key that can be an axis, in schema order, through
// every variant of a OneOf (not the OneOf itself).
func AxisKeys(fs []Field) []string {
	var out []string
	for _, r := range Rows(fs) {
		if r.Info.Axis && r.Info.Section == "" {
			out = append(out, r.Path)
		}
	}
	return out
}

// InfoAt returns the documentation of the key at path (through every
// variant), or nil.
func InfoAt(fs []Field, path string) *Info {
	for _, r := range Rows(fs) {
		if r.Path == path {
			return r.Info
		}
	}
	return nil
}

// Find returns the field at path among the current values (a OneOf
// descends into its chosen variant when path names it), or nil.
func Find(fs []Field, path string) Field {
	key, rest, more := strings.Cut(path, ".")
	for _, f := range fs {
		if f.Info().Key != key {
			continue
		}
		if !more {
			return f
		}
		switch f := f.(type) {
		case *Choice:
			name, v := f.get()
			vk, vrest, ok := strings.Cut(rest, ".")
			if v == nil || vk != name || !ok {
				return nil
			}
			return Find(v.Fields(), vrest)
		case parent:
			return Find(f.children(), rest)
		}
		return nil
	}
	return nil
}

// Set stores value v of an axis (Axis.Value) at path.
func Set(fs []Field, path string, v any) error {
	f, ok := Find(fs, path).(setter)
	if !ok {
		return fmt.Errorf("schema: no value at %s", path)
	}
	f.set(v)
	return nil
}
