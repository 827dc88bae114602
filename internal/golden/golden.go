// Package golden compares test output with golden files, for the test
// packages of this module: one -update flag (go test ./PKG -update
// rewrites the files) and one comparison, with the first differing lines
// on a mismatch.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Update reports whether the test runs with -update: golden files are
// rewritten, not compared.
func Update() bool { return *update }

// Check compares got with testdata/name (File).
func Check(t *testing.T, name, got string) {
	t.Helper()
	File(t, filepath.Join("testdata", name), []byte(got))
}

// File compares got with the file at path, or rewrites that file (and
// makes its directory) when the test runs with -update.
func File(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update creates it)", err, t.Name())
	}
	if string(want) != string(got) {
		t.Errorf("%s differs (go test -run '%s' -update rewrites it):\n%s", path, t.Name(), Diff(string(want), string(got)))
	}
}

// Diff shows the first lines (up to 10) in which got differs from want.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			shown++
			fmt.Fprintf(&b, "line %d:\n  want: %q\n  got:  %q\n", i+1, wl, gl)
		}
	}
	if shown == 0 {
		return "(no line differs)"
	}
	return b.String()
}
