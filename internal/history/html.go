package history

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"

	"github.com/vnetbench/vnetbench/internal/textsafe"
)

// WriteHTML renders one self-contained HTML page: per series an inline
// SVG line chart of its points, a band of each segment's median +- its
// noise, and the change points marked and labelled, then their table.
// No scripts or external resources, and well-formed XML (XHTML syntax),
// so a test parses it with encoding/xml. A note, when not empty, closes
// the page (what was left out and how to see it).
func WriteHTML(w io.Writer, rs []Result, note string) error {
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>vnetbench history</title>
<style>
body{font-family:sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #999;padding:.2em .6em}
td.num{text-align:right;font-family:monospace}
svg text{font-family:sans-serif;font-size:11px}
svg text.cp{font-family:monospace}
.regression{color:#b00}.improvement{color:#070}
.emulated{color:#b00;font-weight:bold}
</style>
</head>
<body>
<h1>vnetbench history</h1>
`)
	for _, r := range rs {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", html.EscapeString(r.Title()))
		if line := r.emulationLine(); line != "" {
			fmt.Fprintf(&b, "<p class=\"caption emulated\">%s</p>\n", html.EscapeString(line))
		}
		writeChart(&b, &r)
		if len(r.Changes) == 0 {
			b.WriteString("<p>No change points.</p>\n")
			continue
		}
		b.WriteString("<table>\n<tr><th>index</th><th>label</th><th>before</th><th>after</th><th>change</th><th>p</th><th>direction</th></tr>\n")
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "<tr><td class=\"num\">%d</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%.1e</td><td class=\"%s\">%s</td></tr>\n",
				c.Index, html.EscapeString(textsafe.OneLine(c.Label)), r.Format(c.Before), r.Format(c.After), pct(c.Change), c.P, c.Direction, c.Direction)
		}
		b.WriteString("</table>\n")
		for _, c := range r.Changes {
			if c.EmulationChanged {
				fmt.Fprintf(&b, "<p class=\"emulated\">Index %d: %s.</p>\n", c.Index, html.EscapeString(c.EmulationNote()))
			}
		}
	}
	if note != "" {
		fmt.Fprintf(&b, "<p><em>%s</em></p>\n", html.EscapeString(textsafe.Terminal(note)))
	}
	b.WriteString("</body>\n</html>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Chart geometry, in pixels: the SVG's size, its margins, the height of
// a row of change-point labels above the plot, and the width of one of
// their characters (monospace, 0.6 em at 11 px in DejaVu Sans Mono,
// Liberation Mono and Courier, rounded up).
const (
	chartW, chartH               = 900, 260
	chartLeft, chartRight        = 80, 10
	chartBottom, labelRow, charW = 30, 14, 6.7
)

// placedLabel is a change point's label: its text, its tooltip, where
// its line is, and the row above the plot it is written in.
type placedLabel struct {
	text, tip, color string
	x, tx            float64 // the line's x and the text's anchor x
	end              bool    // anchored at its end (written leftwards)
	row              int
}

// placeLabels lays the labels of changes at xs out in rows above the
// plot so that no two overlap: each goes in the first row whose last
// label ends left of it (with a gap), written rightwards of its line,
// or leftwards where it would run past the chart's right edge. A label
// is charW pixels per character wide (its font is monospace).
func placeLabels(labels []placedLabel) (rows int) {
	var ends []float64
	for i := range labels {
		l := &labels[i]
		w := charW * float64(len([]rune(l.text)))
		l.tx = l.x + 3
		from, to := l.tx, l.tx+w
		if to > chartW-chartRight {
			l.end, l.tx = true, l.x-3
			from, to = l.tx-w, l.tx
		}
		l.row = -1
		for r, e := range ends {
			if from > e+6 {
				l.row, ends[r] = r, to
				break
			}
		}
		if l.row < 0 {
			l.row = len(ends)
			ends = append(ends, to)
		}
	}
	return len(ends)
}

// writeChart draws r's chart: x is the point's position, y its value;
// values are written as the tables write them.
func writeChart(b *bytes.Buffer, r *Result) {
	const W, H, left, right, bottom = chartW, chartH, chartLeft, chartRight, chartBottom
	xs := values(r.Points)
	if len(xs) == 0 {
		return
	}
	segs := r.Segments()
	lo, hi := axisRange(r, xs, segs)
	px := func(i float64) float64 {
		if len(xs) == 1 {
			return left + (W-left-right)/2
		}
		return left + i*(W-left-right)/float64(len(xs)-1)
	}
	labels := make([]placedLabel, len(r.Changes))
	for i, c := range r.Changes {
		labels[i] = placedLabel{text: textsafe.OneLine(c.Label) + " " + pct(c.Change), color: directionColor(c.Direction), x: px(float64(c.Index) - 0.5),
			tip: fmt.Sprintf("%s: %s → %s", c.Direction, r.Format(c.Before), r.Format(c.After))}
	}
	top := 10 + labelRow*placeLabels(labels)
	py := func(v float64) float64 { return float64(top) + (hi-v)/(hi-lo)*float64(H-top-bottom) }
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n", W, H, W, H, html.EscapeString(r.Title()))
	fmt.Fprintf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", left, H-bottom, W-right, H-bottom)
	for _, v := range []float64{hi, (hi + lo) / 2, lo} {
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left-4, py(v)+4, html.EscapeString(r.Format(v)))
	}
	for _, s := range segs {
		x0, x1 := px(float64(s.From)-0.5), px(float64(s.To)-0.5)
		x0, x1 = max(x0, left), min(x1, W-right)
		fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4a90d9\" fill-opacity=\"0.15\"><title>median %s ± %s</title></rect>\n",
			x0, py(s.Median+s.Sigma), x1-x0, py(s.Median-s.Sigma)-py(s.Median+s.Sigma), html.EscapeString(r.Format(s.Median)), html.EscapeString(r.Format(s.Sigma)))
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#4a90d9\"/>\n", x0, py(s.Median), x1, py(s.Median))
	}
	b.WriteString("<polyline fill=\"none\" stroke=\"#333\" stroke-width=\"1\" points=\"")
	for i, v := range xs {
		fmt.Fprintf(b, "%.1f,%.1f ", px(float64(i)), py(v))
	}
	b.WriteString("\"/>\n")
	if len(xs) <= 300 {
		for i, v := range xs {
			fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"#333\"><title>%s: %s</title></circle>\n", px(float64(i)), py(v), html.EscapeString(textsafe.OneLine(r.Points[i].Label)), html.EscapeString(r.Format(v)))
		}
	}
	for _, l := range labels {
		ty := 10 + labelRow*l.row + 10
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"4 3\"/>\n", l.x, top-1, l.x, H-bottom, l.color)
		anchor := ""
		if l.end {
			anchor = ` text-anchor="end"`
		}
		fmt.Fprintf(b, "<text class=\"cp\" x=\"%.1f\" y=\"%d\" fill=\"%s\"%s><title>%s</title>%s</text>\n", l.tx, ty, l.color, anchor, html.EscapeString(l.tip), html.EscapeString(l.text))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">%s</text>\n", left, H-10, html.EscapeString(textsafe.OneLine(r.Points[0].Label)))
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", W-right, H-10, html.EscapeString(textsafe.OneLine(r.Points[len(xs)-1].Label)))
	b.WriteString("</svg>\n")
}

// axisRange is the range of r's y axis: its values and its segments'
// bands, widened about its middle until the three ticks (top, middle,
// bottom) read differently in the tables' format; a flat series (one
// point, or equal values) starts at +-5% of its value, or +-1 at 0.
func axisRange(r *Result, xs []float64, segs []Segment) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range xs {
		lo, hi = min(lo, v), max(hi, v)
	}
	for _, s := range segs {
		lo, hi = min(lo, s.Median-s.Sigma), max(hi, s.Median+s.Sigma)
	}
	distinct := func() bool {
		mid := r.Format((hi + lo) / 2)
		return hi > lo && r.Format(hi) != mid && r.Format(lo) != mid
	}
	for i := 0; i < 20 && !distinct(); i++ {
		pad := (hi - lo) / 2
		if pad == 0 {
			pad = 0.05 * math.Abs(hi)
		}
		if pad == 0 {
			pad = 1
		}
		hi, lo = hi+pad, lo-pad
	}
	return lo, hi
}

func directionColor(d string) string {
	switch d {
	case "regression":
		return "#b00"
	case "improvement":
		return "#070"
	}
	return "#777"
}
