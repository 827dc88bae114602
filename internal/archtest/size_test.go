package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// Size limits of the module's code (tests and testdata aside): a file
// holds at most maxFileLines lines and a function fits on a screen or
// two, maxFuncLines at most (table data is no function).
const (
	maxFileLines = 700
	maxFuncLines = 100
)

func TestFileAndFunctionSizes(t *testing.T) {
	moduleFiles(t, parser.SkipObjectResolution, nil, func(rel string, fset *token.FileSet, f *ast.File) {
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it by concern", rel, n, maxFileLines)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: func %s: %d lines, more than %d: split it into named steps", rel, fd.Name.Name, n, maxFuncLines)
			}
		}
	})
}
