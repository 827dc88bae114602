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

// overMethods are the types over maxMethods when the rule came (issue
// 35), with their counts then: one may shrink, not grow, and leaves the
// list when it is down to maxMethods.
var overMethods = map[string]int{
	"runner/kbuild.Builder": 22,
}

func TestMethodsPerType(t *testing.T) {
	counts := map[string]int{} // package dir + "." + type -> methods
	moduleFiles(t, parser.SkipObjectResolution, nil, func(rel string, _ *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
				counts[path.Dir(rel)+"."+recvType(fd.Recv.List[0].Type)]++
			}
		}
	})
	types := make([]string, 0, len(counts))
	for typ := range counts {
		types = append(types, typ)
	}
	slices.SortFunc(types, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	for _, typ := range types {
		n, was := counts[typ], overMethods[typ]
		switch {
		case was > 0 && n <= maxMethods:
			t.Errorf("%s: %d methods, within %d now: take it off overMethods", typ, n, maxMethods)
		case was > 0 && n > was:
			t.Errorf("%s: %d methods, more than its %d when the rule came: give the new job a type of its own", typ, n, was)
		case was == 0 && n > maxMethods:
			t.Errorf("%s: %d methods, more than %d: split it into types with a job each", typ, n, maxMethods)
		}
	}
	for typ := range overMethods {
		if counts[typ] == 0 {
			t.Errorf("%s is on overMethods but has no methods (renamed or gone?): take it off", typ)
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
