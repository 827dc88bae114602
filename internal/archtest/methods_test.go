package archtest

import (
	"cmp"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strings"
	"testing"
)

// maxMethods is the most methods a type of the module declares (tests
// aside): a type with more does several jobs; give each its own type.
const maxMethods = 20

// No type has more than maxMethods methods. The rule came (issue 35) with
// one exception, kbuild.Builder at 22, whose cache lookups became
// kbuild.Cache's.
func TestMethodsPerType(t *testing.T) {
	counts := map[string]int{} // package dir + "." + type -> methods
	moduleFiles(t, parser.SkipObjectResolution, nil, func(rel string, _ *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
				counts[path.Dir(rel)+"."+recvType(fd.Recv.List[0].Type)]++
			}
		}
	})
	if counts["runner/kbuild.Builder"] == 0 {
		t.Fatalf("no methods counted for kbuild.Builder: the walk over the module's files found nothing")
	}
	types := make([]string, 0, len(counts))
	for typ := range counts {
		types = append(types, typ)
	}
	slices.SortFunc(types, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	for _, typ := range types {
		if n := counts[typ]; n > maxMethods {
			t.Errorf("%s: %d methods, more than %d: split it into types with a job each", typ, n, maxMethods)
		}
	}
}

// recvType is the name of a method's receiver type: T of T, *T, T[P].
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}
