package main

import (
	"context"
	"io"
	"os"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/estimate"
	"github.com/vnetbench/vnetbench/internal/session"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/lab"
	"github.com/vnetbench/vnetbench/vmimages"
)

// cli is what the commands take from the machine they run on: the
// binary's (newCLI) in main, others in tests, which describe other hosts
// and cannot build kernels or boot VMs.
type cli struct {
	// stdin is what "parse KIND -" reads.
	stdin io.Reader
	// host describes this machine's KVM, CPUs and memory for plan, run
	// --dry-run and run (lab.ThisHost: its KVM probe runs a test vCPU).
	host func() lab.Host
	// estimateDir is where the host's measured rates live (estimate.File).
	estimateDir string
	// recordEstimates: a run adds what it measured to the estimate table.
	recordEstimates bool
	// runOptions, when set, edits the runner's options before a run (a
	// fake guest agent and generator).
	runOptions func(*runner.Options)
	// judge decides one bisect candidate (nil = cl.judgeCommit: a run of
	// the good ref and the candidate).
	judge func(ctx context.Context, o *bisectOpts, commit string, stdout, stderr io.Writer) (bisect.Outcome, error)
	// stepInline: bisect-step judges in this process (the child that
	// isolateStep starts, and tests with a fake judge) instead of in a
	// child whose death cannot pass for a verdict.
	stepInline bool
}

// newCLI is the binary's: this machine, its cache, its standard input.
func newCLI() *cli {
	return &cli{stdin: os.Stdin, host: lab.ThisHost, estimateDir: vmimages.CacheDir(), recordEstimates: true}
}

// machine fills in what a run takes from the machine cl describes.
func (cl *cli) machine(o *session.Options) {
	o.Host, o.EstimateDir, o.RecordEstimates, o.EditRunner = cl.host, cl.estimateDir, cl.recordEstimates, cl.runOptions
}

// loadTable reads the host's measured rates; a broken file is a
// warning and the defaults.
func (cl *cli) loadTable(stderr io.Writer, prefix string) *estimate.Table {
	return session.LoadTable(stderr, prefix, cl.estimateDir)
}
