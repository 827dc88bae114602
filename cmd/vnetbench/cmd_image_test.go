package main

import (
	"bytes"
	"os"
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
	if got := exitCode(run(t.Context(), []string{"image"}, &out, &errb)); got != exitBadInput || out.Len() > 0 || !strings.Contains(errb.String(), "usage: vnetbench image build") {
		t.Errorf("image without subcommand: exit %d, stdout %q; want 2 and the usage on stderr alone", got, out.String())
	}
	if got := exitCode(run(t.Context(), []string{"image", "burn"}, &out, &errb)); got != exitBadInput {
		t.Errorf("image burn: exit %d, want 2", got)
	}
	if got := exitCode(run(t.Context(), []string{"image", "build", "extra"}, &out, &errb)); got != exitBadInput {
		t.Errorf("image build extra: exit %d, want 2", got)
	}
}

// --modules beside a kernel that brings its own was dropped in silence
// (the image had the host's or Debian's modules), and an -o that is a
// file failed after the build with exit 1: both are bad input, refused
// before anything is fetched or built.
func TestImageBuildFlagsRefusedFirst(t *testing.T) {
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", "host", "--modules", "/nonexistent/modules"}, "--modules /nonexistent/modules goes with --kernel PATH"},
		{[]string{"--kernel", "debian:6.1", "--modules", "/nonexistent/modules"}, "--modules /nonexistent/modules goes with --kernel PATH"},
		{[]string{"--kernel", "/nonexistent/bzImage", "-o", file}, "-o " + file + " is a file"},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), append([]string{"image", "build", "--cache", t.TempDir()}, tc.args...), &out, &errb)
		if exitCode(err) != exitBadInput || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("image build %v: %v, want exit 2 saying %q", tc.args, err, tc.want)
		}
	}
}
