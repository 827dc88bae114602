package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// counterNames are metric keys that are also the names of counters the
// code reads (sysfs tx_packets, the tc qdisc's drops, iperf3's JSON
// retransmits): a literal of them is not always a metric key.
var counterNames = map[string]bool{"tx_packets": true, "qdisc_drops": true, "retransmits": true}

// Code outside tests names the shared metric keys by internal/metric's
// constants (metric.TxPPS), never by a string literal.
func TestMetricKeysAreConstants(t *testing.T) {
	keys := metricKeys(t, filepath.Join("..", "..", "internal", "metric", "keys.go"))
	moduleFiles(t, parser.SkipObjectResolution, func(dir string) bool { return dir == "internal/metric" }, func(_ string, fset *token.FileSet, f *ast.File) {
		// A struct tag (`json:"tx_pps"`) is a literal too, but never
		// equal to a key.
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && keys[s] != "" && !counterNames[s] {
				t.Errorf("%s: %q: name it metric.%s", fset.Position(lit.Pos()), s, keys[s])
			}
			return true
		})
	})
}

// metricKeys reads keys.go's constants: key -> constant name.
func metricKeys(t *testing.T, path string) map[string]string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					keys[s] = vs.Names[i].Name
				}
			}
		}
	}
	if len(keys) < 10 {
		t.Fatalf("%s: %d key constants; the file was not understood", path, len(keys))
	}
	return keys
}
