package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// VnetbenchBinary returns $VNETBENCH_BIN (make e2e and make test set it to
// the binary they built) or builds the main package at cmdDir (relative to
// the test's package, e.g. "../../cmd/vnetbench") into a temporary
// directory. The build is static (CGO_ENABLED=0): a lab VM runs it as /init.
func VnetbenchBinary(tb testing.TB, cmdDir string) string {
	tb.Helper()
	if b := os.Getenv("VNETBENCH_BIN"); b != "" {
		return b
	}
	out := filepath.Join(tb.TempDir(), "vnetbench")
	cmd := exec.Command("go", "build", "-o", out, cmdDir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build vnetbench: %v\n%s", err, b)
	}
	return out
}
