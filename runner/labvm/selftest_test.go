package labvm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// A console log of the nested guest's name already in the user's -o is
// the user's file: the self-test refuses it (bad input) before it boots
// anything, and the file survives as it was.
func TestSelfTestKeepsUsersConsole(t *testing.T) {
	out := t.TempDir()
	console := filepath.Join(out, "nested-tap-console.log")
	if err := os.WriteFile(console, []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := SelfTestConfig{OutDir: out, consoles: map[string]bool{}}
	_, _, err := bootNestedVM(context.Background(), c, "tap", "", "")
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), console) {
		t.Fatalf("err = %v, want bad input naming %s", err, console)
	}
	if b, err := os.ReadFile(console); err != nil || string(b) != "the user's\n" {
		t.Fatalf("%s = %q, %v; want it untouched", console, b, err)
	}
}

// A link planted at the console's name is refused, not followed; its
// target survives. A console this invocation made is reused.
func TestNewConsole(t *testing.T) {
	out := t.TempDir()
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(out, "link.log")); err != nil {
		t.Fatal(err)
	}
	c := SelfTestConfig{OutDir: out, consoles: map[string]bool{}}
	if _, err := c.newConsole("link.log"); !errors.Is(err, fault.ErrInput) {
		t.Fatalf("link: err = %v, want bad input", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("link target = %q, want it untouched", b)
	}
	p, err := c.newConsole("c.log")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("first boot"), 0o644)
	if _, err := c.newConsole("c.log"); err != nil {
		t.Fatalf("second boot of a console this run made: %v", err)
	}
	if b, _ := os.ReadFile(p); len(b) != 0 {
		t.Fatalf("%s = %q, want it truncated", p, b)
	}
}
