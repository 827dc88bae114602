package main

import (
	"io"
	"strings"
	"testing"
)

func TestUntilDecidedBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"run", "quickstart", "--until-decided"},
		{"run", "quickstart", "-o", t.TempDir(), "--until-decided", "--shard", "1/2"},
		{"run", "quickstart", "-o", t.TempDir(), "--until-decided", "--max-repetitions", "2"},
		{"run", "quickstart", "-o", t.TempDir(), "--until-decided", "--max-repetitions", "200"},
		{"run", "quickstart", "-o", t.TempDir(), "--until-decided", "--min-effect", "2"},
	} {
		if err := run(t.Context(), args, io.Discard, io.Discard); exitCode(err) != exitBadInput {
			t.Errorf("%v: %v (exit %d), want bad input", args, err, exitCode(err))
		}
	}
}

// A dry run of --until-decided shows its first round: the scenario's
// cells at the plan's first look (3 repetitions, an early look), and the
// looks after it up to the budget.
func TestUntilDecidedDryRun(t *testing.T) {
	got, code := runCLI(t, "run", "lab-pktgen", "--set", "backend=tap", "--set", "generator.pktgen.threads=1", "--set", "perf.stat.targets=[kpktgend]",
		"-o", t.TempDir(), "--until-decided", "--fail-on", "lost_pps>+0%", "--max-repetitions", "30", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	for _, want := range []string{"until-decided: the first round, 3 repetitions per cell; later rounds go on to the plan's next looks (6, 10, 13, 16, 20, 25, 30)",
		"6 samples in this order", "rep 3 (kernel stock", "rep 3 (kernel patched"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "rep 4 ") {
		t.Errorf("more than 3 repetitions in the first round:\n%s", got)
	}
}
