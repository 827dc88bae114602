package main

import (
	"fmt"
	"io"
	"os"
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

// A scenario of one kernel was refused only after its first round had
// measured (quickstart's 3 repetitions, a guest booted): it is refused
// before anything runs, the dry run too, and the run directory stays
// empty.
func TestUntilDecidedOneKernelRefusedFirst(t *testing.T) {
	dir := t.TempDir()
	for _, extra := range [][]string{{"--dry-run"}, {"--kernel", "only=debian:6.1", "--dry-run"}} {
		args := append([]string{"run", "quickstart", "-o", dir, "--until-decided"}, extra...)
		err := run(t.Context(), args, io.Discard, io.Discard)
		if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), "--until-decided compares the kernels of one run, and quickstart has 1 (") {
			t.Errorf("%v: %v (exit %d), want bad input naming the one kernel", args, err, exitCode(err))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("refused runs left %d entries in %s", len(ents), dir)
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

// A gate of a metric vnetbench never measures was refused by compare
// only after the first round (two lab VMs, minutes): it is refused
// first, with the catalogue's nearest name; perf counters, CPU per
// packet and drop reasons, whose names come from the run, pass.
func TestUntilDecidedUnknownGateMetricFirst(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ gate, want string }{
		{"nosuch<-3%", `run: --fail-on nosuch<-3%: vnetbench measures no metric "nosuch"`},
		{"tx_pp<-3%", "did you mean tx_pps?"},
	} {
		args := []string{"run", "lab-pktgen", "-o", dir, "--until-decided", "--fail-on", tc.gate, "--dry-run"}
		err := run(t.Context(), args, io.Discard, io.Discard)
		if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%v: %v (exit %d), want bad input with %q", args, err, exitCode(err), tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("refused runs left %d entries in %s", len(ents), dir)
	}
	_, code := runCLI(t, "run", "lab-pktgen", "--set", "backend=tap", "--set", "generator.pktgen.threads=1", "--set", "perf.stat.targets=[kpktgend]", "-o", t.TempDir(), "--until-decided",
		"--fail-on", "tx_pps<-3%,perf.cycles@kpktgend>+5%,drop_pps.FULL_RING@tun_net_xmit>+0%,cpu_per_pkt.kpktgend>+0%", "--dry-run")
	if code != 0 {
		t.Errorf("gates of perf counters, CPU per packet and drop reasons: exit %d, want 0", code)
	}
}
