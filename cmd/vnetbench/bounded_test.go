package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/results"
)

// parse of an endless input (/dev/zero) ends at the input bound with bad
// input, in bounded memory (iperf3 grew to 21 GB before, and perf-report,
// streamed, to 5 GB in a minute: a line without end); report does not
// follow a link at results.jsonl.
func TestInputsBounded(t *testing.T) {
	bin := vnetbenchBin(t)
	for _, kind := range []string{"iperf3", "perf-report"} {
		cmd := exec.CommandContext(t.Context(), bin, "parse", kind, "/dev/zero")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // MiB
		t.Logf("parse %s /dev/zero: %v, exit %d in %v, max RSS %d MiB: %s", kind, err, cmd.ProcessState.ExitCode(), time.Since(start), rss, stderr.String())
		if cmd.ProcessState.ExitCode() != exitBadInput || !strings.Contains(stderr.String(), "longer than") || stdout.Len() > 0 {
			t.Errorf("%s: exit %d, stdout %q, want 2 saying the input is too long and nothing on stdout: %.300s", kind, cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
		}
		if rss > 1024 {
			t.Errorf("%s: max RSS %d MiB, want under 1 GiB", kind, rss)
		}
	}

	// results.jsonl as a link to another run's: refused, not read.
	other := filepath.Join(t.TempDir(), "other")
	w, err := results.Create(other, results.Env{Run: "other"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	os.Symlink(filepath.Join(other, results.ResultsFile), filepath.Join(dir, results.ResultsFile))
	if err := run(t.Context(), []string{"report", dir}, new(strings.Builder), new(strings.Builder)); exitCode(err) != exitBadInput || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("report of a results.jsonl link: %v (exit %d), want bad input naming the link", err, exitCode(err))
	}
}
