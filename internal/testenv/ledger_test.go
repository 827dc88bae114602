package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vnetbench/vnetbench/internal/ledger"
)

// A package's tests record in a directory of their own; done removes it,
// keeping in the real directory only a ledger a test left (one that still
// lists something), where doctor reads it.
func TestTempLedger(t *testing.T) {
	real := t.TempDir()
	t.Setenv(ledger.DirEnv, "")
	done := tempLedger(real, 0)
	dir := ledger.Path()
	if dir == real || dir == ledger.Default || filepath.Dir(dir) != filepath.Clean(os.TempDir()) {
		t.Fatalf("ledger directory %s, want a new one under %s", dir, os.TempDir())
	}
	if err := os.WriteFile(filepath.Join(dir, "vnb0123456789.jsonl"), []byte(`{"owner":{"id":"vnb0123456789"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after done: %v", dir, err)
	}
	b, err := os.ReadFile(filepath.Join(real, "vnb0123456789.jsonl"))
	if err != nil || string(b) != `{"owner":{"id":"vnb0123456789"}}`+"\n" {
		t.Errorf("the left ledger in the real directory: %q, %v", b, err)
	}
}
