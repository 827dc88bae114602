package kbuild

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// BaseConfig is the harness's config fragment, applied on top of `make
// allnoconfig`: what a lab VM (and a guest) needs, all built in.
//
//go:embed base.config
var BaseConfig string

// Option is one line of a config fragment: CONFIG_NAME=value, or
// "# CONFIG_NAME is not set" (Value "n").
type Option struct {
	Name  string // with the CONFIG_ prefix
	Value string // y, m, n, a number or a quoted string as written
	Line  int    // in its fragment
}

var (
	setRe   = lazyre.New(`^(CONFIG_[A-Za-z0-9_]+)=(.*)$`)
	unsetRe = lazyre.New(`^# (CONFIG_[A-Za-z0-9_]+) is not set$`)
)

// ParseFragment reads a config fragment (.config syntax). Blank lines and
// comments are skipped; any other line is an error naming it.
func ParseFragment(name, text string) ([]Option, error) {
	var out []Option
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if m := setRe().FindStringSubmatch(l); m != nil {
			out = append(out, Option{Name: m[1], Value: m[2], Line: i + 1})
			continue
		}
		if m := unsetRe().FindStringSubmatch(l); m != nil {
			out = append(out, Option{Name: m[1], Value: "n", Line: i + 1})
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		return nil, fault.Input("%s:%d: %q is not a config line; write CONFIG_NAME=y (or =m, =n, a number, a \"string\") or # CONFIG_NAME is not set", name, i+1, l)
	}
	return out, nil
}

// Fragment is the config a kernel is built with: BaseConfig, then the
// scenario's fragment, which wins where both set an option.
type Fragment struct {
	Text    string   // what KCONFIG_ALLCONFIG reads
	Options []Option // the final value of every option named, in order
}

// MakeFragment joins BaseConfig and the user's fragment (its file name and
// text; "" for none).
func MakeFragment(userName, userText string) (*Fragment, error) {
	base, err := ParseFragment("base.config", BaseConfig)
	if err != nil {
		return nil, err
	}
	var user []Option
	if userName != "" {
		if user, err = ParseFragment(userName, userText); err != nil {
			return nil, err
		}
	}
	final := map[string]string{}
	var order []string
	for _, o := range append(base, user...) {
		if _, ok := final[o.Name]; !ok {
			order = append(order, o.Name)
		}
		final[o.Name] = o.Value
	}
	f := &Fragment{}
	var b strings.Builder
	for _, n := range order {
		v := final[n]
		f.Options = append(f.Options, Option{Name: n, Value: v})
		if v == "n" {
			fmt.Fprintf(&b, "# %s is not set\n", n)
		} else {
			fmt.Fprintf(&b, "%s=%s\n", n, v)
		}
	}
	f.Text = b.String()
	return f, nil
}

// ReadFragment reads the user's fragment file ("" = none) and makes the
// fragment.
func ReadFragment(path string) (*Fragment, error) {
	if path == "" {
		return MakeFragment("", "")
	}
	b, err := safefs.ReadFile(path, safefs.MaxSmall)
	if err != nil {
		return nil, fault.Input("config fragment %s: %w; fix config:", path, err)
	}
	return MakeFragment(path, string(b))
}

// ReadConfig parses a .config into name -> value ("n" for "is not set").
func ReadConfig(text string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if m := setRe().FindStringSubmatch(l); m != nil {
			out[m[1]] = m[2]
		} else if m := unsetRe().FindStringSubmatch(l); m != nil {
			out[m[1]] = "n"
		}
	}
	return out
}

// Lost lists the fragment's options that the final .config does not have
// as asked ("CONFIG_X=y (now n)"), sorted: olddefconfig drops an option
// whose dependencies are not met, or that the tree does not know.
func (f *Fragment) Lost(config map[string]string) []string {
	var out []string
	for _, o := range f.Options {
		got, ok := config[o.Name]
		if !ok {
			got = "n"
			if o.Value == "n" {
				continue
			}
			out = append(out, fmt.Sprintf("%s=%s (gone: unknown here or its dependencies are off)", o.Name, o.Value))
			continue
		}
		if got != o.Value {
			out = append(out, fmt.Sprintf("%s=%s (now %s)", o.Name, o.Value, got))
		}
	}
	sort.Strings(out)
	return out
}
