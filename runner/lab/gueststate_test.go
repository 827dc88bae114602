package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/scenarios"
)

// TestKeepGuestStates: the states a lab's run saved move into the cache,
// a link among them is neither followed nor copied, a failed save's
// temporary file is not kept, the run's state directory goes, and the
// cache keeps the newest keptStates states.
func TestKeepGuestStates(t *testing.T) {
	inner, cache := t.TempDir(), t.TempDir()
	key := strings.Repeat("ab", 16)
	link := strings.Repeat("cd", 16)
	in := filepath.Join(inner, runner.GuestStateDir)
	os.MkdirAll(in, 0o755)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(in, key), []byte("state"), 0o644)
	os.WriteFile(filepath.Join(in, key+".tmp"), []byte("half"), 0o644)
	os.Symlink(secret, filepath.Join(in, link))
	out := filepath.Join(cache, runner.GuestStateDir)
	os.MkdirAll(out, 0o755)
	var old []string
	for i := range keptStates {
		name := strings.Repeat(string(rune('0'+i)), 32)
		p := filepath.Join(out, name)
		os.WriteFile(p, []byte("old"), 0o644)
		mod := time.Now().Add(-time.Duration(10-i) * time.Hour) // the first is the oldest
		os.Chtimes(p, mod, mod)
		old = append(old, name)
	}

	kept, err := keepGuestStates(inner, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept, []string{key}) {
		t.Errorf("kept %q, want %s", kept, key)
	}
	if b, err := os.ReadFile(filepath.Join(out, key)); err != nil || string(b) != "state" {
		t.Errorf("cache's %s: %q, %v", key, b, err)
	}
	if _, err := os.Lstat(in); !os.IsNotExist(err) {
		t.Errorf("the run's state directory is still there (%v)", err)
	}
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := append(slices.Clone(old[1:]), key)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("cache holds %q, want %q (the oldest pruned, no link, no temporary file)", names, want)
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret" {
		t.Errorf("the link's target changed")
	}
	if kept, err := keepGuestStates(inner, cache); err != nil || len(kept) != 0 {
		t.Errorf("a run without states: kept %q, %v", kept, err)
	}
}

// TestGuestStatesEnv: the run inside a lab is pointed at the cache's
// saved states unless the run boots every guest (--boot-guests).
func TestGuestStatesEnv(t *testing.T) {
	cells := builtinCellsOf(t, "lab-pktgen")
	var stock []scenarios.Cell
	for _, c := range cells {
		if c.Kernel.Label == "stock" {
			stock = append(stock, c)
		}
	}
	for _, boot := range []bool{false, true} {
		c := labConfigT(t, "stock", stock, runner.Options{Dir: "/runs/r1"}, Inner{BootGuests: boot}, []string{"run"})
		has := slices.ContainsFunc(c.Env, func(e string) bool { return strings.HasPrefix(e, runner.GuestStatesEnv+"=") })
		if has == boot {
			t.Errorf("boot guests %v: lab environment %q", boot, c.Env)
		}
	}
}
