package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// moduleFiles parses the module's Go files, tests and testdata aside (and
// the directories skip names by their slash path from the module root),
// with mode, and calls visit with each file's slash path from the root.
// It fails t when the walk reads fewer than 100 files: then it did not
// find the module.
func moduleFiles(t *testing.T, mode parser.Mode, skip func(dir string) bool, visit func(rel string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root || skip != nil && skip(rel)):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go"):
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, mode)
		if err != nil {
			return err
		}
		files++
		visit(rel, fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s; the walk did not find the module", files, root)
	}
}
