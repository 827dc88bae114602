package qemu

import (
	"os"
	"testing"

	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

// TestMain records the QEMUs the tests start in a ledger directory of
// their own (testenv.TempLedger), not in the real one doctor reads.
func TestMain(m *testing.M) {
	done := testenv.TempLedger()
	code := m.Run()
	done()
	os.Exit(code)
}

// Launch records each QEMU in this process's ledger: the tests' ledger
// is the temporary one, so they leave no file in /run/vnetbench/ledger.
func TestLedgerIsTemporary(t *testing.T) {
	if d := ledger.Path(); os.Getenv(ledger.DirEnv) == "" || d == ledger.Default {
		t.Errorf("the tests' ledger directory is %s, not a temporary one (TestMain: testenv.TempLedger)", d)
	}
}
