// Command vnetbench benchmarks the Linux kernel's virtual network datapaths
// (tun/tap, vhost-net) from a scenario YAML file: it boots a QEMU guest on a
// tap NIC, drives it with pktgen, trafgen or iperf3, and reports mail-ready
// tables, JSON/CSV/benchfmt output and exit codes for CI gates.
//
// main only calls run, so the whole CLI is testable in-process.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/schema"
	"github.com/vnetbench/vnetbench/internal/textsafe"
	"github.com/vnetbench/vnetbench/perfparse"

	// Every workload (pktgen, trafgen, iperf3, ...): scenarios decode
	// their sections, the runner runs them.
	_ "github.com/vnetbench/vnetbench/internal/workload/all"
)

// Exit codes: 0 ok, 1 the measured thing failed or a gate tripped,
// 2 bad input or a missing capability, 3 a comparison the runs cannot
// decide yet (compare's UNKNOWN verdict).
const (
	exitOK        = 0
	exitFailure   = 1
	exitBadInput  = 2
	exitUndecided = 3
)

// command is one subcommand. run receives the arguments after the
// subcommand name. A hidden command runs like any other but is left out of
// 'vnetbench help' (internal entry points such as lab-init).
type command struct {
	summary string
	run     func(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error
	hidden  bool
	// teardown: the command undoes host state it made (netns, taps,
	// VMs) when a signal ends it, with deadlines of its own, and exits
	// at once on a second signal (forceOnSecondSignal). Any other
	// command exits stopGrace after the first, whatever it is doing
	// (blocked on a FIFO, reading a huge input).
	teardown bool
}

// stopGrace is how long a command without teardown has to return after
// SIGINT or SIGTERM before the process exits 128+signal anyway.
const stopGrace = 200 * time.Millisecond

// commands is the subcommand table; each subcommand lives in its own file.
var commands = map[string]command{
	"list":        {summary: "list the built-in scenarios", run: cmdList},
	"validate":    {summary: "check scenario files without touching the host", run: cmdValidate},
	"plan":        {summary: "print the cells of a scenario in run order with their commands", run: cmdPlan},
	"run":         {summary: "run a scenario and write a run directory", run: cmdRun, teardown: true},
	"doctor":      {summary: "report what this host can run and what is missing", run: cmdDoctor, teardown: true},
	"report":      {summary: "render run directories or benchfmt files as tables", run: cmdReport},
	"compare":     {summary: "compare two runs: SAME, DIFFERENT or UNKNOWN per gated metric (exit 1 on a regression, 3 when undecided)", run: cmdCompare},
	"parse":       {summary: "parse a tool's output (perf, pktgen, iperf3, ...) to JSON", run: cmdParse},
	"image":       {summary: "build the guest image (kernel + initramfs + agent)", run: cmdImage},
	"merge":       {summary: "join run directories of shards into one", run: cmdMerge},
	"history":     {summary: "find change points in the history of runs (index, CI gate)", run: cmdHistory},
	"bisect":      {summary: "find the first commit of a kernel tree whose scenario measures as the bad ref does", run: cmdBisect, teardown: true},
	"bisect-step": {summary: "judge HEAD of a kernel tree against a good ref, for 'git bisect run' (exit 0 good, 1 bad, 125 skip)", run: cmdBisectStep, teardown: true},
	"version":     {summary: "print the version", run: cmdVersion},
}

func main() {
	// The same binary is the guest's /init and the lab VM's /init
	// (cmd_agent.go decides which, from the pid and argv alone).
	agent, args := dispatch(os.Getpid(), os.Args)
	if agent {
		runGuestAgent()
		return
	}
	// The first SIGINT/SIGTERM cancels ctx with the signal as its cause:
	// commands tear down and return; an interrupted command then exits
	// 128+signal (130 for SIGINT), like a shell reports it.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	grace := stopGrace
	if len(args) > 0 && commands[args[0]].teardown {
		grace = 0 // the command tears down; forceOnSecondSignal ends it
	}
	go watchSignals(sigs, cancel, grace, os.Stderr, os.Exit)
	if os.Getenv(stepChildEnv) != "" { // bisect-step's judging child
		os.Exit(stepChildMain(ctx, newCLI(), args, os.Stdout, os.Stderr))
	}
	err := newCLI().run(ctx, args, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	if err != nil && !errors.Is(err, errHelp) {
		fmt.Fprintf(os.Stderr, "vnetbench: %s\n", textsafe.Terminal(err.Error())) // names in errors come from files
	}
	os.Exit(exitCodeAfter(err, context.Cause(ctx)))
}

// watchSignals cancels the command's context with the first signal of
// sigs as its cause. With grace > 0 it then exits 128+signal when grace
// has passed or at a second signal, whichever comes first, so that no
// command outlives a signal by more than grace: one blocked in a read
// (parse of a FIFO, report of a benchfmt FIFO) or busy with a large
// input never looks at its context.
func watchSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, grace time.Duration, stderr io.Writer, exit func(int)) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	s := sig.(syscall.Signal)
	cancel(&signalError{s})
	if grace <= 0 {
		return
	}
	select {
	case <-sigs:
	case <-time.After(grace):
		fmt.Fprintf(stderr, "vnetbench: %v: stopped\n", &signalError{s})
	}
	exit(128 + int(s))
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "interrupted by " + e.sig.String() }

// exitCodeAfter is the exit code of err from a command whose context
// ended with cause: a failed command that a signal interrupted exits
// 128+signal number (except bisect-step's, which git bisect run would
// take as an abort: it stays 125, skip); otherwise exitCode(err).
func exitCodeAfter(err, cause error) int {
	var se *signalError
	if err != nil && errors.As(cause, &se) && !errors.As(err, new(*stepExit)) {
		return 128 + int(se.sig)
	}
	return exitCode(err)
}

// run executes one CLI invocation.
func (cl *cli) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return usageErrorf("no subcommand given")
		}
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		// "--version" and "reprot" name a subcommand a user meant.
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names) // a tie goes to the same name every time
		if mean := schema.DidYouMean(strings.TrimLeft(args[0], "-"), names); mean != "" {
			return usageErrorf("unknown subcommand %q%s ('vnetbench help' lists them)", args[0], mean)
		}
		return usageErrorf("unknown subcommand %q; run 'vnetbench help' for the list", args[0])
	}
	return c.run(ctx, cl, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vnetbench <subcommand> [flags] [args]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	width := 0 // the longest name's: bisect-step's summary ran into it
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'vnetbench <subcommand> -h' for its flags.")
}

// exitCode is the one mapping from errors to exit codes. Libraries say
// what kind of error they return (internal/fault's classes), never a code:
// bad input or a missing capability is 2, anything else (a measured
// failure, a tripped gate, a harness failure) 1. An interrupted command's
// code is exitCodeAfter's.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, new(*stepExit)):
		var se *stepExit
		errors.As(err, &se)
		return se.code
	case errors.Is(err, fault.ErrInput), errors.Is(err, fault.ErrCapability), perfparseInput(err):
		return exitBadInput
	case errors.Is(err, fault.ErrUndecided):
		return exitUndecided
	}
	return exitFailure
}

// usageErrorf is bad command-line input.
// perfparseInput reports whether err is perfparse's bad input: a
// malformed tool output or an unknown kind (perfparse, a public package,
// has its own error types rather than the module's fault classes).
func perfparseInput(err error) bool {
	var se *perfparse.SyntaxError
	var ue *perfparse.UnknownKindError
	return errors.As(err, &se) || errors.As(err, &ue)
}

func usageErrorf(format string, a ...any) error { return fault.Input(format, a...) }
