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
// input, in bounded memory (it grew to 21 GB before); report does not
// follow a link at results.jsonl.
func TestInputsBounded(t *testing.T) {
	bin := vnetbenchBin(t)
	cmd := exec.CommandContext(t.Context(), bin, "parse", "iperf3", "/dev/zero")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // MiB
	t.Logf("parse iperf3 /dev/zero: %v, exit %d in %v, max RSS %d MiB: %s", err, cmd.ProcessState.ExitCode(), time.Since(start), rss, out)
	if cmd.ProcessState.ExitCode() != exitBadInput || !strings.Contains(string(out), "longer than") {
		t.Errorf("exit %d, want 2 saying the input is too long: %.300s", cmd.ProcessState.ExitCode(), out)
	}
	if rss > 1024 {
		t.Errorf("max RSS %d MiB, want under 1 GiB", rss)
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
