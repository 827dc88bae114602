package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Create refuses a directory that is not empty (before, it accepted one
// without results.jsonl and wrote through what was there); an empty one
// or a new one is fine.
func TestCreateRefusesNonEmpty(t *testing.T) {
	tmp := t.TempDir()
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{empty, filepath.Join(tmp, "new")} {
		w, err := Create(d, Env{Run: "r"})
		if err != nil {
			t.Fatalf("Create(%s): %v", d, err)
		}
		w.Close()
	}
	full := filepath.Join(tmp, "full")
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "notes.txt"), nil, 0o644)
	if _, err := Create(full, Env{}); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Create of a non-empty directory: %v, want bad input saying it is not empty", err)
	}
	if _, err := Create(empty, Env{}); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("Create of a run directory: %v, want bad input naming --resume", err)
	}
}

// plant makes a symbolic link at dir/name to a fresh file outside dir and
// returns that file's path.
func plant(t *testing.T, dir, name string) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, name))
	if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return victim
}

func checkUntouched(t *testing.T, victim, what string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "untouched" {
		t.Errorf("%s: written through a planted link: %q, %v", what, b, err)
	}
}

// A resumed run directory holding symbolic links at the layout's names
// (as a lab VM or another user could plant them): nothing is read or
// written through them.
func TestRunDirLinksNotFollowed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir, Env{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()

	// env.json.tmp (the old temporary name) and env.json.
	v1, v2 := plant(t, dir, EnvFile+".tmp"), plant(t, dir, EnvFile)
	if _, err := ReadEnv(dir); err == nil {
		t.Error("ReadEnv read env.json through a link")
	}
	if err := WriteEnv(dir, Env{Run: "r2"}); err != nil {
		t.Fatal(err)
	}
	checkUntouched(t, v1, "WriteEnv (env.json.tmp)")
	checkUntouched(t, v2, "WriteEnv (env.json)")
	if e, err := ReadEnv(dir); err != nil || e.Run != "r2" {
		t.Errorf("env.json after WriteEnv: %+v, %v", e, err)
	}

	// An artifact directory's parent.
	w, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "host", "1"), 0o755)
	os.WriteFile(filepath.Join(outside, "host", "1", "keep"), []byte("untouched"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, ArtifactsDir, "tap")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.ArtifactDir("tap", "host", 0); err == nil {
		t.Error("ArtifactDir made its directory through a link")
	}
	checkUntouched(t, filepath.Join(outside, "host", "1", "keep"), "ArtifactDir (RemoveAll)")

	// results.jsonl itself.
	w.Close()
	v3 := plant(t, dir, ResultsFile)
	if _, err := Open(dir); err == nil {
		t.Error("Open followed results.jsonl's link")
	}
	checkUntouched(t, v3, "Open")
	// artifacts/ as a link.
	os.Remove(filepath.Join(dir, ResultsFile))
	os.WriteFile(filepath.Join(dir, ResultsFile), nil, 0o644)
	os.RemoveAll(filepath.Join(dir, ArtifactsDir))
	os.Symlink(outside, filepath.Join(dir, ArtifactsDir))
	if _, err := Open(dir); err == nil {
		t.Error("Open accepted artifacts/ as a link")
	}
}
