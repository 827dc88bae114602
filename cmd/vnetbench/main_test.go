package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binaries the tests built (vnetbenchBin,
// goInstallBin) from the temporary directory. The tests estimate from
// an empty table (the defaults: goldens do not depend on the machine's
// earlier runs) that runs do not write to.
func TestMain(m *testing.M) {
	if os.Getenv(fakeLoopEnv) != "" { // cmd_shard_test.go: this process is the CLI
		os.Exit(fakeLoopMain())
	}
	dir, err := os.MkdirTemp("", "vnb-estimates-")
	if err != nil {
		panic(err)
	}
	estimateDir = func() string { return dir }
	recordEstimates = false
	code := m.Run()
	os.RemoveAll(dir)
	for _, p := range []string{binPath, installPath} {
		if p != "" {
			os.RemoveAll(filepath.Dir(p))
		}
	}
	os.Exit(code)
}
