package archtest

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"testing"
)

// No package variable compiles a regular expression when the program
// starts: every process of the binary, a nested guest's /init among them,
// would pay for all of them before main (seconds under nested emulation).
// They are internal/lazyre's, compiled on first use (perfparse, which
// imports nothing of the module, has its own copy, lazyRegexp); this test
// compiles each expression given to either instead, so a bad one still
// fails before it ships.
func TestRegexpsCompileOnFirstUse(t *testing.T) {
	checked := 0
	moduleFiles(t, parser.SkipObjectResolution, nil, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				inspectInit(gd, func(call *ast.CallExpr, name string) {
					if name == "regexp.MustCompile" || name == "regexp.Compile" || name == "regexp.MustCompilePOSIX" {
						t.Errorf("%s: a package variable calls %s at init: use lazyre.New, compiled on first use", fset.Position(call.Pos()), name)
					}
				})
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || callName(call) != "lazyre.New" && !isIdent(call.Fun, "lazyRegexp") {
				return true
			}
			checked++
			if err := compileLiteral(call); err != nil {
				t.Errorf("%s: %v", fset.Position(call.Pos()), err)
			}
			return true
		})
	})
	if checked == 0 {
		t.Fatal("found no lazyre.New or lazyRegexp call; the walk did not understand the module")
	}
}

// inspectInit calls visit with each call in a var declaration's values
// that runs at init: the bodies of function literals run later.
func inspectInit(gd *ast.GenDecl, visit func(call *ast.CallExpr, name string)) {
	for _, spec := range gd.Specs {
		for _, v := range spec.(*ast.ValueSpec).Values {
			ast.Inspect(v, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					return false
				case *ast.CallExpr:
					visit(n, callName(n))
				}
				return true
			})
		}
	}
}

// callName is "pkg.Func" for a call of a selector on an identifier.
func callName(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return id.Name + "." + sel.Sel.Name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// compileLiteral compiles the expression of a lazyre.New call, which must
// be a string literal for this test to see it.
func compileLiteral(call *ast.CallExpr) error {
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return errors.New("the expression is no string literal; give one, so that this test can compile it")
	}
	expr, err := strconv.Unquote(lit.Value)
	if err != nil {
		return err
	}
	_, err = regexp.Compile(expr)
	return err
}
