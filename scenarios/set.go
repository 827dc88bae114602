package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/schema"
)

// Set is one override from the command line (--set KEY=VALUE): a dotted
// key path of the scenario ("generator.pktgen.duration", "repetitions")
// and a value written as in the YAML ("10s", "[tap, tap+vhost]").
// Overrides are applied to the file's YAML node tree before it is
// decoded, so they take the same keys and pass the same validation as
// the file; an error at an overridden value names the override.
type Set struct {
	Key, Value string
}

// String is "KEY=VALUE", as --set takes it.
func (s Set) String() string { return s.Key + "=" + s.Value }

var setKeyRE = lazyre.New(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// ParseSet parses a --set argument, KEY=VALUE. The value may not hold
// control characters (newlines): one line of YAML.
func ParseSet(arg string) (Set, error) {
	k, v, ok := strings.Cut(arg, "=")
	if !ok {
		return Set{}, &Error{Msg: fmt.Sprintf("--set %s: want KEY=VALUE, e.g. --set generator.pktgen.duration=10s", arg)}
	}
	k = strings.TrimSpace(k)
	if !setKeyRE().MatchString(k) {
		return Set{}, &Error{Msg: fmt.Sprintf("--set %s: bad key %q; give a dotted path of scenario keys such as repetitions or generator.pktgen.duration", arg, k)}
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return Set{}, &Error{Msg: fmt.Sprintf("--set %s: the value holds a control character (a newline?); give one line of YAML", strconv.Quote(arg))}
	}
	return Set{Key: k, Value: v}, nil
}

// setLineBase is the line number the nodes of override i get
// (setLineBase+i): past any scenario file (at most maxFileBytes lines),
// so a position there is an override's. A line above 0 makes the key
// count as given (Resolver.Given), as in the file.
const setLineBase = 1 << 24

// applySets writes the overrides into the document's top-level mapping.
// Missing sections are created; a generator kind the scenario lacks is
// refused (it would add a cell kind, not change one).
func applySets(root *yaml.Node, sets []Set) error {
	for i, st := range sets {
		fail := func(format string, a ...any) error {
			return &Error{File: "--set " + st.String(), Msg: fmt.Sprintf(format, a...)}
		}
		val, err := setValue(st.Value)
		if err != nil {
			return fail("%v", err)
		}
		line := setLineBase + i
		markLine(val, line)
		parts := strings.Split(st.Key, ".")
		n := root
		for j, p := range parts {
			path := strings.Join(parts[:j], ".")
			if schema.IsNull(n) {
				*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line, Column: 1}
			}
			if n.Kind != yaml.MappingNode {
				return fail("%s is %s in the scenario, not a section of keys; set it whole (--set %s=VALUE)", path, schema.Describe(n), path)
			}
			last := j == len(parts)-1
			child := mapValue(n, p)
			switch {
			case child != nil && last:
				*child = *val
			case child != nil:
				n = child
			case j == 1 && parts[0] == "generator":
				return fail("generator.%s is not in the scenario (it has %s); --set changes a generator the scenario has", p, strings.Join(mapKeys(n), ", "))
			default:
				k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p, Line: line, Column: 1}
				v := val
				if !last {
					v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line, Column: 1}
				}
				n.Content = append(n.Content, k, v)
				n = v
			}
		}
	}
	return nil
}

// setValue parses an override's value as one YAML value.
func setValue(v string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(v), &doc); err != nil {
		return nil, fmt.Errorf("value is not YAML: %s (quote it for the shell: --set 'KEY=VALUE')", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, nil
	}
	n := doc.Content[0]
	if err := checkNoAliases("", n, 0); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, errors.New(e.Msg)
		}
		return nil, err
	}
	return n, nil
}

func markLine(n *yaml.Node, line int) {
	n.Line = line
	for _, c := range n.Content {
		markLine(c, line)
	}
}

// mapValue returns the value node of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func mapKeys(n *yaml.Node) []string {
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// setOf returns the override a position belongs to.
func setOf(sets []Set, line int) (Set, bool) {
	i := line - setLineBase
	if i < 0 || i >= len(sets) {
		return Set{}, false
	}
	return sets[i], true
}

// fixSetErr rewrites an *Error positioned at an override's value into one
// that names the override ("--set KEY=VALUE: msg").
func fixSetErr(err error, sets []Set) error {
	var e *Error
	if len(sets) == 0 || !errors.As(err, &e) {
		return err
	}
	st, ok := setOf(sets, e.Line)
	if !ok {
		return err
	}
	return &Error{File: "--set " + st.String(), Msg: e.Msg}
}

// fixSetWarning rewrites a warning "FILE:LINE:COL: msg" positioned at an
// override the same way.
func fixSetWarning(w, file string, sets []Set) string {
	rest, ok := strings.CutPrefix(w, file+":")
	if !ok || len(sets) == 0 {
		return w
	}
	num, msg, ok := strings.Cut(rest, ":")
	line, err := strconv.Atoi(num)
	if !ok || err != nil {
		return w
	}
	st, ok := setOf(sets, line)
	if !ok {
		return w
	}
	if col, m, ok := strings.Cut(msg, ":"); ok {
		if _, err := strconv.Atoi(col); err == nil {
			msg = m
		}
	}
	return "--set " + st.String() + ":" + msg
}
