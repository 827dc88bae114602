package main

import (
	"bytes"
	"strings"
	"testing"
)

// A broken kernel path is one clear line and exit code 2.
func TestImageBuildBadKernel(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"image", "build", "--kernel", "/nonexistent/bzImage", "--cache", t.TempDir()}, &out, &errb)
	if got := exitCode(err); got != exitBadInput {
		t.Fatalf("exit %d (%v), want 2", got, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "/nonexistent/bzImage") || !strings.Contains(msg, "--kernel") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line naming the path and the fix", msg)
	}
}

func TestImageUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if got := exitCode(run(t.Context(), []string{"image"}, &out, &errb)); got != exitBadInput {
		t.Errorf("image without subcommand: exit %d, want 2", got)
	}
	if got := exitCode(run(t.Context(), []string{"image", "burn"}, &out, &errb)); got != exitBadInput {
		t.Errorf("image burn: exit %d, want 2", got)
	}
	if got := exitCode(run(t.Context(), []string{"image", "build", "extra"}, &out, &errb)); got != exitBadInput {
		t.Errorf("image build extra: exit %d, want 2", got)
	}
}
