package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestParseFlagsInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		pos     []string
		failOn  string
		verbose bool
	}{
		{[]string{"a", "b", "--fail-on", "x"}, []string{"a", "b"}, "x", false},
		{[]string{"--fail-on=y", "a", "-v", "b"}, []string{"a", "b"}, "y", true},
		{[]string{"a", "--", "-v"}, []string{"a", "-v"}, "", false},
		{[]string{"-", "-v"}, []string{"-"}, "", true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		failOn := fs.String("fail-on", "", "")
		v := fs.Bool("v", false, "")
		pos, err := parseFlags(fs, tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !reflect.DeepEqual(pos, tc.pos) || *failOn != tc.failOn || *v != tc.verbose {
			t.Errorf("%v: got pos=%v fail-on=%q v=%v", tc.args, pos, *failOn, *v)
		}
	}
}

func TestExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if got := exitCode(run(t.Context(), nil, &out, &errb)); got != exitBadInput {
		t.Errorf("no args: exit %d, want 2", got)
	}
	if got := exitCode(run(t.Context(), []string{"nosuch"}, &out, &errb)); got != exitBadInput {
		t.Errorf("unknown subcommand: exit %d, want 2", got)
	}
	if got := exitCode(run(t.Context(), []string{"version", "--bogus"}, &out, &errb)); got != exitBadInput {
		t.Errorf("unknown flag: exit %d, want 2", got)
	}
	out.Reset()
	if err := run(t.Context(), []string{"version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "vnetbench ") {
		t.Errorf("version: err=%v out=%q", err, out.String())
	}
	if got := exitCode(run(t.Context(), []string{"version", "-h"}, &out, &errb)); got != exitOK {
		t.Errorf("-h: exit %d, want 0", got)
	}
}

// A command that a signal interrupted and that failed exits 128+signal;
// one that finished anyway keeps its own code.
func TestExitCodeAfterSignal(t *testing.T) {
	intr := &signalError{syscall.SIGINT}
	failed := fmt.Errorf("interrupted: %w", context.Canceled)
	for _, tc := range []struct {
		err, cause error
		want       int
	}{
		{failed, intr, 130},
		{failed, &signalError{syscall.SIGTERM}, 143},
		{nil, intr, exitOK},
		{failed, nil, exitFailure},
		{usageErrorf("bad"), context.Canceled, exitBadInput},
	} {
		if got := exitCodeAfter(tc.err, tc.cause); got != tc.want {
			t.Errorf("exitCodeAfter(%v, %v) = %d, want %d", tc.err, tc.cause, got, tc.want)
		}
	}
}
