package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/runner/lab"
)

// TestMain removes the binaries the tests built (vnetbenchBin,
// goInstallBin) from the temporary directory. The tests estimate from
// an empty table (the defaults: goldens do not depend on the machine's
// earlier runs) that runs do not write to (testCLI).
func TestMain(m *testing.M) {
	if os.Getenv(fakeLoopEnv) != "" { // cmd_shard_test.go: this process is the CLI
		os.Exit(fakeLoopMain())
	}
	if os.Getenv(holderEnv) != "" { // doctor_clean_test.go: a run's resources, held
		os.Exit(holderMain())
	}
	if os.Getenv(stepChildEnv) != "" { // bisect_harden_test.go: bisect-step's child
		os.Exit(stepChildTestMain())
	}
	dir, err := os.MkdirTemp("", "vnb-estimates-")
	if err != nil {
		panic(err)
	}
	testEstimateDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	for _, p := range []string{binPath, installPath} {
		if p != "" {
			os.RemoveAll(filepath.Dir(p))
		}
	}
	os.Exit(code)
}

// testEstimateDir is the tests' estimate table: empty (TestMain).
var testEstimateDir string

// testCLI is the CLI of the tests: plan and run show the accelerator of
// one host (testHost(tcgHost)), so the goldens describe it whatever the
// machine running the tests (TestPlanKVM describes others); estimates come
// from an empty table that runs do not write to.
func testCLI() *cli {
	return &cli{stdin: os.Stdin, host: func() lab.Host { return testHost(tcgHost) }, estimateDir: testEstimateDir}
}

// run is one CLI invocation with testCLI.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return testCLI().run(ctx, args, stdout, stderr)
}

// emptyTable is an estimate table without measurements (the defaults).
func emptyTable(t *testing.T) *estimate.Table {
	tab, err := estimate.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// An unknown subcommand near a real one names it: --version (as other
// tools spell it) is 'vnetbench version'.
func TestUnknownSubcommandDidYouMean(t *testing.T) {
	for arg, want := range map[string]string{
		"--version":  `unknown subcommand "--version"; did you mean version? ('vnetbench help' lists them)`,
		"reprot":     `unknown subcommand "reprot"; did you mean report? ('vnetbench help' lists them)`,
		"frobnicate": `unknown subcommand "frobnicate"; run 'vnetbench help' for the list`,
	} {
		err := run(t.Context(), []string{arg}, io.Discard, io.Discard)
		if exitCode(err) != exitBadInput || fmt.Sprint(err) != want {
			t.Errorf("%s: %v (exit %d), want %q", arg, err, exitCode(err), want)
		}
	}
}
