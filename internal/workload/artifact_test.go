package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AddJSONArtifact writes indented JSON under the window's directory and
// lists it relative to the run, replacing (not following) a link where the
// file goes; without a directory it keeps nothing, and a write it cannot
// do is a warning.
func TestAddJSONArtifact(t *testing.T) {
	dir := t.TempDir()
	w := &Window{Artifacts: dir, RelDir: "artifacts/c/host/0"}
	var r Result
	w.AddJSONArtifact(&r, "x.json", map[string]int{"lost": 3})
	b, err := os.ReadFile(filepath.Join(dir, "x.json"))
	if err != nil || string(b) != "{\n  \"lost\": 3\n}\n" {
		t.Errorf("x.json = %q (%v)", b, err)
	}
	if len(r.Artifacts) != 1 || r.Artifacts[0] != "artifacts/c/host/0/x.json" || len(r.Warnings) != 0 {
		t.Errorf("result %+v", r)
	}

	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(elsewhere, filepath.Join(dir, "y.json")); err != nil {
		t.Fatal(err)
	}
	w.AddJSONArtifact(&r, "y.json", 1)
	if fi, err := os.Lstat(filepath.Join(dir, "y.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("y.json over a link: %v, %v; want the link replaced by the file", fi, err)
	}
	if _, err := os.Stat(elsewhere); err == nil {
		t.Errorf("the write followed the link to %s", elsewhere)
	}

	gone := &Window{Artifacts: filepath.Join(dir, "missing"), RelDir: "artifacts/c/host/1"}
	var failed Result
	gone.AddJSONArtifact(&failed, "x.json", 1)
	if len(failed.Artifacts) != 0 || len(failed.Warnings) != 1 || !strings.HasPrefix(failed.Warnings[0], "artifact x.json not written: ") {
		t.Errorf("no such directory: result %+v", failed)
	}

	var none Result
	(&Window{}).AddJSONArtifact(&none, "z.json", 1)
	if len(none.Artifacts)+len(none.Warnings) != 0 {
		t.Errorf("no directory: result %+v", none)
	}
}
