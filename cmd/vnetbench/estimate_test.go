package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shorterCommand returns the arguments of the shorter form an output
// names ("shorter form (...): vnetbench run ARGS").
func shorterCommand(t *testing.T, out string) []string {
	t.Helper()
	i := strings.Index(out, "shorter form (")
	if i < 0 {
		t.Fatalf("no shorter form in:\n%s", out)
	}
	line := out[i : i+strings.IndexByte(out[i:], '\n')]
	_, cmd, ok := strings.Cut(line, "): vnetbench ")
	if !ok {
		t.Fatalf("shorter form without a command: %q", line)
	}
	return strings.Fields(cmd) // the built-in's arguments need no quoting
}

// The case: thread-pktgen in a lab VM on a host without KVM
// sends 1G packets at about 1 Kpps: plan says hours and names a shorter
// command, which itself fits the limit.
func TestPlanEstimateLabTCG(t *testing.T) {
	cachedLabKernels(t)
	got, code := runCLI(t, "plan", "thread-pktgen", "--kernel", "stock=debian:6.1", "--seed", "1")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	for _, want := range []string{
		"\nestimate: about 278 h in all\n",
		"\n  kernel stock (in a lab VM under tcg): about 278 h\n",
		"count-bound windows (1G packets)     x10      278 h  [pktgen at 1.00 Kpps, tcg-nested: default]",
		"\nlimit: the estimate passes 1 h: vnetbench run refuses it unless --max-time is raised\n",
		"): vnetbench run thread-pktgen --kernel stock=debian:6.1 --set generator.pktgen.duration=10s --set repetitions=3\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q", want)
		}
	}
	scenarioGolden(t, filepath.Join("testdata", "plan", "estimate-lab-tcg.golden"), got)

	short := shorterCommand(t, got)
	if short[0] != "run" {
		t.Fatalf("shorter command %q is not a run", short)
	}
	got2, code := runCLI(t, append(append([]string{"plan"}, short[1:]...), "--seed", "1")...)
	if code != 0 || !strings.Contains(got2, "\nlimit: within 1 h (--max-time)\n") || !strings.Contains(got2, "\noverrides: --set generator.pktgen.duration=10s --set repetitions=3\n") {
		t.Errorf("the shorter form does not fit:\n%s", got2)
	}
	// Its samples are duration-bound windows now: 2 cells x 3.
	if !strings.Contains(got2, "    windows                              x6  ") || strings.Contains(got2, "count-bound") {
		t.Errorf("the shorter form's windows:\n%s", got2)
	}
}

// run refuses a run past --max-time with exit 2 before it creates
// anything, printing the estimate and the shorter form.
func TestRunRefusesPastMaxTime(t *testing.T) {
	cachedLabKernels(t)
	dir := filepath.Join(t.TempDir(), "run")
	got, code := runCLI(t, "run", "thread-pktgen", "--kernel", "stock=debian:6.1", "-o", dir)
	if code != exitBadInput {
		t.Fatalf("exit %d, want 2:\n%s", code, got)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a refused run created %s", dir)
	}
	for _, want := range []string{
		"vnetbench: estimate: about 278 h in all\n",
		"vnetbench: shorter form (about ",
		"--- error\nvnetbench: run: the estimate, about 278 h, passes --max-time 1 h; run the shorter form above, or raise --max-time (e.g. --max-time 278h)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// --max-time is the limit: quickstart's estimate (84 s from the
	// defaults) passes one minute.
	got, code = runCLI(t, "run", "quickstart", "--max-time", "1m", "-o", dir)
	if code != exitBadInput || !strings.Contains(got, "passes --max-time 60 s") {
		t.Errorf("quickstart --max-time 1m: exit %d:\n%s", code, got)
	}
	// When even the shortest form passes the limit, the error does not
	// send the user to run it.
	got, code = runCLI(t, "run", "quickstart", "--max-time", "1s", "-o", dir)
	if code != exitBadInput || !strings.Contains(got, "vnetbench: shortest form (about ") ||
		!strings.Contains(got, "--- error\nvnetbench: run: the estimate, about 84 s, passes --max-time 1 s, and no shorter form fits; raise --max-time (e.g. --max-time 1h), or split the cells over machines with --shard I/N\n") {
		t.Errorf("quickstart --max-time 1s: exit %d:\n%s", code, got)
	}
	// --dry-run prints the estimate and never refuses.
	got, code = runCLI(t, "run", "thread-pktgen", "--kernel", "stock=debian:6.1", "--dry-run", "-o", dir)
	if code != 0 || !strings.Contains(got, "\nestimate: about 278 h in all\n") {
		t.Errorf("dry run: exit %d:\n%s", code, got)
	}
}

// --set takes the YAML's keys and validation; errors name the override
// and exit 2; plan shows the overrides.
func TestSetFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "quickstart", "--set", "generator.iperf3.duration=abc"}, "vnetbench: --set generator.iperf3.duration=abc: "},
		{[]string{"plan", "quickstart", "--set", "generator.iperf3.durration=5s"}, `vnetbench: --set generator.iperf3.durration=5s: unknown key "durration" in generator.iperf3; did you mean duration?`},
		{[]string{"validate", "quickstart", "--set", "repetitions=0"}, "vnetbench: --set repetitions=0: "},
		{[]string{"run", "quickstart", "--dry-run", "--set", "generator.pktgen.count=5"}, "vnetbench: --set generator.pktgen.count=5: generator.pktgen is not in the scenario (it has iperf3, trafgen)"},
		{[]string{"plan", "quickstart", "--set", "repetitions"}, "vnetbench: plan: invalid value \"repetitions\" for flag -set: --set repetitions: want KEY=VALUE"},
	} {
		got, code := runCLI(t, tc.args...)
		if code != exitBadInput {
			t.Errorf("%q: exit %d, want 2:\n%s", tc.args, code, got)
		}
		if _, e, _ := strings.Cut(got, "--- error\n"); !strings.HasPrefix(e, tc.want) || strings.Count(e, "\n") != 1 {
			t.Errorf("%q: error %q, want one line starting %q", tc.args, e, tc.want)
		}
	}
	got, code := runCLI(t, "plan", "quickstart", "--seed", "1", "--set", "repetitions=1", "--set", "generator.trafgen.duration=2s")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	for _, want := range []string{
		"\noverrides: --set repetitions=1 --set generator.trafgen.duration=2s\n",
		"runs: 2\n",
		"generator.trafgen: duration=2s ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	got, code = runCLI(t, "validate", "quickstart", "--set", "repetitions=1")
	if code != 0 || !strings.Contains(got, "ok quickstart: 2 cells, 2 runs") {
		t.Errorf("validate --set: exit %d:\n%s", code, got)
	}
}
