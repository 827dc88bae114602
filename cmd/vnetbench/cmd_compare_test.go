package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A gate fails closed: NEW without the gated cell is MISSING (exit 1)
// unless --allow-missing names it; an input compare cannot read is bad
// input (exit 2), not a regression.
func TestCompareCLIMissing(t *testing.T) {
	dir := t.TempDir()
	only := filepath.Join(dir, "other-cell.bench")
	other, err := os.ReadFile("testdata/compare/six-runs-base.bench")
	if err != nil {
		t.Fatal(err)
	}
	// BASE has cells t1 and t4, NEW t4 alone, 20% faster (DIFFERENT, the
	// good way): only t1 is MISSING. (Sides without a cell in common are
	// bad input: TestCompareNoCommonCell.)
	t4 := bytes.ReplaceAll(other, []byte("pktgen-t1"), []byte("pktgen-t4"))
	base := filepath.Join(dir, "two-cells.bench")
	if err := os.WriteFile(base, append(slices.Clip(other), t4...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(only, bytes.ReplaceAll(t4, []byte(" 1 45"), []byte(" 1 54")), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "run")
	if err := os.MkdirAll(filepath.Join(unreadable, "results.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A NEW kernel that never booted: every run of its one cell failed.
	noBoot := filepath.Join(dir, "no-boot")
	var lines strings.Builder
	for rep := range 3 {
		fmt.Fprintf(&lines, `{"schema":1,"run":"no-boot","cell":"tap/pktgen-t1","rep":%d,"kernel":"new","axes":{"backend":"tap","generator":"pktgen-t1"},"start":"2026-12-03T00:00:00Z","window_s":0,"metrics":{},"error":"boot vm0: wait for agent: timeout after 60s"}`+"\n", rep)
	}
	if err := os.MkdirAll(noBoot, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noBoot, "results.jsonl"), []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		exit int
		want string
	}{
		{[]string{"compare", base, only, "--fail-on", "tx_pps<-3%"}, exitFailure,
			"tx_pps<-3%: tap/pktgen-t1: MISSING: NEW has no such cell: FAIL"},
		{[]string{"compare", base, only, "--fail-on", "tx_pps<-3%", "--allow-missing", "tx_pps"}, exitOK,
			"MISSING: NEW has no such cell: ok (--allow-missing)"},
		{[]string{"compare", unreadable, "testdata/compare/six-runs-new.bench", "--fail-on", "tx_pps<-3%"}, exitBadInput, ""},
		{[]string{"compare", "testdata/compare/six-runs-base.bench", noBoot, "--fail-on", "tx_pps<-3%"}, exitFailure,
			"tx_pps<-3%: tap/pktgen-t1: MISSING: all 3 runs failed on NEW (boot vm0: wait for agent: timeout after 60s): FAIL"},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), tc.args, &out, &errb)
		if got := exitCode(err); got != tc.exit {
			t.Errorf("%v: exit %d (%v), want %d", tc.args[1:], got, err, tc.exit)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: output lacks %q:\n%s", tc.args[1:], tc.want, out.String())
		}
	}
}

// Issue 33's example: 6 runs per side, -10.00% with disjoint ranges, is a
// regression the gate catches (exit 1, a JUnit failure), not UNKNOWN.
func TestCompareCLISixRuns(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "gates.xml")
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"compare", "testdata/compare/six-runs-base.bench", "testdata/compare/six-runs-new.bench",
		"--fail-on", "tx_pps<-3%", "--junit", junit}, &out, &errb)
	if got := exitCode(err); got != exitFailure {
		t.Errorf("exit %d (%v), want 1:\n%s", got, err, out.String())
	}
	if !strings.Contains(out.String(), "tx_pps<-3%: tap/pktgen-t1 -10.00% [") || !strings.Contains(out.String(), "n=6: DIFFERENT: FAIL") {
		t.Errorf("output lacks the DIFFERENT FAIL line:\n%s", out.String())
	}
	x, rerr := os.ReadFile(junit)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !strings.Contains(string(x), `failures="1"`) || !strings.Contains(string(x), `type="regression"`) ||
		regexp.MustCompile(`p &lt;= 0[^.]`).Match(x) || !strings.Contains(string(x), "DIFFERENT at p &lt;= 0.0008, the level of the look at 6 runs") {
		t.Errorf("JUnit is not one regression failure with the look's level:\n%s", x)
	}
	// The table's legend and JUnit name the 6 runs' median interval
	// [min, max] by its one level, 1 - 2/2^6 = 96.9%: the legend once
	// said 95%, the level asked for, where JUnit said 97%.
	if !strings.Contains(out.String(), "+- = 97% confidence interval of the median") || strings.Count(string(x), ", 97% CI ") != 4 {
		t.Errorf("the legend and JUnit do not both name the 97%% interval:\n%s\n%s", out.String(), x)
	}
	checkCLIGolden(t, filepath.Join("testdata", "compare", "six-runs.txt"), out.Bytes())
}

// benchFile writes a benchfmt file of tx_pps runs of tap/pktgen-t1.
func benchFile(t *testing.T, path string, values ...float64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("Unit tx_pps better=higher assume=nothing\n\nkernel: base\n")
	for _, v := range values {
		fmt.Fprintf(&b, "BenchmarkVnetbench/backend=tap/generator=pktgen-t1 1 %.0f tx_pps\n", v)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// With a history of the cell's past runs (12 runs of 3 repetitions,
// 0.4% noise) compare's early look at 3 runs per side calls a -1.5%
// change that the runs alone leave UNKNOWN, keeps an A/A comparison
// UNKNOWN, and says which noise it used; the 6-run -10% example still
// fails.
func TestCompareCLINoiseFrom(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	add := []string{"history", "add", "--db", db}
	for i := range 12 {
		level := 440000 + 1000*float64(i) // commits move the level; logs keep the scale
		d := [][3]float64{{-0.004, 0, 0.004}, {0.003, -0.005, 0.002}, {0.005, -0.002, -0.003}}[i%3]
		add = append(add, benchFile(t, filepath.Join(dir, fmt.Sprintf("past-%02d.bench", i)), level*(1+d[0]), level*(1+d[1]), level*(1+d[2])))
	}
	var out, errb bytes.Buffer
	if err := run(t.Context(), add, &out, &errb); err != nil {
		t.Fatalf("history add: %v\n%s", err, errb.String())
	}
	base := benchFile(t, filepath.Join(dir, "base.bench"), 450000, 452500, 448200)
	drop := benchFile(t, filepath.Join(dir, "drop.bench"), 443500, 444800, 441400)
	same := benchFile(t, filepath.Join(dir, "same.bench"), 450900, 449100, 451800)
	scale := "early looks with the noise of 12 past runs (24 degrees of freedom) in " + db
	for _, tc := range []struct {
		args     []string
		exit     int
		want     []string
		junitBad bool
	}{
		{[]string{base, drop}, exitUndecided, []string{"n=3: UNKNOWN", "early looks without a history scale: --noise-from HISTORY_DB"}, false},
		{[]string{base, drop, "--noise-from", db}, exitFailure, []string{"tx_pps<-1%: tap/pktgen-t1 -1.44% [", "n=3: DIFFERENT: FAIL", scale}, true},
		{[]string{base, same, "--noise-from", db}, exitUndecided, []string{"n=3: UNKNOWN", scale}, false},
		{[]string{"testdata/compare/six-runs-base.bench", "testdata/compare/six-runs-new.bench", "--noise-from", db}, exitFailure,
			[]string{"n=6: DIFFERENT: FAIL", scale}, true},
	} {
		junit := filepath.Join(dir, "gates.xml")
		args := append([]string{"compare", "--fail-on", "tx_pps<-1%", "--junit", junit}, tc.args...)
		out.Reset()
		err := run(t.Context(), args, &out, &errb)
		if got := exitCode(err); got != tc.exit {
			t.Errorf("%v: exit %d (%v), want %d:\n%s", tc.args, got, err, tc.exit, out.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		x, rerr := os.ReadFile(junit)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if bad := strings.Contains(string(x), `failures="1"`); bad != tc.junitBad {
			t.Errorf("%v: JUnit failure %v, want %v:\n%s", tc.args, bad, tc.junitBad, x)
		}
	}
	if err := run(t.Context(), []string{"compare", base, drop, "--noise-from", filepath.Join(dir, "none.db")}, &out, &errb); exitCode(err) != exitBadInput {
		t.Errorf("--noise-from a missing index: %v, want bad input", err)
	}
}

// One run of two kernels, README's lab run, is compared kernel against
// kernel: the real 3-run lab-pktgen capture's Lost, 0 in every patched
// run, is DIFFERENT at the first look in three cells and UNKNOWN in TAP's
// 4-thread cell, whose stock runs spread from 318 to 769 Kpps (exit 3). A
// patched kernel whose every run failed is MISSING (exit 1); a run of one
// kernel or of five is bad input (exit 2).
func TestCompareCLIOneRun(t *testing.T) {
	lab := real + "lab-pktgen-3run-tcg"
	noBoot := filepath.Join(t.TempDir(), "no-boot")
	failKernel(t, lab, noBoot, "patched", "boot vm0: wait for agent: timeout after 60s")
	for _, tc := range []struct {
		args []string
		exit int
		want []string
	}{
		{[]string{lab, "--fail-on", "lost_pps>+0%"}, exitUndecided, []string{
			"base: " + lab + " (kernel stock)\nnew:  " + lab + " (kernel patched)\n",
			"lost_pps>+0%: tap/pktgen-t4/fq_codel -100.00% [", "n=3: UNKNOWN: undecided: run at least 6 per side",
			"lost_pps>+0%: tap+vhost/pktgen-t1/fq_codel/vhost-pin0 -100.00% [", "n=3: DIFFERENT: ok"}},
		{[]string{noBoot, "--fail-on", "lost_pps>+0%"}, exitFailure, []string{
			"lost_pps>+0%: tap/pktgen-t1/fq_codel: MISSING: all 3 runs failed on NEW (boot vm0: wait for agent: timeout after 60s): FAIL"}},
		{[]string{real + "quickstart-tcg"}, exitBadInput, nil},
		{[]string{real + "lab-perpatch-tcg"}, exitBadInput, nil},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), append([]string{"compare"}, tc.args...), &out, &errb)
		if got := exitCode(err); got != tc.exit {
			t.Errorf("%v: exit %d (%v), want %d", tc.args, got, err, tc.exit)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		if tc.exit == exitBadInput && !strings.Contains(err.Error(), "not two (the base, then the new); give BASE and NEW") {
			t.Errorf("%v: error %q does not say what to give", tc.args, err)
		}
	}
}

// failKernel copies run directory src to dst with every sample of kernel
// k failed with error why.
func failKernel(t *testing.T, src, dst, k, why string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(filepath.Join(src, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var s map[string]any
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatal(err)
		}
		if s["kernel"] == k {
			delete(s, "threads")
			s["metrics"], s["error"] = map[string]any{}, why
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dst, "env.json"), env, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "results.jsonl"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A run compared with itself, or with a copy of itself (or a benchfmt
// file with its copy), decides nothing: it warned and exited 3, whose
// remedy (more runs) is none, where report of one path twice exits 2.
// It is bad input, one line saying both sides are the same run, nothing
// printed; two runs and the two kernels of one run compare.
func TestCompareCLISameRun(t *testing.T) {
	dir := t.TempDir()
	run1 := filepath.Join(dir, "copy")
	copyDir(t, real+"quickstart-tcg", run1)
	b, err := os.ReadFile("testdata/compare/six-runs-base.bench")
	if err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "copy.bench")
	if err := os.WriteFile(bench, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const refusal = "compare: BASE and NEW are the same run ("
	for _, tc := range []struct {
		args []string
		same string
	}{
		{[]string{real + "quickstart-tcg", run1}, "run ID 20261130-000003-c121d55b"},
		{[]string{real + "quickstart-tcg", real + "quickstart-tcg"}, "run ID 20261130-000003-c121d55b"},
		{[]string{"testdata/compare/six-runs-base.bench", bench}, "the same samples"},
		{[]string{"testdata/compare/six-runs-base.bench", "testdata/compare/six-runs-new.bench"}, ""},
		{[]string{real + "lab-pktgen-3run-tcg"}, ""},
	} {
		var out, errb bytes.Buffer
		err := run(t.Context(), append([]string{"compare"}, tc.args...), &out, &errb)
		switch {
		case tc.same == "" && exitCode(err) == exitBadInput:
			t.Errorf("%v: %v", tc.args, err)
		case tc.same != "" && (exitCode(err) != exitBadInput || !strings.HasPrefix(err.Error(), refusal+tc.same+"): a run compared with itself decides nothing") || out.Len() > 0):
			t.Errorf("%v: exit %d (%v), printed %d bytes; want 2 and one line %q...", tc.args, exitCode(err), err, out.Len(), refusal+tc.same+"): ")
		}
	}
}

// rerun is a second run of dir's with the same numbers: a copy under a
// new temporary directory (of dir's base name) whose samples carry
// another run ID. compare refuses a run against itself (or its copy);
// the tests of an unchanged pair compare dir with its rerun.
func rerun(t *testing.T, dir string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), filepath.Base(dir))
	copyDir(t, dir, to)
	data, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var s map[string]any
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatal(err)
		}
		s["run"] = fmt.Sprint("rerun-", s["run"])
		b, _ := json.Marshal(s)
		out.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(to, "results.jsonl"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// Two sides without a cell in common (runs of different scenarios, a
// wrong directory in a CI job) compared nothing: every gate was MISSING,
// exit 1 as for a regression, and --allow-missing passed them (exit 0).
// It is bad input, one line naming each side's scenario and cells.
func TestCompareNoCommonCell(t *testing.T) {
	for _, tc := range []struct {
		base, nw string
		extra    []string
		want     string
	}{
		{real + "quickstart-tcg", runs + "stock", nil, "BASE has scenario quickstart, cells tap/iperf3-p1/pfifo_fast, tap/trafgen/pfifo_fast; NEW has scenario thread-pktgen-vhost-pinned, cells tap/pktgen-t1, tap+vhost/pktgen-t1, tap/pktgen-t4, ... (4)"},
		{real + "quickstart-tcg", runs + "stock", []string{"--allow-missing", "tx_pps,lost_pps"}, "have no cell in common"},
	} {
		args := append([]string{"compare", tc.base, tc.nw}, tc.extra...)
		var out, errb bytes.Buffer
		err := run(t.Context(), args, &out, &errb)
		if code := exitCode(err); code != exitBadInput {
			t.Errorf("%v: exit %d (%v), want 2", tc.extra, code, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "give two runs of one scenario") {
			t.Errorf("%v: %q, want one line with %q", tc.extra, msg, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("%v: compared anyway:\n%s", tc.extra, out.String())
		}
	}
}

// A side whose results.jsonl holds only a torn line (a run killed
// mid-write of its first sample) is bad input that says so: the warning
// that the line was skipped was lost with the exit, and "NEW has no
// samples" alone left the user guessing.
func TestCompareTornOnlySide(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(`{"schema":1,"cell":"tap/pk`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"compare", "testdata/compare/six-runs-base.bench", dir}, &out, &errb)
	if code := exitCode(err); code != exitBadInput {
		t.Fatalf("exit %d (%v), want 2", code, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "NEW has no samples (") || !strings.Contains(msg, "torn last line") {
		t.Errorf("%q, want one line that names the torn line", msg)
	}
}

// An unknown --format names the formats compare writes: the list was
// report's, whose benchfmt, kcidb and lava compare refuses. Each format
// named is one compare writes.
func TestCompareUnknownFormat(t *testing.T) {
	pair := []string{"testdata/compare/six-runs-base.bench", "testdata/compare/six-runs-new.bench"}
	var out, errb bytes.Buffer
	err := run(t.Context(), append([]string{"compare", "--format", "yaml"}, pair...), &out, &errb)
	if exitCode(err) != exitBadInput || err == nil {
		t.Fatalf("compare --format yaml: %v, want exit 2", err)
	}
	_, list, ok := strings.Cut(err.Error(), "use one of ")
	if !ok {
		t.Fatalf("compare --format yaml: %q names no formats", err)
	}
	for _, f := range strings.Split(list, ", ") {
		out.Reset()
		errb.Reset()
		if err := run(t.Context(), append([]string{"compare", "--format", f, "--fail-on", "tx_pps<-50%"}, pair...), &out, &errb); exitCode(err) == exitBadInput {
			t.Errorf("the error names --format %s, which compare refuses: %v", f, err)
		}
	}
}

// Default gates that take none of the metrics compared say so: a
// --metric both sides have but without a direction (tx_run_s) printed
// "no gated metric is present on both sides", which is false, and
// nothing on how to gate it.
func TestCompareNothingGatedSaysWhy(t *testing.T) {
	g := "../../report/testdata/generated/"
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"compare", g + "patched", g + "stock", "--metric", "tx_run_s"}, &out, &errb)
	if exitCode(err) != exitOK {
		t.Fatalf("compare --metric tx_run_s: %v, want exit 0 (nothing gated)", err)
	}
	if !strings.Contains(out.String(), "tx_run_s") || strings.Contains(out.String(), "is present on both sides") || !strings.Contains(out.String(), "nothing gated") || !strings.Contains(out.String(), "--fail-on") {
		t.Errorf("compare --metric tx_run_s: the verdict line does not say why nothing was gated:\n%s", out.String())
	}
}
