package history

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		unit string
		v    float64
		want string
	}{
		{"pps", 452000, "452 Kpps"},
		{"bit/s", 9.41e9, "9.41 Gbit/s"},
		{"fraction", 0.125, "12.5%"},
		{"s", 96.5e-6, "96.5 us"}, // was 9.65e-05 s
		{"s", 0.179, "179 ms"},
		{"s", 2.5, "2.50 s"},
		{"", 26740, "26.7k"},
		{"", 1.2345, "1.23"},
		{"ops", 12, "12"},
	} {
		s := Series{Unit: tc.unit}
		if got := s.Format(tc.v); got != tc.want {
			t.Errorf("Format(%v) in %q = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

// TestPlaceLabels: labels of change points close together go in rows
// where none overlaps another, and one near the right edge is written
// leftwards of its line so it stays inside the chart.
func TestPlaceLabels(t *testing.T) {
	var ls []placedLabel
	for _, x := range []float64{300, 310, 320, 330, 600, chartW - 20} {
		ls = append(ls, placedLabel{text: "c000000000060 -10.4%", x: x})
	}
	rows := placeLabels(ls)
	if rows < 4 {
		t.Errorf("%d rows for 4 labels 10 px apart, want at least 4", rows)
	}
	span := func(l placedLabel) (float64, float64) {
		w := charW * float64(len(l.text))
		if l.end {
			return l.tx - w, l.tx
		}
		return l.tx, l.tx + w
	}
	for i := range ls {
		a0, a1 := span(ls[i])
		if a0 < 0 || a1 > chartW-chartRight {
			t.Errorf("label %d spans %.0f..%.0f, outside the chart", i, a0, a1)
		}
		for j := range i {
			b0, b1 := span(ls[j])
			if ls[i].row == ls[j].row && a0 < b1 && b0 < a1 {
				t.Errorf("labels %d and %d overlap in row %d: %.0f..%.0f and %.0f..%.0f", j, i, ls[i].row, b0, b1, a0, a1)
			}
		}
	}
	if !ls[5].end {
		t.Errorf("the label at the right edge is written rightwards, past the chart")
	}
}

// TestWriteHTMLNumbers: the chart and the table write values as the
// tables do (26.7k), never in exponent form, and the change points'
// labels sit in rows above the plot.
func TestWriteHTMLNumbers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var pts []Point
	for i := range 120 {
		v := 26700 + 150*r.NormFloat64()
		switch {
		case i >= 80:
			v -= 1500
		case i >= 70:
			v += 1500
		case i >= 60:
			v -= 2500
		}
		pts = append(pts, Point{Label: "c" + string(rune('a'+i%26)), Value: v})
	}
	rs := Analyze([]Series{{Metric: "ops_per_s", Better: HigherIsBetter, Points: pts}}, Default)
	if len(rs[0].Changes) < 3 {
		t.Fatalf("change points %+v, want the 3 steps", rs[0].Changes)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, rs, "2 diagnostic series not shown"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	svg := page[strings.Index(page, "<svg"):strings.Index(page, "</svg>")]
	if m := regexp.MustCompile(`\de[+-]?\d`).FindString(svg); m != "" {
		t.Errorf("the chart writes a value in exponent form (%s)", m)
	}
	if !regexp.MustCompile(`>2\d\.\dk</text>`).MatchString(svg) {
		t.Errorf("the chart's axis does not write values as 26.7k")
	}
	for _, want := range []string{"26.7k</td>", "regression", "improvement", "2 diagnostic series not shown"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
