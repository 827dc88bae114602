package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binaries the tests built (vnetbenchBin,
// goInstallBin) from the temporary directory.
func TestMain(m *testing.M) {
	if os.Getenv(fakeLoopEnv) != "" { // cmd_shard_test.go: this process is the CLI
		os.Exit(fakeLoopMain())
	}
	code := m.Run()
	for _, p := range []string{binPath, installPath} {
		if p != "" {
			os.RemoveAll(filepath.Dir(p))
		}
	}
	os.Exit(code)
}
