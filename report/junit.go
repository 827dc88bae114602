package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// JUnit XML as GitLab's and GitHub's test report viewers read it
// (the Ant/Surefire dialect: testsuites > testsuite > testcase with an
// optional failure or skipped element).

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnitDecisions writes the gate decisions as JUnit XML: one test
// case per gated metric and cell (classname "vnetbench.<suite>.<metric>",
// name the cell). A tripped gate (DIFFERENT, beyond it in its bad
// direction) is a failure whose message carries the effect and the
// verdict, and so is a gated metric MISSING on a side (type "missing";
// skipped when --allow-missing names it); an UNKNOWN verdict (the runs
// cannot decide yet) is skipped with that reason, never a pass; SAME and
// DIFFERENT within the gate pass.
// suite names the gate ("compare", "history").
func WriteJUnitDecisions(w io.Writer, suite string, decisions []Decision) error {
	s := junitSuite{Name: "vnetbench " + suite}
	for _, d := range decisions {
		c := junitCase{Name: d.Cell, Classname: "vnetbench." + suite + "." + d.Gate.Metric, Time: "0",
			SystemOut: decisionDetail(&d)}
		switch {
		case d.Tripped:
			c.Failure = &junitMessage{Message: asciiOnly(d.String()), Type: "regression", Text: c.SystemOut}
			s.Failures++
		case d.Failed():
			c.Failure = &junitMessage{Message: asciiOnly(d.String()), Type: "missing", Text: c.SystemOut}
			s.Failures++
		case d.Verdict == verdict.Missing:
			c.Skipped = &junitMessage{Message: asciiOnly(d.String())}
			s.Skipped++
		case d.Undecided():
			c.Skipped = &junitMessage{Message: asciiOnly("UNKNOWN: " + d.String())}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	return writeJUnit(w, []junitSuite{s})
}

// decisionDetail is a decision in a few lines: the gate, both medians
// with their confidence intervals, the change, p and the verdict.
func decisionDetail(d *Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gate: %s\ncell: %s\n", d.Gate, oneLine(d.Cell))
	if d.Verdict == verdict.Missing {
		state := "FAIL: a gate never passes on nothing"
		if d.Allowed {
			state = "ok: --allow-missing names it"
		}
		fmt.Fprintf(&b, "MISSING: %s\nverdict: %s\n", oneLine(d.Missing), state)
		return asciiOnly(b.String())
	}
	state := "ok: " + string(d.Verdict) + ", within the gate"
	switch {
	case d.Tripped:
		state = "FAIL: DIFFERENT, beyond the gate"
	case d.Undecided():
		state = "UNKNOWN: the runs cannot decide yet"
	}
	unit := ""
	if m, ok := results.Lookup(metric.Key(d.Gate.Metric)); ok && m.Unit != "" {
		unit = " " + m.Unit
	}
	fmt.Fprintf(&b, "base: median %s%s%s (n=%d)\n", fmtNum(d.Delta.Base.Median), unit, ciText(d.Delta.Base), d.Delta.Base.N)
	fmt.Fprintf(&b, "new:  median %s%s%s (n=%d)\n", fmtNum(d.Delta.New.Median), unit, ciText(d.Delta.New), d.Delta.New.N)
	fmt.Fprintf(&b, "change: %s, p=%.3g (%s)\nverdict: %s\n", units.Pct(d.Delta.Pct), d.Delta.P, levelText(&d.Delta), state)
	return asciiOnly(b.String())
}

// levelText says at which p the look the runs reached calls DIFFERENT,
// or that they are below the plan's first look.
func levelText(d *Delta) string {
	v := &d.Verdict
	if v.Look < 0 {
		return fmt.Sprintf("%s per side: below the plan's first look at %d, no verdict", units.Plural(min(v.NBase, v.NNew), "run"), verdict.Default.FirstN())
	}
	return fmt.Sprintf("DIFFERENT at p <= %.3g, the level of the look at %d runs per side", d.Alpha, verdict.Default.Looks[v.Look])
}

func ciText(s Stats) string {
	if !s.CIFinite() {
		return ", CI unbounded at this n"
	}
	return fmt.Sprintf(", %s CI %s..%s", ciPct(s.CILevel), fmtNum(s.Lo), fmtNum(s.Hi))
}

func fmtNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%.6g", v)
}

// WriteJUnit writes the report as JUnit XML: one test suite per column,
// one passing test case per cell and metric whose output is the median,
// its confidence interval and n (a report gates nothing: failures come
// from 'compare --junit'); samples that failed to measure are failures.
func WriteJUnit(w io.Writer, r *Report, failed []FailedCell) error {
	var suites []junitSuite
	idx := map[string]int{}
	suite := func(col string) *junitSuite {
		i, ok := idx[col]
		if !ok {
			i = len(suites)
			idx[col] = i
			suites = append(suites, junitSuite{Name: "vnetbench " + col})
		}
		return &suites[i]
	}
	for _, col := range r.Columns {
		suite(col)
	}
	for _, s := range r.Summaries {
		st := s.Stats
		out := fmt.Sprintf("median %s %s%s (n=%d)\n", fmtNum(st.Median), s.Unit, ciText(st), st.N)
		if s.Emulated {
			out += results.EmulatedMark + ": this measures the emulator, not the kernel\n"
		}
		js := suite(s.Column)
		js.Cases = append(js.Cases, junitCase{Name: s.Cell, Classname: "vnetbench." + s.Metric, Time: "0", SystemOut: out})
		js.Tests++
	}
	for _, f := range failed {
		js := suite(f.Column)
		js.Cases = append(js.Cases, junitCase{Name: f.Cell, Classname: "vnetbench.run", Time: "0",
			Failure: &junitMessage{Message: asciiOnly(firstLine(f.Error)), Type: "error", Text: asciiOnly(f.Error)}})
		js.Tests++
		js.Failures++
	}
	return writeJUnit(w, suites)
}

// FailedCell is a sample that failed to measure (results.Sample.Error).
type FailedCell struct {
	Column, Cell string
	Rep          int
	Error        string
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func writeJUnit(w io.Writer, suites []junitSuite) error {
	top := junitSuites{Name: "vnetbench", Suites: suites}
	for _, s := range suites {
		top.Tests += s.Tests
		top.Failures += s.Failures
		top.Skipped += s.Skipped
	}
	b, err := xml.MarshalIndent(&top, "", "  ")
	if err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
