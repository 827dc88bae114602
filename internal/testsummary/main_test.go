package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// TestMain clears nestedEnv: under make test these tests run inside
// testsummary, whose refusal to nest would stop every run() here.
func TestMain(m *testing.M) {
	os.Unsetenv(nestedEnv)
	os.Exit(m.Run())
}

const samplePkg = "github.com/vnetbench/vnetbench/internal/testsummary/testdata/sample"

// testTimes matches a test's time as go test prints it: "(0.00s)".
var testTimes = regexp.MustCompile(`\([0-9]+\.[0-9]+s\)`)

// A real go test run of testdata/sample (one test of each outcome) prints
// what go test prints without -v, then every skip with its reason, and
// fails; the second command's ok line follows the first's FAIL.
func TestSummaryOfRealRun(t *testing.T) {
	gobin := testenv.NeedCommand(t, "go", "")
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"--", gobin, "test", "-json", "-count=1", "./testdata/sample",
		"--", gobin, "test", "-json", "-count=1", "-run", "TestPass", "./testdata/sample"}, &out, &errb)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	// A test's time is whatever the machine gave it (a loaded CI host
	// turns 0.00s into 0.02s): compare the output with times blanked.
	got := testTimes.ReplaceAllString(out.String(), "(T)")
	want := `--- FAIL: TestFail (T)
    sample_test.go:12: boom
--- FAIL: TestSubFail (T)
    --- FAIL: TestSubFail/fails (T)
        sample_test.go:25: sub boom
FAIL
FAIL	` + samplePkg + `	`
	if !strings.HasPrefix(got, want) {
		t.Errorf("output does not start as go test's would:\n%s\nwant prefix:\n%s", got, want)
	}
	for _, s := range []string{
		"\nok  \t" + samplePkg + "\t",
		"\n2 skipped test(s):\n" +
			"  SKIP " + samplePkg + " TestSkip: sample_test.go:15: looked for a widget / sample_test.go:16: no widget\n" +
			"  SKIP " + samplePkg + " TestSub/skips: sample_test.go:21: needs root\n" +
			"5 failure(s):\n" +
			"  FAIL " + samplePkg + " TestFail\n" +
			"  FAIL " + samplePkg + " TestSubFail/fails\n" +
			"  FAIL " + samplePkg + " TestSubFail\n" +
			"  FAIL " + samplePkg + "\n" +
			"  FAIL command " + gobin + " test -json -count=1 ./testdata/sample: exit status 1\n",
	} {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
	// The slowest list: TestSlow (1.1 s, more on a loaded host) only, the
	// others take no time.
	if !regexp.MustCompile(`\nslowest tests \(of 7, 1 s or more; from-to: seconds after the start\):\n +[0-9]+\.[0-9]s ` + samplePkg + ` TestSlow \([0-9]+-[0-9]+ s\)\n\n`).MatchString(out.String()) {
		t.Errorf("output lacks the slowest-tests list with TestSlow alone:\n%s", got)
	}
	for _, s := range []string{"=== RUN", "--- PASS", "passing, not shown", "\nPASS\n"} {
		if strings.Contains(got, s) {
			t.Errorf("output has %q, which go test prints only with -v:\n%s", s, got)
		}
	}
	// Each command by its first words and its last (the second's -run
	// pattern elided).
	if !regexp.MustCompile(`\ncommands \(wall time\):\n +[0-9]+s \S+ test -json -count=1 \./testdata/sample \(exit status 1\)\n +[0-9]+s \S+ test -json -count=1 \.\.\. \./testdata/sample \(ok\)\n`).MatchString(got) {
		t.Errorf("output lacks each command's wall time and result:\n%s", got)
	}
}

func TestVerboseAndPassingRun(t *testing.T) {
	gobin := testenv.NeedCommand(t, "go", "")
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"-v", gobin, "test", "-json", "-count=1", "-run", "TestPass|TestSkip", "./testdata/sample"}, &out, &errb)
	if code != 0 {
		t.Errorf("exit %d, want 0; stderr %s", code, errb.String())
	}
	for _, s := range []string{"=== RUN   TestPass\n", "passing, not shown", "--- SKIP: TestSkip", "\nPASS\n", "\n1 skipped test(s):\n  SKIP "} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("-v output lacks %q:\n%s", s, out.String())
		}
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"--"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no command") {
		t.Errorf("no command: exit %d, stderr %q", code, errb.String())
	}
	if code := run(t.Context(), []string{"-nosuchflag"}, &out, &errb); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
}

// Lines that are not go test -json events (a tool's own output) pass
// through unchanged.
func TestNonJSONLines(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out, false)
	s.read(strings.NewReader("hello\n{not json\n"))
	if out.String() != "hello\n{not json\n" {
		t.Errorf("got %q", out.String())
	}
	if s.finish() {
		t.Error("finish reports a failure")
	}
}

// With -j the commands run at once: the first waits for a file only the
// second creates (one after the other, it would give up and fail). A
// command that fails (as make check does on a finding) is named in the
// failure list, and its output passes through.
// The package timeline of a real run: each package over the bound with
// its span in seconds after the start, in the order they ended; the
// span holds the package's own elapsed time.
func TestPackageTimeline(t *testing.T) {
	gobin := testenv.NeedCommand(t, "go", "")
	var out bytes.Buffer
	s := newSummary(&out, false)
	s.pkgMin = 1 // the sample package takes 1.1 s (TestSlow)
	for _, run := range []string{"TestSlow", "TestPass"} {
		cmd := exec.Command(gobin, "test", "-json", "-count=1", "-run", "^"+run+"$", "./testdata/sample")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("go test -run %s: %v", run, err)
		}
		s.read(bytes.NewReader(b))
	}
	s.finish()
	m := regexp.MustCompile(`\npackages by end \(1 s or more; from-to: seconds after the start\):\n +([0-9.]+)s ` + samplePkg + ` \(([0-9]+)-([0-9]+) s\)\n\n`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output lacks the package timeline with the sample package once (TestSlow's run; TestPass's is under 1 s):\n%s", out.String())
	}
	took, _ := strconv.ParseFloat(m[1], 64)
	from, _ := strconv.Atoi(m[2])
	to, _ := strconv.Atoi(m[3])
	if took < 1 || float64(to-from) < took-1 || float64(to-from) > took+1 {
		t.Errorf("package took %.1f s but its span is %d-%d s", took, from, to)
	}
}

func TestParallelCommands(t *testing.T) {
	sh := testenv.NeedCommand(t, "sh", "")
	flag := filepath.Join(t.TempDir(), "flag")
	waiter := `i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.05; done; echo saw the flag`
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"-j", "--", sh, "-c", waiter, "waiter", flag,
		"--", sh, "-c", `touch "$1"`, "toucher", flag,
		"--", sh, "-c", "echo gofmt: x.go; exit 3"}, &out, &errb)
	got := out.String()
	if code != 1 {
		t.Errorf("exit %d, want 1 (the third command fails)", code)
	}
	for _, s := range []string{"saw the flag\n", "gofmt: x.go\n", "1 failure(s):\n  FAIL command " + sh + " -c echo gofmt: x.go; exit 3: exit status 3\n"} {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
	if strings.Count(got, "(ok)") != 2 {
		t.Errorf("want two commands ended ok:\n%s", got)
	}
}

// A testsummary started by one of testsummary's commands refuses to run
// (exit 2, the reason on stderr): a Makefile recipe run by make -n ran
// the whole suite inside its own README test, again and again.
func TestRefusesToNest(t *testing.T) {
	sh := testenv.NeedCommand(t, "sh", "")
	var out, errb bytes.Buffer
	// The inner command reports the variable the outer sets.
	code := run(t.Context(), []string{"--", sh, "-c", `echo "nested=$` + nestedEnv + `"`}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "nested=1\n") {
		t.Fatalf("exit %d, output %q: the command's environment lacks %s=1", code, out.String(), nestedEnv)
	}
	t.Setenv(nestedEnv, "1")
	out.Reset()
	errb.Reset()
	code = run(t.Context(), []string{"--", sh, "-c", "echo ran"}, &out, &errb)
	if code != 2 || strings.Contains(out.String(), "ran") || !strings.Contains(errb.String(), "refusing to run the tests inside the tests") {
		t.Errorf("nested: exit %d, stdout %q, stderr %q; want exit 2, nothing run, the reason", code, out.String(), errb.String())
	}
}
