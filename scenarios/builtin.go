package scenarios

import (
	"embed"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/vnetbench/vnetbench/internal/schema"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// builtinFile is the File of a built-in scenario, as errors show it.
func builtinFile(name string) string { return "builtin/" + name + ".yaml" }

// BuiltinData returns the YAML source of a built-in scenario.
func BuiltinData(name string) ([]byte, bool) {
	if !validBuiltinName(name) {
		return nil, false
	}
	b, err := builtinFS.ReadFile(builtinFile(name))
	return b, err == nil
}

func validBuiltinName(name string) bool {
	return name != "" && !strings.ContainsAny(name, `/\.`)
}

var builtins = sync.OnceValue(func() []BuiltinInfo {
	ents, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		panic(err)
	}
	var out []BuiltinInfo
	for _, e := range ents {
		name := strings.TrimSuffix(e.Name(), ".yaml")
		s, err := LoadBuiltin(name)
		if err != nil {
			panic("scenarios: bad built-in scenario: " + err.Error())
		}
		out = append(out, BuiltinInfo{Name: name, Description: s.Description})
	}
	slices.SortFunc(out, func(a, b BuiltinInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
})

// Builtins lists the built-in scenarios, sorted by name.
func Builtins() []BuiltinInfo { return slices.Clone(builtins()) }

// LoadBuiltin loads a built-in scenario by name.
func LoadBuiltin(name string, sets ...Set) (*Scenario, error) {
	b, ok := BuiltinData(name)
	if !ok {
		return nil, &Error{Msg: "no built-in scenario " + strconv.Quote(name) + "; vnetbench list shows them"}
	}
	s, err := Load(builtinFile(name), b, sets...)
	if s != nil {
		s.Builtin = true
	}
	return s, err
}

// Resolve loads a built-in scenario by name, or else a scenario file by
// path. A name that is neither says so and how to list the built-ins.
// sets override keys of the scenario (see Set).
func Resolve(nameOrPath string, sets ...Set) (*Scenario, error) {
	if _, ok := BuiltinData(nameOrPath); ok {
		return LoadBuiltin(nameOrPath, sets...)
	}
	if validBuiltinName(nameOrPath) && path.Ext(nameOrPath) == "" {
		if _, err := os.Stat(nameOrPath); err != nil {
			var names []string
			for _, b := range Builtins() {
				names = append(names, b.Name)
			}
			return nil, &Error{Msg: "no built-in scenario or file named " + strconv.Quote(nameOrPath) + schema.DidYouMean(nameOrPath, names) + " (vnetbench list shows the built-ins)"}
		}
	}
	return LoadFile(nameOrPath, sets...)
}
