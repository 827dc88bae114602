package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// forged is what a hostile name tries: a line of its own ("FORGED ..."),
// a command for LAVA's shell, a benchfmt configuration line that makes a
// kernel "patched", a terminal escape sequence.
const forged = "x\nFORGED line\n\ntouch PWNED\nkernel: patched\nBenchmarkForged 1 5 tx_pps\n\x1b[2J\u2028FORGED sep"

// newlineSet is a run whose kernel labels, cell names, axis keys and
// values, metric key, warning, kernel release and n/a reason all hold
// forged. A marker that follows an escaped line break stays glued to the
// word before it ("x\x0aFORGED"), so only a raw line break (or one turned
// into a space) can start a line with it.
func newlineSet() *results.Set {
	set := &results.Set{Env: map[string]*results.Env{}}
	for _, k := range []string{"stock" + forged, "new"} {
		// Tables shorten the CPU model to its words (shortCPU), so its line
		// breaks become spaces and it carries no marker, only a control.
		set.Env[k] = &results.Env{CPUModel: "cpu\x1b[31m\nred", KernelRelease: "6.1" + forged, Accel: "tcg"}
		for rep := range 3 {
			set.Samples = append(set.Samples, results.Sample{Cell: "tap/" + forged, Kernel: k, Rep: rep, Emulated: true,
				Axes:     map[string]string{"backend": "tap", "axis" + forged: forged},
				Metrics:  map[metric.Key]float64{"tx_pps": 1000 + float64(rep), "m" + forged: 5},
				Warnings: []string{"warn" + forged}})
		}
		set.Samples = append(set.Samples, results.Sample{Cell: "na/" + forged, Kernel: k, Axes: map[string]string{"backend": "na"},
			Unsupported: "reason" + forged})
	}
	set.Failed = []results.Sample{{Cell: "tap/" + forged, Kernel: "new", Rep: 7, Error: "failed" + forged}}
	return set
}

// Every format quotes or refuses the hostile names (issue 34 item 3): no
// output line starts with what a name forged, text tables keep their
// shape, LAVA's shell runs no command of a name, benchfmt read back has no
// forged kernel or result, and the machine formats parse.
func TestHostileNamesEveryFormat(t *testing.T) {
	set := newlineSet()
	r, err := Build(set, Options{Origin: "vnb", Details: true})
	if err != nil {
		t.Fatal(err)
	}
	render := func(format string, style Style) string {
		var b bytes.Buffer
		if err := Render(&b, set, r, format, style); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return b.String()
	}
	forgedLine := regexp.MustCompile(`(?m)^[\s|+│┃>_*#-]*(FORGED|touch PWNED|kernel: patched|BenchmarkForged)`)
	for _, f := range Formats {
		for _, style := range []Style{ASCII, Unicode} {
			out := render(f, style)
			// In JSON, CSV, JUnit and HTML a line break is data (escaped,
			// quoted, or white space to a browser); their parsers are checked
			// below.
			structured := f == "json" || f == "kcidb" || f == "csv" || f == "junit" || f == "html"
			if m := forgedLine.FindString(out); m != "" && !structured {
				t.Errorf("%s: a name forged the line %q:\n%s", f, m, out)
			}
			if f != "json" && f != "kcidb" && f != "csv" && f != "junit" {
				if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f || r == 0x2028 }); i >= 0 {
					t.Errorf("%s: control character %q in the output", f, out[i:min(len(out), i+8)])
				}
			}
		}
	}
	checkTableShapes(t, render("text", Unicode))
	checkTableShapes(t, render("text", ASCII))
	checkLAVAShell(t, render("lava", ASCII))
	checkBenchfmtReadBack(t, render("benchfmt", ASCII))
	if err := json.Unmarshal([]byte(render("json", ASCII)), new(any)); err != nil {
		t.Errorf("json: %v", err)
	}
	if err := json.Unmarshal([]byte(render("kcidb", ASCII)), new(any)); err != nil {
		t.Errorf("kcidb: %v", err)
	}
	if err := xml.Unmarshal([]byte(render("junit", ASCII)), new(junitSuites)); err != nil {
		t.Errorf("junit: %v", err)
	}
	rows, err := csv.NewReader(strings.NewReader(render("csv", ASCII))).ReadAll()
	if err != nil || len(rows) != len(r.Summaries)+1 {
		t.Errorf("csv: %d rows for %d summaries, %v", len(rows), len(r.Summaries), err)
	}
	// The gates' lines, compare's text, say the names on one line too.
	res, err := CompareRuns(only(newlineSet(), "stock"+forged), only(newlineSet(), "new"), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var dec bytes.Buffer
	if err := WriteDecisions(&dec, res); err != nil {
		t.Fatal(err)
	}
	if m := forgedLine.FindString(dec.String()); m != "" || strings.ContainsRune(dec.String(), 0x1b) {
		t.Errorf("gate lines: forged %q:\n%s", m, dec.String())
	}
}

// checkTableShapes checks that each table of text out is a rectangle in
// display cells: every line of a table as wide as its first.
func checkTableShapes(t *testing.T, out string) {
	t.Helper()
	want := -1
	for _, l := range strings.Split(out, "\n") {
		isTable := strings.HasPrefix(l, "+") || strings.HasPrefix(l, "|") || strings.ContainsAny(l[:min(len(l), 3)], "┌├└│")
		switch {
		case !isTable:
			want = -1
		case want < 0:
			want = twwidth.Width(l)
		case twwidth.Width(l) != want:
			t.Errorf("table line %d cells wide, the table's first %d: %q", twwidth.Width(l), want, l)
		}
	}
}

// checkLAVAShell runs the LAVA output as LAVA would, under sh with a
// lava-test-case that only counts, and checks that no name ran a command.
func checkLAVAShell(t *testing.T, out string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh to run the LAVA output: %v", err)
	}
	dir, bin := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "lava-test-case"), []byte("#!/bin/sh\necho case >> cases\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.sh"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "cases.sh")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sh cases.sh: %v: %s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Errorf("the LAVA output ran a command of a name:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "lava-test-case ") && !strings.HasPrefix(l, "# ") {
			t.Errorf("LAVA line %q is neither a test case nor a comment", l)
		}
	}
}

// checkBenchfmtReadBack reads the benchfmt output back: the two kernels
// and the results, nothing forged.
func checkBenchfmtReadBack(t *testing.T, out string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hostile.bench")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := results.Load(path)
	if err != nil {
		t.Fatalf("benchfmt does not read back: %v\n%s", err, out)
	}
	if ks := back.Kernels(); len(ks) != 2 || slices.Contains(ks, "patched") {
		t.Errorf("benchfmt read back kernels %q, want the two of the run:\n%s", ks, out)
	}
	if n := len(back.Samples); n != 6 {
		t.Errorf("benchfmt read back %d results, want the 6 measured:\n%s", n, out)
	}
	for _, s := range back.Samples {
		if s.Metrics["tx_pps"] == 5 {
			t.Errorf("a forged result read back: %+v", s)
		}
	}
}
