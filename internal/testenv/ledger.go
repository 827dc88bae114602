package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/ledger"
)

// TempLedger points the ledger (internal/ledger) of this process and of
// the children it starts at a new temporary directory, so a package's
// tests leave no ledger where `vnetbench doctor` reads real runs' (for
// root /run/vnetbench/ledger). Call it in TestMain before m.Run and call
// done after it:
//
//	func TestMain(m *testing.M) {
//		done := testenv.TempLedger()
//		code := m.Run()
//		done()
//		os.Exit(code)
//	}
//
// done removes the directory. A ledger still in it then (after up to 2 s
// for a QEMU's exit to be recorded) lists something a test made and did
// not remove: it is copied to the real ledger directory first, where
// doctor --clean finds what it lists once the tests have exited. A
// VNETBENCH_LEDGER_DIR set already is kept (done does nothing).
func TempLedger() (done func()) {
	if os.Getenv(ledger.DirEnv) != "" {
		return func() {}
	}
	return tempLedger(ledger.Path(), 2*time.Second)
}

// tempLedger is TempLedger keeping the ledgers left after wait in real.
func tempLedger(real string, wait time.Duration) (done func()) {
	dir, err := os.MkdirTemp("", "vnb-test-ledger-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: temporary ledger directory: %v (the tests record in %s)\n", err, real)
		return func() {}
	}
	os.Setenv(ledger.DirEnv, dir)
	return func() {
		defer os.RemoveAll(dir)
		left, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for end := time.Now().Add(wait); len(left) > 0 && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
			left, _ = filepath.Glob(filepath.Join(dir, "*.jsonl"))
		}
		for _, f := range left {
			if err := keepLedger(f, real); err != nil {
				fmt.Fprintf(os.Stderr, "testenv: a test left ledger %s (it lists what the test did not remove): keep it in %s: %v\n", f, real, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "testenv: a test left ledger %s; kept in %s for vnetbench doctor --clean\n", filepath.Base(f), real)
		}
	}
}

// keepLedger copies ledger file f into directory real, as a new file
// (the ledger package's own mode and flags).
func keepLedger(f, real string) error {
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(real, 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(real, filepath.Base(f)), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return errors.Join(err, out.Close())
}
