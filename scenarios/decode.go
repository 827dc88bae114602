package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// document is the whole scenario file: the scenario-level keys plus the
// cell keys inline.
type document struct {
	Name        string   `yaml:"name" kind:"name" auto:"the file name without .yaml" doc:"scenario name: lowercase letters, digits, '.', '_', '-'"`
	Description string   `yaml:"description" kind:"line" doc:"one line shown by vnetbench list"`
	Kernels     []Kernel `yaml:"kernels" default:"[{label: running}]" doc:"kernels under test, the column axis of every table (a list of {label, image, modules, debian}); every cell runs on each"`
	Seed        int64    `yaml:"seed" default:"0" doc:"seed of the run-order shuffle; 0 = pick one at run time (printed, reusable with --seed)"`
	Cell        `yaml:",inline"`
}

// Limits that keep a typo (or a fuzzer) from expanding into an absurd plan.
const (
	maxFileBytes = 1 << 20
	maxCells     = 1024
	maxRuns      = 20000
	maxKernels   = 16
	maxListLen   = 256
)

// field is one YAML key of a struct type.
type field struct {
	key   string
	index []int
	sf    reflect.StructField
	tg    *tags
}

// tags are a field's struct tags, parsed once (decoding looks them up for
// every value of every cell).
type tags struct{ m map[string]string }

var tagNames = []string{"default", "auto", "axis", "enum", "kind", "min", "max", "required"}

func parseTags(t reflect.StructTag) *tags {
	tg := &tags{m: map[string]string{}}
	for _, n := range tagNames {
		if v, ok := t.Lookup(n); ok {
			tg.m[n] = v
		}
	}
	return tg
}

func (t *tags) Get(name string) string { return t.m[name] }

func (t *tags) Lookup(name string) (string, bool) {
	v, ok := t.m[name]
	return v, ok
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf lists the YAML keys of struct type t in declaration order,
// flattening ",inline" embedded structs.
func fieldsOf(t reflect.Type) []field {
	if v, ok := fieldCache.Load(t); ok {
		return v.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if tag == "-" || !sf.IsExported() {
			continue
		}
		if tag == ",inline" {
			for _, f := range fieldsOf(sf.Type) {
				f.index = append([]int{i}, f.index...)
				fs = append(fs, f)
			}
			continue
		}
		fs = append(fs, field{key: tag, index: []int{i}, sf: sf, tg: parseTags(sf.Tag)})
	}
	fieldCache.Store(t, fs)
	return fs
}

// axisRef is an axis found while validating: a YAML list at an axis key.
type axisRef struct {
	key    string
	node   *yaml.Node // the sequence (or, for "generator", the mapping)
	scope  string     // "" or the generator kind the axis belongs to
	values []string   // canonical values
}

// decoder walks a yaml.Node tree into Go values, driven by struct tags.
// In validation mode (all) it checks every value of every axis list and
// every generator kind and records the axes; in pick mode it takes the
// list element that choice names for each axis.
type decoder struct {
	file   string
	all    bool
	choice map[*yaml.Node]int
	axes   []axisRef
	pos    posMap
	scope  string
}

func (d *decoder) errAt(n *yaml.Node, format string, a ...any) error {
	e := &Error{File: d.file, Msg: fmt.Sprintf(format, a...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// parse parses YAML bytes into the document's top-level mapping node.
func parse(file string, data []byte) (*yaml.Node, error) {
	if len(data) > maxFileBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("file is %d bytes; a scenario is at most %d", len(data), maxFileBytes)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "empty scenario; start with name:, generator: and the axes you compare (see the scenario reference in README.md)"}
		}
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Col: extra.Column, Msg: "a second YAML document (---); put one scenario per file"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if err := checkNoAliases(file, root, 0); err != nil {
		return nil, err
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, &Error{File: file, Msg: "empty scenario; start with name:, generator: and the axes you compare (see the scenario reference in README.md)"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Col: root.Column, Msg: fmt.Sprintf("a scenario is a mapping of keys (name:, generator:, ...), got %s", describe(root))}
	}
	return root, nil
}

var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml.v3 parse error ("yaml: line 3: msg") into an
// *Error. yaml.v3 reports no column for syntax errors.
func syntaxError(file string, err error) error {
	msg := err.Error()
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "YAML syntax: " + m[2] + " (check indentation, a missing ':' or an unclosed quote or bracket)"}
	}
	return &Error{File: file, Msg: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

func checkNoAliases(file string, n *yaml.Node, depth int) error {
	if depth > 64 {
		return &Error{File: file, Line: n.Line, Col: n.Column, Msg: "nesting deeper than 64 levels; a scenario is a few levels deep"}
	}
	if n.Kind == yaml.AliasNode {
		return &Error{File: file, Line: n.Line, Col: n.Column, Msg: "YAML aliases (*name) are not supported; write the value out"}
	}
	for _, c := range n.Content {
		if err := checkNoAliases(file, c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// describe names what a node is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
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

func isNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

var defaultNodes sync.Map // string -> *yaml.Node

// defaultNode parses a default tag into a node without position.
func defaultNode(s string) *yaml.Node {
	if v, ok := defaultNodes.Load(s); ok {
		return v.(*yaml.Node)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil || len(n.Content) != 1 {
		panic(fmt.Sprintf("scenarios: bad default tag %q", s))
	}
	c := n.Content[0]
	clearPos(c)
	defaultNodes.Store(s, c)
	return c
}

func clearPos(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		clearPos(c)
	}
}

// mappingEntries checks a mapping's keys against the struct's fields and
// returns key -> (key node, value node).
func (d *decoder) mappingEntries(n *yaml.Node, fs []field, path string) (map[string][2]*yaml.Node, error) {
	m := map[string][2]*yaml.Node{}
	if n == nil || isNull(n) {
		return m, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errAt(n, "%s: want a mapping (key: value lines), got %s", orTop(path), describe(n))
	}
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, d.errAt(k, "%s: keys are plain words, got %s", orTop(path), describe(k))
		}
		if !slices.Contains(keys, k.Value) {
			where := ""
			if path != "" {
				where = " in " + path
			}
			return nil, d.errAt(k, "unknown key %q%s%s (allowed: %s)", k.Value, where, didYouMean(k.Value, keys), strings.Join(keys, ", "))
		}
		if prev, dup := m[k.Value]; dup {
			return nil, d.errAt(k, "%s given twice (first at line %d); keep one", join(path, k.Value), prev[0].Line)
		}
		m[k.Value] = [2]*yaml.Node{k, v}
	}
	return m, nil
}

func orTop(path string) string {
	if path == "" {
		return "scenario"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeStruct decodes mapping n (nil = absent) into struct v.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	fs := fieldsOf(v.Type())
	m, err := d.mappingEntries(n, fs, path)
	if err != nil {
		return err
	}
	for _, f := range fs {
		kv, ok := m[f.key]
		fv := v.FieldByIndex(f.index)
		p := join(path, f.key)
		if f.sf.Type == reflect.TypeOf(Generator{}) {
			if !ok || isNull(kv[1]) {
				pn := n
				if ok {
					pn = kv[0]
				}
				return d.errAt(pn, "generator: required; add one of pktgen, trafgen, iperf3 (e.g. generator: {iperf3: {duration: 10s}})")
			}
			if err := d.decodeGenerator(kv[1], fv.Addr().Interface().(*Generator), p); err != nil {
				return err
			}
			continue
		}
		var vn *yaml.Node
		if ok {
			vn = kv[1]
		}
		if err := d.decodeField(vn, fv, f.tg, p); err != nil {
			return err
		}
	}
	return nil
}

var generatorKinds = []string{"pktgen", "trafgen", "iperf3"}

// decodeGenerator handles the generator mapping: each kind present is a
// value of the "generator" axis.
func (d *decoder) decodeGenerator(n *yaml.Node, g *Generator, path string) error {
	fs := fieldsOf(reflect.TypeOf(*g))
	m, err := d.mappingEntries(n, fs, path)
	if err != nil {
		return err
	}
	var kinds []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		kinds = append(kinds, n.Content[i].Value)
	}
	if len(kinds) == 0 {
		return d.errAt(n, "generator: empty; add one of pktgen, trafgen, iperf3 (e.g. generator: {iperf3: {duration: 10s}})")
	}
	v := reflect.ValueOf(g).Elem()
	decodeKind := func(kind string) error {
		for _, f := range fs {
			if f.key != kind {
				continue
			}
			fv := v.FieldByIndex(f.index)
			fv.Set(reflect.New(f.sf.Type.Elem()))
			old := d.scope
			d.scope = kind
			defer func() { d.scope = old }()
			d.pos[join(path, kind)] = m[kind][1]
			return d.decodeStruct(m[kind][1], fv.Elem(), join(path, kind))
		}
		return nil
	}
	if d.all {
		if len(kinds) > 1 {
			d.axes = append(d.axes, axisRef{key: "generator", node: n, values: kinds})
		}
		for _, k := range kinds {
			if err := decodeKind(k); err != nil {
				return err
			}
		}
		// The others were decoded for validation only; keep the first kind.
		keep := *g
		*g = Generator{Kind: kinds[0]}
		switch kinds[0] {
		case "pktgen":
			g.Pktgen = keep.Pktgen
		case "trafgen":
			g.Trafgen = keep.Trafgen
		case "iperf3":
			g.Iperf3 = keep.Iperf3
		}
		return nil
	}
	i := d.choice[n]
	if i >= len(kinds) {
		i = 0
	}
	g.Kind = kinds[i]
	return decodeKind(kinds[i])
}

// decodeField decodes one field value; n nil means the key is absent.
func (d *decoder) decodeField(n *yaml.Node, fv reflect.Value, tg *tags, path string) error {
	if n == nil {
		if tg.Get("required") == "1" {
			return d.errAt(nil, "%s: required", path)
		}
		if def, ok := tg.Lookup("default"); ok {
			return d.decodeValue(defaultNode(def), fv, tg, path)
		}
		if fv.Kind() == reflect.Struct {
			return d.decodeStruct(nil, fv, path)
		}
		return nil
	}
	d.pos[path] = n
	if tg.Get("axis") == "1" && n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			return d.errAt(n, "%s: empty list; give one value, or a list of values to compare", path)
		}
		if len(n.Content) > maxListLen {
			return d.errAt(n, "%s: %d values; an axis has at most %d", path, len(n.Content), maxListLen)
		}
		if d.all {
			ref := axisRef{key: path, node: n, scope: d.scope}
			for _, el := range n.Content {
				tmp := reflect.New(fv.Type()).Elem()
				if err := d.decodeValue(el, tmp, tg, path); err != nil {
					return err
				}
				ref.values = append(ref.values, format(tmp, tg))
			}
			seen := map[string]bool{}
			for i, v := range ref.values {
				if seen[v] {
					return d.errAt(n.Content[i], "%s: value %s listed twice; list each value once", path, v)
				}
				seen[v] = true
			}
			d.axes = append(d.axes, ref)
		}
		i := d.choice[n]
		if i >= len(n.Content) {
			i = 0
		}
		d.pos[path] = n.Content[i]
		return d.decodeValue(n.Content[i], fv, tg, path)
	}
	return d.decodeValue(n, fv, tg, path)
}

var durationType = reflect.TypeOf(time.Duration(0))

// decodeValue decodes a single (non-axis) value.
func (d *decoder) decodeValue(n *yaml.Node, fv reflect.Value, tg *tags, path string) error {
	kind := tg.Get("kind")
	if fv.Type() == durationType {
		dur, err := d.duration(n, path)
		if err != nil {
			return err
		}
		fv.SetInt(int64(dur))
		return nil
	}
	switch fv.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, fv, path)
	case reflect.Pointer:
		fv.Set(reflect.New(fv.Type().Elem()))
		return d.decodeStruct(n, fv.Elem(), path)
	case reflect.Slice:
		switch fv.Type().Elem().Kind() {
		case reflect.Int: // CPU list
			cpus, err := d.cpuList(n, path)
			if err != nil {
				return err
			}
			fv.Set(reflect.ValueOf(cpus))
			return nil
		case reflect.Struct: // kernels
			return d.decodeStructList(n, fv, path)
		case reflect.String:
			return d.decodeStringList(n, fv, tg, path)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return d.errAt(n, "%s: want true or false, got %s", path, describe(n))
		}
		fv.SetBool(n.Value == "true")
		return nil
	case reflect.String:
		want := "a value"
		if enum := tg.Get("enum"); enum != "" {
			want = "one of " + strings.Join(strings.Split(strings.TrimPrefix(enum, ","), ","), ", ")
		}
		s, err := d.scalar(n, path, want)
		if err != nil {
			return err
		}
		if err := d.checkString(n, s, tg, path); err != nil {
			return err
		}
		fv.SetString(s)
		return nil
	case reflect.Int, reflect.Int64, reflect.Uint64:
		if kind == "memory" {
			s, err := d.scalar(n, path, "a size such as 512MiB or 1GiB")
			if err != nil {
				return err
			}
			mib, msg := memoryMiB(s)
			if msg != "" {
				return d.errAt(n, "%s: %s", path, msg)
			}
			fv.SetInt(int64(mib))
			return nil
		}
		x, err := d.integer(n, tg, path, kind)
		if err != nil {
			return err
		}
		if fv.Kind() == reflect.Uint64 {
			fv.SetUint(uint64(x))
		} else {
			fv.SetInt(x)
		}
		return nil
	}
	panic(fmt.Sprintf("scenarios: no decoder for %s (%s)", path, fv.Type()))
}

func (d *decoder) scalar(n *yaml.Node, path, want string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		if n.Kind == yaml.SequenceNode {
			return "", d.errAt(n, "%s: want %s, got a list (only axis keys take a list of values to compare)", path, want)
		}
		return "", d.errAt(n, "%s: want %s, got %s", path, want, describe(n))
	}
	return n.Value, nil
}

func (d *decoder) decodeStructList(n *yaml.Node, fv reflect.Value, path string) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	if len(items) == 0 {
		return d.errAt(n, "%s: empty list; give at least one entry or leave the key out", path)
	}
	if len(items) > maxKernels {
		return d.errAt(n, "%s: %d entries; at most %d", path, len(items), maxKernels)
	}
	out := reflect.MakeSlice(fv.Type(), len(items), len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.pos[p] = it
		if it.Kind != yaml.MappingNode {
			return d.errAt(it, "%s: want a mapping such as {label: stock}, got %s", p, describe(it))
		}
		if err := d.decodeStruct(it, out.Index(i), p); err != nil {
			return err
		}
	}
	fv.Set(out)
	return nil
}

func (d *decoder) decodeStringList(n *yaml.Node, fv reflect.Value, tg *tags, path string) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	if len(items) > maxListLen {
		return d.errAt(n, "%s: %d values; at most %d", path, len(items), maxListLen)
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		s, err := d.scalar(it, p, "a word")
		if err != nil {
			return err
		}
		if err := d.checkString(it, s, tg, path); err != nil {
			return err
		}
		if slices.Contains(out, s) {
			return d.errAt(it, "%s: %q listed twice; list each once", path, s)
		}
		d.pos[p] = it
		out = append(out, s)
	}
	fv.Set(reflect.ValueOf(out))
	return nil
}

// integer parses an integer scalar with the field's range; kind queues
// accepts "auto" (0) and kind burst accepts "default" (-1).
func (d *decoder) integer(n *yaml.Node, tg *tags, path, kind string) (int64, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		switch {
		case kind == "queues" && n.Value == "auto":
			return 0, nil
		case kind == "burst" && n.Value == "default":
			return -1, nil
		}
	}
	hint := ""
	switch kind {
	case "queues":
		hint = " or auto"
	case "burst":
		hint = " or default"
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		if n.Kind == yaml.SequenceNode && tg.Get("axis") != "1" {
			return 0, d.errAt(n, "%s: want an integer%s, got a list (only axis keys take a list of values to compare)", path, hint)
		}
		return 0, d.errAt(n, "%s: want an integer%s, got %s", path, hint, describe(n))
	}
	x, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil {
		return 0, d.errAt(n, "%s: integer %s out of range", path, n.Value)
	}
	if kind == "burst" {
		if x < 0 {
			return 0, d.errAt(n, "%s: must not be negative, got %d; use 0, 1 or default", path, x)
		}
		if x > 1<<16 {
			return 0, d.errAt(n, "%s: %d is too large (pktgen allows at most 65536)", path, x)
		}
		return x, nil
	}
	if min, ok := tg.Lookup("min"); ok {
		lo, _ := strconv.ParseInt(min, 10, 64)
		if x < lo {
			if x < 0 && lo == 0 {
				return 0, d.errAt(n, "%s: must not be negative, got %d", path, x)
			}
			return 0, d.errAt(n, "%s: %d is below the minimum %d", path, x, lo)
		}
	}
	if max, ok := tg.Lookup("max"); ok {
		hi, _ := strconv.ParseInt(max, 10, 64)
		if x > hi {
			return 0, d.errAt(n, "%s: %d is above the maximum %d", path, x, hi)
		}
	}
	return x, nil
}

func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, error) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		return 0, d.errAt(n, "%s: duration %s has no unit; write %ss (Go duration: 500ms, 120s, 2m)", path, n.Value, n.Value)
	}
	s, err := d.scalar(n, path, "a duration such as 120s")
	if err != nil {
		return 0, err
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		return 0, d.errAt(n, "%s: bad duration %q; use a Go duration such as 500ms, 120s or 1m30s", path, s)
	}
	if dur < 0 {
		return 0, d.errAt(n, "%s: duration must not be negative, got %s", path, s)
	}
	if dur > 24*time.Hour {
		return 0, d.errAt(n, "%s: %s is longer than 24h; split the scenario", path, s)
	}
	return dur, nil
}

var memRE = regexp.MustCompile(`^([0-9]+)\s*([A-Za-z]*)$`)

// memoryMiB parses "1GiB", "512MiB", "2097152KiB" into MiB.
func memoryMiB(s string) (int, string) {
	m := memRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Sprintf("bad size %q; use a whole number with KiB, MiB or GiB such as 512MiB or 1GiB", s)
	}
	x, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || x > 1<<40 {
		return 0, fmt.Sprintf("size %q is out of range", s)
	}
	var kib int64
	switch m[2] {
	case "KiB":
		kib = x
	case "MiB":
		kib = x << 10
	case "GiB":
		kib = x << 20
	case "":
		return 0, fmt.Sprintf("size %s has no unit; write %sMiB or use GiB", s, m[1])
	case "K", "k", "KB", "kB", "M", "MB", "G", "GB", "Mi", "Gi", "m", "g":
		fix := map[byte]string{'K': "KiB", 'k': "KiB", 'M': "MiB", 'm': "MiB", 'G': "GiB", 'g': "GiB"}[m[2][0]]
		return 0, fmt.Sprintf("size unit %q is ambiguous; write %s%s (binary units KiB, MiB, GiB)", m[2], m[1], fix)
	default:
		return 0, fmt.Sprintf("unknown size unit %q; use KiB, MiB or GiB such as 512MiB or 1GiB", m[2])
	}
	if kib%1024 != 0 {
		return 0, fmt.Sprintf("size %s is not a whole number of MiB", s)
	}
	mib := kib >> 10
	if mib < 64 {
		return 0, fmt.Sprintf("size %s is below 64MiB; a guest needs at least that", s)
	}
	if mib > 1<<20 {
		return 0, fmt.Sprintf("size %s is above 1024GiB", s)
	}
	return int(mib), ""
}

// cpuList parses "0", 3, "0-3,6" or "none" (nil).
func (d *decoder) cpuList(n *yaml.Node, path string) ([]int, error) {
	s, err := d.scalar(n, path, "a CPU list such as 0, 0-3 or 0,2 (or none)")
	if err != nil {
		return nil, err
	}
	cpus, msg := parseCPUList(s)
	if msg != "" {
		return nil, d.errAt(n, "%s: %s", path, msg)
	}
	return cpus, nil
}

func parseCPUList(s string) ([]int, string) {
	bad := fmt.Sprintf("bad CPU list %q; use CPU numbers and ranges such as 0, 0-3 or 0,2,4-5 (or none)", s)
	s = strings.TrimSpace(s)
	if s == "none" {
		return nil, ""
	}
	if s == "" {
		return nil, bad
	}
	var set [4096]bool
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, bad
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, bad
			}
		}
		if b > 4095 {
			return nil, fmt.Sprintf("CPU %d is above 4095; use CPU numbers of this machine", b)
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	var cpus []int
	for c, ok := range set {
		if ok {
			cpus = append(cpus, c)
		}
	}
	return cpus, ""
}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	labelRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)
	debianRE  = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+(-[0-9]+)?)?$`)
	eventRE   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:/=,@-]{0,199}$`)
	rateRE    = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(pps|kpps|Mpps|B|kB|MB|GB|KiB|MiB|GiB|bit|kbit|Mbit|Gbit)$`)
	bitrateRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[KMGTkmgt]?$`)
	scriptRE  = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.sh$`)
	ifnameRE  = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// checkString validates a string value by its enum or kind tag.
func (d *decoder) checkString(n *yaml.Node, s string, tg *tags, path string) error {
	if enum, ok := tg.Lookup("enum"); ok {
		allowed := strings.Split(enum, ",")
		if !slices.Contains(allowed, s) {
			shown := slices.DeleteFunc(slices.Clone(allowed), func(a string) bool { return a == "" })
			if len(shown) < len(allowed) {
				shown = append(shown, "or leave it unset")
			}
			return d.errAt(n, "unknown %s %q%s (allowed: %s)", path, s, didYouMean(s, allowed), strings.Join(shown, ", "))
		}
		return nil
	}
	var msg string
	switch tg.Get("kind") {
	case "qdisc":
		msg = checkQdisc(s)
	case "ifname":
		msg = checkIfname(s)
	case "name":
		if !nameRE.MatchString(s) {
			msg = fmt.Sprintf("name %q: use lowercase letters, digits, '.', '_', '-' (at most 64, starting with a letter or digit)", s)
		}
	case "line":
		if strings.ContainsAny(s, "\n\r") || len(s) > 200 {
			msg = "description: one line of at most 200 characters"
		}
	case "label":
		if !labelRE.MatchString(s) {
			msg = fmt.Sprintf("kernel label %q: use letters, digits, '.', '_', '-' (at most 32), e.g. stock or patched", s)
		}
	case "debian":
		if !debianRE.MatchString(s) {
			msg = fmt.Sprintf("Debian kernel version %q: use MAJOR.MINOR or an ABI such as \"6.1\" or \"6.1.0-47\"", s)
		}
	case "path":
		if s == "" || strings.ContainsAny(s, "\x00\n") {
			msg = fmt.Sprintf("bad path %q; give a file or directory path", s)
		}
	case "ip":
		if !validIP(s) {
			msg = fmt.Sprintf("bad IP address %q; use e.g. 10.0.0.2 (or leave dst unset for the guest's address)", s)
		}
	case "mac":
		if !validMAC(s) {
			msg = fmt.Sprintf("bad MAC address %q; use six hex pairs such as 52:54:00:12:34:56 (or leave it unset)", s)
		}
	case "event":
		if !eventRE.MatchString(s) {
			msg = fmt.Sprintf("bad perf event %q; use perf list names such as cycles, task-clock or sched:sched_switch", s)
		}
	case "rate":
		if !rateRE.MatchString(s) {
			msg = fmt.Sprintf("bad trafgen rate %q; use a number with pps, kpps, Mpps, bit, kbit, Mbit, Gbit, B, kB, MB, GB such as 10kpps", s)
		}
	case "bitrate":
		if !bitrateRE.MatchString(s) {
			msg = fmt.Sprintf("bad iperf3 bitrate %q; use a number with an optional K, M, G or T suffix such as 500M", s)
		}
	case "script":
		if !scriptRE.MatchString(s) {
			msg = fmt.Sprintf("bad script %q; give a file name in samples/pktgen such as pktgen_sample02_multiqueue.sh", s)
		}
	case "memory":
		// handled by the int path
	}
	if msg != "" {
		return d.errAt(n, "%s", msg)
	}
	return nil
}

func checkIfname(s string) string {
	switch {
	case s == "":
		return "tap_name is empty; use a name such as vnbt0"
	case len(s) > 15:
		return fmt.Sprintf("tap_name %q is %d bytes; Linux interface names have at most 15 (IFNAMSIZ-1); use a shorter name such as vnbt0", s, len(s))
	case s == "." || s == "..":
		return fmt.Sprintf("tap_name %q is not a valid interface name; use a name such as vnbt0", s)
	case !ifnameRE.MatchString(s):
		for i, r := range s {
			if !ifnameRE.MatchString(string(r)) {
				return fmt.Sprintf("tap_name %q has %q at byte %d; use letters, digits, '-', '_', '.' such as vnbt0", s, r, i)
			}
		}
	}
	return ""
}

// Known tc qdisc kinds (iproute2 tc/q_*.c). Others are accepted when they
// look like a kind and are not a near miss of a known one.
var knownQdiscs = []string{
	"fq_codel", "noqueue", "pfifo_fast", "fq", "sfq", "pfifo", "bfifo", "pfifo_head_drop",
	"codel", "pie", "fq_pie", "cake", "red", "gred", "choke", "sfb", "tbf", "htb", "hfsc",
	"prio", "multiq", "mq", "mqprio", "netem", "drr", "qfq", "ets", "skbprio", "hhf",
	"plug", "taprio", "etf", "cbs",
}

var qdiscKindRE = regexp.MustCompile(`^[a-z][a-z0-9_]{1,15}$`)

func checkQdisc(s string) string {
	allowed := "(allowed: any tc qdisc kind such as fq_codel, noqueue, pfifo_fast, fq, sfq, ...)"
	if slices.Contains(knownQdiscs, s) {
		return ""
	}
	switch s {
	case "ingress", "clsact":
		return fmt.Sprintf("qdisc %q is not a root (egress) qdisc; use one such as fq_codel or noqueue", s)
	case "none", "default", "":
		return fmt.Sprintf("qdisc %q: write noqueue for no qdisc, or leave qdisc unset for the kernel's default", s)
	}
	if dym := didYouMean(s, knownQdiscs); dym != "" {
		return fmt.Sprintf("unknown qdisc %q%s %s", s, dym, allowed)
	}
	if !qdiscKindRE.MatchString(s) {
		return fmt.Sprintf("unknown qdisc %q: a tc kind is a lowercase word %s", s, allowed)
	}
	return ""
}

// didYouMean returns "; did you mean X?" for the closest candidate within
// two edits, or "".
func didYouMean(s string, candidates []string) string {
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
