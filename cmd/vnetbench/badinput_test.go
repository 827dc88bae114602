package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A count of symbols below 1 fell back to the default in silence
// (`report --top -1` showed 10 symbols): it is bad input, one line that
// names the flag, the value and what is allowed.
func TestCountFlagBelowOneIsBadInput(t *testing.T) {
	lab := real + "lab-pktgen-tcg"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--top", "-1", lab}, "--top -1: want a number of symbols, 1 or more"},
		{[]string{"report", "--profile-top", "-3", lab}, "--profile-top -3: want a number of symbols, 1 or more"},
		{[]string{"report", "--top", "0", lab}, "--top 0: want"},
		{[]string{"compare", "--profile-top", "-1", runs + "few-a", runs + "few-b"}, "--profile-top -1: want"},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), tc.args, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("%v: exit %d (%v), want 2", tc.args, code, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %q, want one line with %q", tc.args, msg, tc.want)
		}
	}
}

// An empty --fail-on (a CI job's gate variable left unset: --fail-on
// "$FAIL_ON") gated as if the flag were left out, on the default gates:
// not what the job wrote. An empty or blank value is bad input that says
// to name a gate or leave the flag out.
func TestEmptyFailOnIsBadInput(t *testing.T) {
	for _, v := range []string{"", "  ", " , "} {
		args := []string{"compare", runs + "few-a", runs + "few-b", "--fail-on", v}
		var out, errb bytes.Buffer
		err := run(t.Context(), args, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("--fail-on %q: exit %d (%v), want 2", v, code, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "name a gate such as 'tx_pps<-3%'") || !strings.Contains(msg, "leave --fail-on out for the default gates") {
			t.Errorf("--fail-on %q: %q, want one line saying to name a gate or leave the flag out", v, msg)
		}
		if out.Len() > 0 {
			t.Errorf("--fail-on %q: compared anyway:\n%s", v, out.String())
		}
	}
}

// run --until-decided takes compare's --fail-on, and an empty one too is
// bad input, not the default gates.
func TestRunEmptyFailOnIsBadInput(t *testing.T) {
	fs := newFlagSet("run", "", io.Discard)
	f := addUntilFlags(fs)
	if _, err := parseFlags(fs, []string{"--until-decided", "--fail-on", ""}); err != nil {
		t.Fatal(err)
	}
	u, err := f.value(t.Context(), io.Discard)
	if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), "leave --fail-on out") {
		t.Errorf("run --until-decided --fail-on '': gates %v, err %v; want bad input", u.Gates, err)
	}
}

// A gate in its metric's better direction (tx_pps>-3% on a higher-is-
// better tx_pps) fails on a gain and calls it a regression. It still
// does (the user asked for it), with one warning line that names the
// gate, the better direction and the gate probably meant. A neutral
// metric, or one whose direction is unknown, gets none.
func TestBackwardsGateWarns(t *testing.T) {
	dir := t.TempDir()
	widgets := func(name string, v float64) string {
		path := filepath.Join(dir, name)
		var b strings.Builder
		for i := range 3 {
			fmt.Fprintf(&b, "BenchmarkVnetbench/backend=tap 1 %.0f widgets\n", v+float64(i))
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	q, q2 := real+"quickstart-tcg", rerun(t, real+"quickstart-tcg")
	for _, tc := range []struct {
		args []string
		exit int
		warn string // "" = none
	}{
		{[]string{"compare", runs + "few-b", runs + "few-a", "--fail-on", "tx_pps>-3%"}, 1,
			"vnetbench: warning: --fail-on tx_pps>-3% fails when tx_pps rises, but higher tx_pps is better: an improvement is called a regression; for a drop write tx_pps<-3%\n"},
		{[]string{"compare", runs + "few-a", runs + "few-b", "--fail-on", "lost_pps<+0%,tx_pps>+5%"}, 3,
			"vnetbench: warning: --fail-on lost_pps<+0% fails when lost_pps falls, but lower lost_pps is better: an improvement is called a regression; for a rise write lost_pps>+0%\n" +
				"vnetbench: warning: --fail-on tx_pps>+5% fails when tx_pps rises, but higher tx_pps is better: an improvement is called a regression; for a drop write tx_pps<-5%\n"},
		{[]string{"compare", runs + "few-a", runs + "few-b", "--fail-on", "tx_pps<-3%,lost_pps>+0%"}, 1, ""},
		{[]string{"compare", q, q2, "--fail-on", "perf.page-faults<-1%"}, 3,
			"vnetbench: warning: --fail-on perf.page-faults<-1% fails when perf.page-faults falls, but lower perf.page-faults is better: an improvement is called a regression; for a rise write perf.page-faults>+1%\n"},
		{[]string{"compare", q, q2, "--fail-on", "tx_packets>+0%,tx_packets<-1%"}, 3, ""},                          // neutral
		{[]string{"compare", widgets("a.bench", 100), widgets("b.bench", 200), "--fail-on", "widgets<-1%"}, 0, ""}, // direction unknown
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), tc.args, &out, &errb)
		if code := exitCode(err); code != tc.exit {
			t.Errorf("%v: exit %d (%v), want %d", tc.args, code, err, tc.exit)
		}
		var warns strings.Builder
		for _, l := range strings.SplitAfter(errb.String(), "\n") {
			if strings.Contains(l, "--fail-on") {
				warns.WriteString(l)
			}
		}
		if warns.String() != tc.warn {
			t.Errorf("%v: stderr warns\n%q\nwant\n%q", tc.args, warns.String(), tc.warn)
		}
	}
}

// A flag of --until-decided without it did nothing: run --fail-on
// 'tx_pps<-3%' (a CI job's gate) ran, gated nothing and exited 0. It is
// bad input, one line naming the flag and the two ways out, refused
// before anything is loaded or run.
func TestRunUntilFlagsWithoutUntilDecided(t *testing.T) {
	for _, flags := range [][]string{
		{"--fail-on", "tx_pps<-3%"},
		{"--max-repetitions", "20"},
		{"--time-budget", "10m"},
		{"--min-effect", "2%"},
		{"--noise-from", "h.db"},
	} {
		args := append([]string{"run", "quickstart", "--dry-run", "-o", filepath.Join(t.TempDir(), "run")}, flags...)
		var out, errb bytes.Buffer
		err := run(t.Context(), args, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("%v: exit %d (%v), want 2", flags, code, err)
			continue
		}
		want := flags[0] + " works only with --until-decided"
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
			t.Errorf("%v: %q, want one line with %q", flags, msg, want)
		}
		if out.Len() > 0 {
			t.Errorf("%v: planned anyway:\n%s", flags, out.String())
		}
	}
}

// history --fail-on-new 0 (a CI job's window variable set to 0, or a
// job that thought 0 meant "any") gated nothing and exited 0, where -1
// was refused with "want a number of points, 1 or more": 0 given is bad
// input too; the flag left out is no gate.
func TestHistoryFailOnNewZeroIsBadInput(t *testing.T) {
	csv := filepath.Join("testdata", "history", "bench.csv")
	for _, v := range []string{"0", "-1"} {
		var out, errb bytes.Buffer
		err := run(t.Context(), []string{"history", csv, "--fail-on-new", v}, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("--fail-on-new %s: exit %d (%v), want 2", v, code, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "--fail-on-new "+v+": want a number of points, 1 or more") {
			t.Errorf("--fail-on-new %s: %q", v, msg)
		}
		if out.Len() > 0 {
			t.Errorf("--fail-on-new %s: printed the history anyway", v)
		}
	}
	if err := run(t.Context(), []string{"history", csv}, io.Discard, io.Discard); err != nil {
		t.Errorf("history without --fail-on-new: %v", err)
	}
}

// A value the flag package cannot parse said only "parse error"
// (`plan --max-time 5`: a duration without its unit): the line now says
// what the flag wants, with an example.
func TestFlagValueParseErrorSaysWhatItWants(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "quickstart", "--max-time", "5"}, `invalid value "5" for flag -max-time: want a duration with its unit, e.g. --max-time 30m`},
		{[]string{"run", "quickstart", "--lock-wait", "10"}, "for flag -lock-wait: want a duration with its unit"},
		{[]string{"plan", "quickstart", "--seed", "abc"}, `invalid value "abc" for flag -seed: want a whole number, e.g. --seed 3`},
		{[]string{"history", "x.csv", "--fail-on-new", "1.5"}, "for flag -fail-on-new: want a whole number"},
		{[]string{"run", "quickstart", "--dry-run=maybe"}, `invalid boolean value "maybe" for -dry-run: want true or false, or --dry-run alone for true`},
		// A negative duration passed: --max-time -1s as no limit.
		{[]string{"plan", "quickstart", "--max-time", "-1s"}, "plan: --max-time -1s: want a duration of 0 or more"},
		{[]string{"plan", "quickstart", "--cpus", "-1"}, "plan: --cpus -1: want a CPU count, or 0 to skip the check"},
		{[]string{"run", "quickstart", "--dry-run", "--lock-wait", "-5m"}, "run: --lock-wait -5m0s: want a duration of 0 or more"},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), tc.args, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("%v: exit %d (%v), want 2", tc.args, code, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "parse error") || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %q, want one line with %q", tc.args, msg, tc.want)
		}
	}
}

// A guest.kernel.image or a pktgen script_dir that is not there: run
// --dry-run refuses it (exit 2, one line) as run does, and plan warns
// that run refuses it; both printed the cells as fine, and run made its
// run directory before finding the guest kernel missing.
func TestDryRunRefusesMissingFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"guest: {kernel: {image: /nonexistent/bzImage}}\ngenerator: {iperf3: {duration: 1s}}",
			"guest.kernel.image /nonexistent/bzImage: no such file or directory"},
		{"generator: {pktgen: {mode: script, script_dir: /nonexistent}}",
			"pktgen: script /nonexistent/samples/pktgen/pktgen_sample01_simple.sh not found"},
	} {
		scen := filepath.Join(dir, "s.yaml")
		os.WriteFile(scen, []byte("name: s\nrepetitions: 1\n"+tc.yaml+"\n"), 0o644)
		var out, errb bytes.Buffer
		err := run(t.Context(), []string{"run", scen, "--dry-run", "-o", filepath.Join(dir, "run")}, &out, &errb)
		if exitCode(err) != exitBadInput || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run --dry-run: exit %d (%v), want 2 with %q", exitCode(err), err, tc.want)
		}
		out.Reset()
		errb.Reset()
		if err := run(t.Context(), []string{"plan", scen}, &out, &errb); err != nil {
			t.Errorf("plan: %v", err)
		}
		if !strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), "vnetbench run refuses this on this machine") {
			t.Errorf("plan's warnings lack %q:\n%s", tc.want, errb.String())
		}
	}
}

// An output file in a directory that is not there: compare --junit
// printed the whole comparison and only then failed (exit 2 in place of
// the gates' exit code). It is refused before anything is compared or
// printed, as report -o is.
func TestOutputDirMissingRefusedFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nodir")
	for _, args := range [][]string{
		{"compare", runs + "stock", runs + "patched", "--junit", filepath.Join(missing, "gates.xml")},
		{"report", runs + "stock", "-o", filepath.Join(missing, "r.txt")},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), args, &out, &errb)
		if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), "directory "+missing+" does not exist") {
			t.Errorf("%v: exit %d (%v), want 2 naming the directory", args, exitCode(err), err)
		}
		if out.Len() > 0 {
			t.Errorf("%v: printed %d bytes before refusing", args, out.Len())
		}
	}
}

// report --origin without --format kcidb wrote the text report and
// dropped the origin in silence: a CI job that meant KCIDB output got
// none. It is bad input naming the format.
func TestReportOriginWithoutKCIDB(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"report", runs + "stock", "--origin", "mylab"}, &out, io.Discard)
	if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), "report: --origin names the submitting CI system of --format kcidb, and the format is text") || out.Len() > 0 {
		t.Errorf("exit %d (%v), printed %d bytes; want 2 and nothing printed", exitCode(err), err, out.Len())
	}
	if err := run(t.Context(), []string{"report", runs + "stock", "--origin", "mylab", "--format", "kcidb"}, io.Discard, io.Discard); err != nil {
		t.Errorf("--format kcidb --origin: %v", err)
	}
}

// run --agent-binary with a file that is not there, or not a program:
// its dry run passed, and the run found it when it built the guest's
// image, after its run directory (and a lab's kernels). Both refuse it
// first, one line, exit 2, leaving no run directory. (The run has a
// --max-time no estimate fits: without the check it stops there too.)
func TestRunRefusesBadAgentBinary(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "agent.sh")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	for _, tc := range []struct{ agent, want string }{
		{filepath.Join(dir, "nonexistent"), "run: --agent-binary " + filepath.Join(dir, "nonexistent") + ": no such file or directory; pass the path of a vnetbench binary"},
		{notELF, "run: --agent-binary: " + notELF + " is not an ELF executable this machine can run"},
		{dir, "is not an ELF executable"},
	} {
		for _, mode := range []string{"--dry-run", "--max-time=1ms"} {
			out := filepath.Join(dir, "run")
			args := []string{"run", "quickstart", "--agent-binary", tc.agent, mode, "-o", out}
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), args, &stdout, &stderr)
			if exitCode(err) != exitBadInput || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: exit %d (%v), want 2 with %q", args, exitCode(err), err, tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("%v: printed before refusing:\n%s", args, stdout.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%v: left its run directory", args)
			}
		}
	}
}

// run --boot-guests on a scenario with no lab kernel ran as if the flag
// were not there: like --fail-on without --until-decided, a flag that
// can do nothing is refused, in the dry run too. With a lab kernel it
// is taken.
func TestBootGuestsWithoutLabsIsBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	for _, mode := range []string{"--dry-run", "--max-time=1ms"} {
		args := []string{"run", "quickstart", "--boot-guests", mode, "-o", out}
		var stdout bytes.Buffer
		err := run(t.Context(), args, &stdout, io.Discard)
		if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), "run: --boot-guests boots the nested guests of lab VMs, and scenario quickstart runs every cell on the running kernel") || stdout.Len() > 0 {
			t.Errorf("%v: exit %d (%v), printed %d bytes; want 2 and nothing printed", args, exitCode(err), err, stdout.Len())
		}
	}
	args := []string{"run", "quickstart", "--boot-guests", "--kernel", "stock=debian:6.1", "--dry-run", "-o", out}
	if err := run(t.Context(), args, io.Discard, io.Discard); strings.Contains(fmt.Sprint(err), "--boot-guests") {
		t.Errorf("%v: %v", args, err)
	}
}

// report -o r.yaml and history -o h.csv wrote text in silence: an
// extension that names a format the command does not write is refused,
// nothing written, with the line naming --format; report and history
// take one rule (report.OutputFormat).
func TestOutputExtensionOfAnotherFormat(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", runs + "stock", "-o", filepath.Join(dir, "r.yaml")}, "r.yaml names the YAML format, which report does not write; --format chooses the format"},
		{[]string{"history", runs + "stock", "-o", filepath.Join(dir, "h.csv")}, "h.csv names the csv format, which history does not write; --format chooses the format (text, html, json)"},
		{[]string{"history", runs + "stock", "-o", filepath.Join(dir, "h.yml")}, "h.yml names the YAML format"},
	} {
		var out bytes.Buffer
		err := run(t.Context(), tc.args, &out, io.Discard)
		if exitCode(err) != exitBadInput || strings.Contains(fmt.Sprint(err), "\n") || !strings.Contains(fmt.Sprint(err), tc.want) || out.Len() > 0 {
			t.Errorf("%v: exit %d (%v), printed %d bytes; want 2, one line with %q", tc.args, exitCode(err), err, out.Len(), tc.want)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) > 0 {
		t.Errorf("left %v", es)
	}
}

// --seed 0 ordered the cells by a random seed, as if --seed were left
// out (0 is the scenario's "no seed"): a run asked to repeat an order
// did not. run and plan refuse it, one line.
func TestSeedZeroIsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "quickstart", "--seed", "0", "--dry-run", "-o", filepath.Join(t.TempDir(), "run")},
		{"plan", "quickstart", "--seed", "0"},
	} {
		var out bytes.Buffer
		err := run(t.Context(), args, &out, io.Discard)
		if exitCode(err) != exitBadInput || strings.Contains(fmt.Sprint(err), "\n") || !strings.Contains(fmt.Sprint(err), "0 is no seed") || out.Len() > 0 {
			t.Errorf("%v: exit %d (%v), printed %d bytes; want 2 and nothing printed", args, exitCode(err), err, out.Len())
		}
	}
}

// An output file that is a directory: the write failed at the end with
// exit 1 (renameat: file exists), which from compare --junit reads as a
// regression, after the whole comparison was printed. It is refused
// first, exit 2, nothing printed.
func TestOutputThatIsADirectory(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"report", runs + "stock", "-o", dir},
		{"history", runs + "stock", "-o", dir},
		{"compare", runs + "stock", runs + "patched", "--junit", dir},
	} {
		var out bytes.Buffer
		err := run(t.Context(), args, &out, io.Discard)
		if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), dir+": it is a directory; give the name of a file") || out.Len() > 0 {
			t.Errorf("%v: exit %d (%v), printed %d bytes; want 2 and nothing printed", args, exitCode(err), err, out.Len())
		}
	}
}

// compare -o x.html and plan -o x.json said only that -o is no flag:
// the commands that print say how to get their output into a file.
func TestOutputFlagOfCommandsThatPrint(t *testing.T) {
	for _, args := range [][]string{
		{"compare", runs + "stock", runs + "patched", "-o", "x.html"},
		{"plan", "quickstart", "--output", "x.json"},
	} {
		err := run(t.Context(), args, io.Discard, io.Discard)
		if exitCode(err) != exitBadInput || !strings.Contains(fmt.Sprint(err), args[0]+" writes to stdout: choose the format with --format and redirect it") {
			t.Errorf("%v: exit %d (%v), want 2 saying how to write a file", args, exitCode(err), err)
		}
	}
}
