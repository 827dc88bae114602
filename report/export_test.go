package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
)

// kcidbSchema compiles testdata/kcidb/v5.3.schema.json (kcidb-io's own
// schema; see its README), asserting formats (date-time, uri).
func kcidbSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/kcidb/v5.3.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseRegexpEngine(nulRegexp)
	if err := c.AddResource("kcidb-v5.3.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("kcidb-v5.3.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// nulRegexp compiles the schema's ECMA patterns with Go's regexp, which
// has no octal escape: kcidb-io's [^\0] means "not NUL".
func nulRegexp(s string) (jsonschema.Regexp, error) {
	return regexp.Compile(strings.ReplaceAll(s, `\0`, `\x00`))
}

func kcidbOf(t *testing.T, set *results.Set, origin string) ([]byte, *Report) {
	t.Helper()
	r, err := Build(set, Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, set, r, "kcidb", ASCII); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), r
}

func validate(t *testing.T, sch *jsonschema.Schema, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(v)
}

// The KCIDB output of a host run and of a lab run of two source builds
// validates against kcidb-io's v5.3 schema, and says what it should: a
// checkout and build per kernel identity, one DONE test per summary with
// the median as number and the samples in misc, ids prefixed by origin.
func TestKCIDBValidates(t *testing.T) {
	sch := kcidbSchema(t)
	for _, dir := range []string{"quickstart-tcg", "lab-pktgen-tcg", "stock"} {
		set := loadSet(t, dir)
		b, r := kcidbOf(t, set, "vnb_ci")
		if err := validate(t, sch, b); err != nil {
			t.Fatalf("%s: kcidb output does not validate: %v", dir, err)
		}
		var d kcidbData
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		if d.Version != (kcidbVersion{5, 3}) || len(d.Tests) != len(r.Summaries) || len(d.Builds) != len(r.Columns) {
			t.Errorf("%s: version %v, %d tests for %d summaries, %d builds for %d kernels", dir, d.Version, len(d.Tests), len(r.Summaries), len(d.Builds), len(r.Columns))
		}
		ids := map[string]bool{}
		for i, tc := range d.Tests {
			s := r.Summaries[i]
			if tc.Status != "DONE" || tc.Number == nil || tc.Number.Value != s.Stats.Median || tc.Number.Unit != s.Unit || ids[tc.ID] ||
				!strings.HasPrefix(tc.ID, "vnb_ci:") || len(tc.Misc["samples"].([]any)) != s.Stats.N {
				t.Fatalf("%s: test %d %+v for summary %+v", dir, i, tc, s)
			}
			ids[tc.ID] = true
		}
	}
	// Two builds of one tree: the patched one has its own checkout, with
	// KCIDB's patchset hash (sha256 over newline-terminated patch hashes).
	b, _ := kcidbOf(t, loadSet(t, "lab-pktgen-tcg"), "vnb_ci")
	var d kcidbData
	json.Unmarshal(b, &d)
	if len(d.Checkouts) != 2 || d.Checkouts[0].ID == d.Checkouts[1].ID {
		t.Fatalf("checkouts %+v", d.Checkouts)
	}
	sum := sha256.Sum256([]byte("14b0caa1e364d433d4e4780974925c4c518449bb03af8e66e6d41d8e818e31cd\n"))
	if co := d.Checkouts[1]; co.Misc["label"] != "patched" || *co.PatchsetHash != hex.EncodeToString(sum[:]) || co.TreeName != "linux-source-6.1" {
		t.Errorf("patched checkout %+v", co)
	}
}

// The schema does catch what KCIDB refuses (so the validation above is
// a real check): an id without the origin prefix, a status it does not
// know, a test without a build.
func TestKCIDBSchemaRejects(t *testing.T) {
	sch := kcidbSchema(t)
	b, _ := kcidbOf(t, loadSet(t, "stock"), "vnb")
	for _, bad := range []func(m map[string]any){
		func(m map[string]any) { test0(m)["id"] = "no-origin-prefix" },
		func(m map[string]any) { test0(m)["status"] = "OK" },
		func(m map[string]any) { delete(test0(m), "build_id") },
		func(m map[string]any) { test0(m)["number"] = map[string]any{"value": "12"} },
		func(m map[string]any) { m["version"] = map[string]any{"major": 4, "minor": 3} },
	} {
		var m map[string]any
		json.Unmarshal(b, &m)
		bad(m)
		nb, _ := json.Marshal(m)
		if validate(t, sch, nb) == nil {
			t.Errorf("schema accepted %s", firstTest(nb))
		}
	}
}

func test0(m map[string]any) map[string]any { return m["tests"].([]any)[0].(map[string]any) }

func firstTest(b []byte) string {
	var m map[string]any
	json.Unmarshal(b, &m)
	t, _ := json.Marshal(test0(m))
	return string(t)
}

// A sample that failed to measure is an ERROR test with the failure as
// its log excerpt.
func TestKCIDBFailed(t *testing.T) {
	set := loadSet(t, "stock")
	set.Failed = append(set.Failed, results.Sample{Run: "r1", Cell: "tap/trafgen", Kernel: set.Kernels()[0], Rep: 2,
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Error: "guest kernel: soft lockup\nCPU#0 stuck for 22s"})
	b, _ := kcidbOf(t, set, "vnb")
	if err := validate(t, kcidbSchema(t), b); err != nil {
		t.Fatal(err)
	}
	var d kcidbData
	json.Unmarshal(b, &d)
	last := d.Tests[len(d.Tests)-1]
	if last.Status != "ERROR" || last.Path != "vnetbench.tap.trafgen" || !strings.Contains(last.LogExcerpt, "soft lockup") || last.StartTime != "2026-01-02T03:04:05Z" {
		t.Errorf("failed sample as %+v", last)
	}
}

func TestKCIDBBadInput(t *testing.T) {
	set := loadSet(t, "stock")
	for _, origin := range []string{"", "My-Lab", "a:b"} {
		r, _ := Build(set, Options{Origin: origin})
		if err := Render(&bytes.Buffer{}, set, r, "kcidb", ASCII); !errors.Is(err, fault.ErrInput) {
			t.Errorf("origin %q: %v, want bad input", origin, err)
		}
	}
	r, _ := Build(set, Options{By: "backend", Origin: "x"})
	if err := Render(&bytes.Buffer{}, set, r, "kcidb", ASCII); !errors.Is(err, fault.ErrInput) {
		t.Errorf("--by backend: %v, want bad input", err)
	}
}

var lavaLine = regexp.MustCompile(`^lava-test-case ([A-Za-z0-9._-]+) --result pass --measurement (\S+) --units ([A-Za-z0-9._-]+)$`)

// One lava-test-case line per cell, metric (and kernel when there are
// several), with a LAVA-safe name, the median and the unit.
func TestLAVA(t *testing.T) {
	set := loadSet(t, "lab-pktgen-tcg")
	r, err := Build(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, set, r, "lava", ASCII); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	// A lab run under TCG: the comment names the columns as the case
	// names do (once "stock_patched", the list itself sanitized).
	if want := "# EMULATED (QEMU TCG, no KVM): stock, patched; "; !strings.HasPrefix(lines[0], want) {
		t.Errorf("first line %q, want the emulation comment %q...", lines[0], want)
	}
	lines = lines[1:]
	if len(lines) != len(r.Summaries) {
		t.Fatalf("%d lines for %d summaries", len(lines), len(r.Summaries))
	}
	names := map[string]bool{}
	for i, l := range lines {
		m := lavaLine.FindStringSubmatch(l)
		s := r.Summaries[i]
		if m == nil || names[m[1]] {
			t.Fatalf("line %q (duplicate or malformed)", l)
		}
		names[m[1]] = true
		if v, err := strconv.ParseFloat(m[2], 64); err != nil || v != s.Stats.Median || m[3] != LAVAName(s.Unit) ||
			!strings.HasPrefix(m[1], s.Column+".") {
			t.Errorf("line %q for %s %s %s median %v", l, s.Column, s.Cell, s.Metric, s.Stats.Median)
		}
	}
	if got := LAVAName("tap+vhost/pktgen-t1/fq_codel.tx_pps"); got != "tap_vhost_pktgen-t1_fq_codel.tx_pps" {
		t.Errorf("LAVAName: %q", got)
	}
}

// The JUnit of compare's gates: one test case per gated metric and cell,
// a tripped gate a failure carrying the change and the verdict, an
// UNKNOWN one skipped with the reason (never a pass).
func TestJUnitDecisions(t *testing.T) {
	gates, _ := ParseGates("tx_pps<-3%,lost_pps>+0%")
	// 5 runs per side cannot decide: every run counted twice can.
	res, err := CompareRuns(repeated(loadSet(t, "patched"), 2), repeated(loadSet(t, "stock"), 2), CompareOptions{Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	top, _ := junitOfDecisions(t, res.Decisions)
	if len(top.Suites) != 1 || top.Tests != len(res.Decisions) || top.Failures != 8 || top.Suites[0].Failures != 8 {
		t.Fatalf("junit counts: %d tests, %d failures; %d decisions", top.Tests, top.Failures, len(res.Decisions))
	}
	for i, c := range top.Suites[0].Cases {
		d := res.Decisions[i]
		if c.Name != d.Cell || c.Classname != "vnetbench.compare."+d.Gate.Metric || (c.Failure != nil) != d.Tripped {
			t.Errorf("case %+v for decision %s", c, d.String())
		}
		if c.Failure != nil && (!strings.Contains(c.Failure.Message, "FAIL") || !strings.Contains(c.Failure.Message, d.Gate.String()) ||
			!strings.Contains(c.Failure.Text, "verdict: FAIL") || !strings.Contains(c.Failure.Text, fmt.Sprintf("base: median %s", fmtNum(d.Delta.Base.Median)))) {
			t.Errorf("failure %+v", c.Failure)
		}
	}
	// Too few samples to decide: skipped as UNKNOWN, with the reason.
	res, _ = CompareRuns(firstRuns(loadSet(t, "few-a"), 2), firstRuns(loadSet(t, "few-b"), 2), CompareOptions{Gates: gates})
	top, out := junitOfDecisions(t, res.Decisions)
	if top.Skipped == 0 || top.Failures != 0 || !strings.Contains(out, "UNKNOWN") {
		t.Errorf("few samples: %s", out)
	}
}

// junitOfDecisions is compare's JUnit of ds, parsed, and its text.
func junitOfDecisions(t *testing.T, ds []Decision) (junitSuites, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJUnitDecisions(&buf, "compare", ds); err != nil {
		t.Fatal(err)
	}
	var top junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, buf.String())
	}
	return top, buf.String()
}

// report --format junit: a passing case per cell and metric, a failure
// per sample that failed to measure.
func TestJUnitReport(t *testing.T) {
	set := loadSet(t, "stock")
	set.Failed = []results.Sample{{Cell: "tap/x", Kernel: set.Kernels()[0], Error: "guest gone\nmore"}}
	r, _ := Build(set, Options{})
	var buf bytes.Buffer
	if err := Render(&buf, set, r, "junit", ASCII); err != nil {
		t.Fatal(err)
	}
	var top junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	if top.Tests != len(r.Summaries)+1 || top.Failures != 1 || !strings.Contains(buf.String(), `message="guest gone"`) {
		t.Errorf("%d tests, %d failures for %d summaries:\n%.2000s", top.Tests, top.Failures, len(r.Summaries), buf.String())
	}
}

// BenchmarkExports measures the CI formats of a lab run of two source
// builds (344 cell x metric summaries), from a built model.
func BenchmarkExports(b *testing.B) {
	set, err := results.Load(run("lab-pktgen-tcg")...)
	if err != nil {
		b.Fatal(err)
	}
	r, err := Build(set, Options{Origin: "vnb"})
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []string{"kcidb", "junit", "lava"} {
		b.Run(f, func(b *testing.B) {
			for b.Loop() {
				if err := Render(io.Discard, set, r, f, ASCII); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// compare's JUnit cases give each median with its unit, as report's
// JUnit does ("median 452631 pps"): the real lab run against itself once
// read "base: median 2535.92" for tx_pps and "median 0.0561" for a
// task-clock in seconds (and "1 runs per side").
func TestJUnitDecisionsSayUnits(t *testing.T) {
	set := loadSet(t, "lab-pktgen-tcg")
	gates, _ := ParseGates("tx_pps<-3%,perf.task-clock@vhost>+0%")
	res, err := CompareRuns(set, set, CompareOptions{Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	top, _ := junitOfDecisions(t, res.Decisions)
	units := map[string]string{"tx_pps": "pps", "perf.task-clock@vhost": "s"}
	seen := map[string]bool{}
	for i, c := range top.Suites[0].Cases {
		d := res.Decisions[i]
		want := fmt.Sprintf("base: median %s %s", fmtNum(d.Delta.Base.Median), units[d.Gate.Metric])
		if !strings.Contains(c.SystemOut, want) {
			t.Errorf("%s %s: %q lacks %q", d.Cell, d.Gate.Metric, c.SystemOut, want)
		}
		if strings.Contains(c.SystemOut, "1 runs") { // 1 run per side, this run's n
			t.Errorf("%s %s: %q", d.Cell, d.Gate.Metric, c.SystemOut)
		}
		seen[d.Gate.Metric] = true
	}
	if len(seen) != len(units) {
		t.Fatalf("gated metrics %v, want %v", seen, units)
	}
}
