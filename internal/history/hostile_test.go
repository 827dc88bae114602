package history

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// hostileResult is a series whose cell, kernel label, scenario and point
// labels (all read from run directories or a CSV vnetbench did not
// write) hold a line break that forges a line, terminal escape sequences
// and a bidirectional control, with a change point at a hostile label.
func hostileResult() []Result {
	label := func(i int) string { return "c" + string(rune('0'+i)) + "\x1b]0;pwn\x07" }
	s := Series{Scenario: "s\u202eevil", Cell: "tap\x1b[2J", Kernel: "stock\nFORGED line", Metric: "tx_pps", Better: HigherIsBetter, Unit: "pps"}
	for i := range 6 {
		s.Points = append(s.Points, Point{Label: label(i), Value: float64(1000 - 500*(i/3))})
	}
	ch := -0.5
	return []Result{{Series: s, Changes: []ChangePoint{{Index: 3, Label: label(3), Before: 1000, After: 500, Change: &ch, P: 1e-4, Direction: "regression"}}}}
}

// The text and HTML of history show hostile names as escapes (issue 34
// item 3): no control character reaches a terminal or the page (an SVG
// with one is not well-formed XML), no name starts a line of its own.
// Before, titles and labels were written raw.
func TestHostileNamesShownEscaped(t *testing.T) {
	rs := hostileResult()
	var txt, page bytes.Buffer
	if err := WriteText(&txt, rs); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, rs, "note"); err != nil {
		t.Fatal(err)
	}
	ctl := regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]")
	for name, out := range map[string]string{"text": txt.String(), "html": page.String()} {
		if m := ctl.FindStringIndex(out); m != nil {
			t.Errorf("%s output has control character %q at %d", name, out[m[0]:m[1]], m[0])
		}
		if regexp.MustCompile(`(?m)^\s*FORGED`).MatchString(out) {
			t.Errorf("%s output has a line forged by a kernel label:\n%s", name, out)
		}
		for _, want := range []string{`stock\x0aFORGED line`, `tap\x1b[2J`, `c3\x1b]0;pwn\x07`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks the escaped name %q", name, want)
			}
		}
	}
}
