package history

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv/xmltree"
)

// parsePage parses a page WriteHTML wrote, strictly.
func parsePage(t *testing.T, page []byte) *xmltree.Node {
	t.Helper()
	return xmltree.Parse(t, page)
}

// labelSpan is the horizontal extent of a change-point label: charW per
// character (a monospace font), from x rightwards or, anchored at its
// end, leftwards.
func labelSpan(t *testing.T, n *xmltree.Node) (from, to, y float64) {
	t.Helper()
	x, err1 := strconv.ParseFloat(n.Attr("x"), 64)
	y, err2 := strconv.ParseFloat(n.Attr("y"), 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("label %q at x %q y %q", n.Text, n.Attr("x"), n.Attr("y"))
	}
	w := charW * float64(len([]rune(strings.TrimSpace(n.Text))))
	if n.Attr("text-anchor") == "end" {
		return x - w, x, y
	}
	return x, x + w, y
}

// checkChart checks one parsed chart: every number it writes is in the
// tables' form (no exponent), and its change-point labels lie inside it
// without overlapping. It returns the labels' colours in order.
func checkChart(t *testing.T, title string, svg *xmltree.Node) []string {
	t.Helper()
	exp := regexp.MustCompile(`\d[eE][+-]?\d`)
	for _, name := range []string{"text", "title"} {
		for _, n := range svg.All(name) {
			if m := exp.FindString(n.Text); m != "" {
				t.Errorf("%s: <%s> %q writes a number in exponent form", title, name, n.Text)
			}
		}
	}
	var labels []*xmltree.Node
	for _, n := range svg.All("text") {
		if n.Attr("class") == "cp" {
			labels = append(labels, n)
		}
	}
	var lines []*xmltree.Node // the change points' dashed lines
	for _, n := range svg.All("line") {
		if n.Attr("stroke-dasharray") != "" {
			lines = append(lines, n)
		}
	}
	var colors []string
	for i, a := range labels {
		a0, a1, ay := labelSpan(t, a)
		if a0 < 0 || a1 > chartW {
			t.Errorf("%s: label %q spans %.0f..%.0f, outside the chart", title, a.Text, a0, a1)
		}
		for _, l := range lines {
			// A line crosses a label it passes under, down to the
			// descenders (3 px below the baseline at 11 px).
			x, _ := strconv.ParseFloat(l.Attr("x1"), 64)
			y1, _ := strconv.ParseFloat(l.Attr("y1"), 64)
			if a0 < x && x < a1 && y1 < ay+3 {
				t.Errorf("%s: the change line at x %.1f from y %.0f crosses label %q (%.0f..%.0f, baseline %.0f)", title, x, y1, a.Text, a0, a1, ay)
			}
		}
		for _, b := range labels[:i] {
			b0, b1, by := labelSpan(t, b)
			if ay == by && a0 < b1 && b0 < a1 {
				t.Errorf("%s: labels %q and %q overlap at y %.0f: %.0f..%.0f and %.0f..%.0f", title, b.Text, a.Text, ay, b0, b1, a0, a1)
			}
		}
		colors = append(colors, a.Attr("fill"))
	}
	return colors
}

// closeSteps is 120 points around level with noise sd and steps at 60
// (-2500), 70 (+1500 from the start) and 80 (-1500): three change
// points 10 points apart, whose labels would overlap in one row.
func closeSteps(level, sd float64) []Point {
	r := rand.New(rand.NewPCG(1, 2))
	var pts []Point
	for i := range 120 {
		v := level + sd*r.NormFloat64()
		switch {
		case i >= 80:
			v -= 1500 * level / 26700
		case i >= 70:
			v += 1500 * level / 26700
		case i >= 60:
			v -= 2500 * level / 26700
		}
		pts = append(pts, Point{Label: fmt.Sprintf("c%012d", i), Value: v})
	}
	return pts
}

// TestHTMLFlatTicks: the axis ticks of flat series (one point, a level
// that moves by less than the tables' 3 digits, a loss of 0 throughout)
// read differently, in the tables' format.
func TestHTMLFlatTicks(t *testing.T) {
	near := make([]Point, 30)
	zero := make([]Point, 30)
	for i := range near {
		near[i] = Point{Label: fmt.Sprint(i), Value: 452000 + float64(i%3)*50}
		zero[i] = Point{Label: fmt.Sprint(i)}
	}
	rs := Analyze([]Series{
		{Metric: "tx_pps", Unit: "pps", Points: []Point{{Label: "6.18", Value: 11900}}},
		{Metric: "tx_pps", Unit: "pps", Points: near},
		{Metric: "lost_pps", Unit: "pps", Points: zero},
	}, Default)
	var b bytes.Buffer
	if err := WriteHTML(&b, rs, ""); err != nil {
		t.Fatal(err)
	}
	for i, svg := range parsePage(t, b.Bytes()).All("svg") {
		checkChart(t, rs[i].Metric, svg)
		tk := ticks(svg)
		if len(tk) != 3 || tk[0] == tk[1] || tk[1] == tk[2] || !strings.HasSuffix(tk[1], "pps") {
			t.Errorf("chart %d: axis ticks %q, want 3 different values in pps", i, tk)
		}
	}
}

// ticks are the texts of a chart's y axis, top to bottom.
func ticks(svg *xmltree.Node) (out []string) {
	for _, n := range svg.All("text") {
		if n.Attr("text-anchor") == "end" && n.Attr("x") == strconv.Itoa(chartLeft-4) {
			out = append(out, n.Text)
		}
	}
	return out
}

// TestHTMLParsed parses the page of three series with change points 10
// points apart (one near the right edge too): an unitless higher-is-better
// series around 26.7k, one of tiny values (1.2e-5) and a neutral one. The
// axis ticks, tooltips and labels write numbers as the tables do, never
// in exponent form; labels do not overlap; a label's colour and the
// table's direction word follow the metric's direction.
func TestHTMLParsed(t *testing.T) {
	tiny := closeSteps(1.2e-5, 0)
	for i := range tiny {
		tiny[i].Value = 1.2e-5 * (1 + 0.005*rand.New(rand.NewPCG(uint64(i), 9)).NormFloat64())
		if i >= 60 {
			tiny[i].Value *= 1.1
		}
	}
	edge := closeSteps(26700, 150)
	for i := 114; i < len(edge); i++ {
		edge[i].Value -= 3000
	}
	series := []Series{
		{Metric: "ops_per_s", Better: HigherIsBetter, Points: closeSteps(26700, 150)},
		{Metric: "wait_s", Better: LowerIsBetter, Points: tiny},
		{Metric: "widgets", Points: edge},
	}
	rs := Analyze(series, Default)
	var b bytes.Buffer
	if err := WriteHTML(&b, rs, "2 diagnostic series (busy fractions, overheads, perf counters) not shown; --all shows them"); err != nil {
		t.Fatal(err)
	}
	page := parsePage(t, b.Bytes())
	svgs, tables := page.All("svg"), page.All("table")
	if len(svgs) != 3 || len(tables) != 3 {
		t.Fatalf("%d charts and %d tables, want 3 of each", len(svgs), len(tables))
	}
	want := map[string]string{"regression": "#b00", "improvement": "#070", "change": "#777"}
	for i, r := range rs {
		colors := checkChart(t, r.Metric, svgs[i])
		var dirs []string
		for _, td := range tables[i].All("td") {
			if c := td.Attr("class"); c != "num" && c != "" {
				dirs = append(dirs, td.Text)
			}
		}
		if len(colors) != len(r.Changes) || len(dirs) != len(r.Changes) || len(r.Changes) == 0 {
			t.Fatalf("%s: %d labels, %d table directions, %d change points", r.Metric, len(colors), len(dirs), len(r.Changes))
		}
		for j, d := range dirs {
			if colors[j] != want[d] || (r.Better == Neutral) != (d == "change") {
				t.Errorf("%s: change %d is %q in the table and %s in the chart", r.Metric, j, d, colors[j])
			}
		}
	}
	for i, re := range []string{`^2\d\.\dk$`, `^1\d\.\dµ$`} {
		for _, tk := range ticks(svgs[i]) {
			if !regexp.MustCompile(re).MatchString(tk) {
				t.Errorf("%s: axis tick %q, want the form %s", rs[i].Metric, tk, re)
			}
		}
	}
}
