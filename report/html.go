package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/vnetbench/vnetbench/internal/units"
)

// htmlText escapes s for HTML text and attributes, its control characters
// shown as escapes (oneLine) as text output shows them.
func htmlText(s string) string { return html.EscapeString(oneLine(s)) }

// WriteHTML renders r as one self-contained HTML file: the tables, and an
// inline SVG bar chart with error bars per metric (one bar group per cell,
// one bar per column). No scripts, fonts or other external resources.
func WriteHTML(w io.Writer, r *Report) error {
	var b bytes.Buffer
	esc := htmlText
	title := "vnetbench report: " + strings.Join(r.Columns, " vs ")
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%s</title>
<style>
body{font-family:sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #999;padding:.2em .6em}
td.num,th.num{text-align:right;font-family:monospace}
.notes{font-size:90%%;color:#444}
.emulated{background:#fff3cd;border:1px solid #e0b000;padding:.5em}
svg text{font-family:sans-serif;font-size:11px}
</style>
</head>
<body>
<h1>%s</h1>
`, esc(title), esc(title))
	if len(r.Columns) > 1 {
		fmt.Fprintf(&b, "<p>Base: %s. Changes are medians; %s.</p>\n", esc(r.Base), esc(changeLegend))
	}
	if len(r.Emulated) > 0 {
		fmt.Fprintf(&b, "<p class=\"emulated\"><strong>EMULATED</strong> (QEMU TCG, no KVM): %s. These numbers measure the emulator, not the kernel.</p>\n", esc(strings.Join(r.Emulated, ", ")))
	}
	for _, t := range r.Tables {
		heading := t.Title
		if t.Context != "" && t.Kind != KindCompare && t.Kind != KindSweep {
			heading = t.Context
		}
		fmt.Fprintf(&b, "<h2>%s</h2>\n", esc(heading))
		if t.Kind == KindCompare {
			writeChart(&b, r, t)
		}
		b.WriteString("<table>\n<tr>")
		for _, h := range t.LabelHeader {
			fmt.Fprintf(&b, "<th>%s</th>", esc(h))
		}
		for _, h := range t.Header {
			fmt.Fprintf(&b, "<th class=\"num\">%s</th>", esc(h))
		}
		b.WriteString("</tr>\n")
		for i, row := range t.Rows {
			b.WriteString("<tr>")
			for j, l := range row.Labels {
				if j == 0 && len(row.Labels) > 1 {
					if i > 0 && t.Rows[i-1].Labels[0] == l {
						continue
					}
					span := 1
					for k := i + 1; k < len(t.Rows) && t.Rows[k].Labels[0] == l; k++ {
						span++
					}
					fmt.Fprintf(&b, "<th rowspan=\"%d\">%s</th>", span, esc(l))
					continue
				}
				fmt.Fprintf(&b, "<td>%s</td>", esc(l))
			}
			for _, c := range row.Cells {
				txt := esc(c.Text)
				for _, n := range c.Notes {
					txt += "<sup>" + fmt.Sprint(n+1) + "</sup>"
				}
				fmt.Fprintf(&b, "<td class=\"num\">%s</td>", txt)
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
		if len(t.Notes) > 0 {
			b.WriteString("<div class=\"notes\">")
			refs := referencedNotes(t)
			for i, n := range t.Notes {
				if refs[i] {
					fmt.Fprintf(&b, "<sup>%d</sup> ", i+1)
				}
				fmt.Fprintf(&b, "%s<br>\n", esc(n))
			}
			b.WriteString("</div>\n")
		}
		if t.Kind == KindLatency {
			writeLatencyPlots(&b, r)
		}
	}
	if env := envLines(r); len(env) > 0 {
		b.WriteString("<h2>Environment</h2>\n<ul>\n")
		for _, l := range env {
			fmt.Fprintf(&b, "<li>%s</li>\n", esc(l))
		}
		b.WriteString("</ul>\n")
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "<p class=\"notes\">warning: %s</p>\n", esc(wn))
	}
	b.WriteString("</body>\n</html>\n")
	_, err := w.Write(b.Bytes())
	return err
}

var barColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"}

// writeChart draws the compare table t as grouped bars: the median, with
// an error bar over the confidence interval of the median, or over
// min..max when it is infinite (too few samples); the caption says which,
// and the intervals' own levels (CIName).
func writeChart(b *bytes.Buffer, r *Report, t *Table) {
	type bar struct {
		med, lo, hi  float64
		ci, emulated bool
	}
	var groups [][]bar
	var names []string
	top := 0.0
	anyMinMax, cis := false, []*Stats(nil)
	for _, row := range t.Rows {
		var g []bar
		for i := range r.Columns {
			idx := 0
			if i > 0 {
				idx = 1 + 3*(i-1)
			}
			if idx >= len(row.Cells) || row.Cells[idx].Stats == nil {
				g = append(g, bar{med: math.NaN()})
				continue
			}
			c := row.Cells[idx]
			st := c.Stats
			br := bar{med: st.Median, lo: st.Lo, hi: st.Hi, ci: st.CIFinite(), emulated: c.Emulated}
			if br.ci {
				cis = append(cis, st)
			} else {
				br.lo, br.hi = st.Min, st.Max
				anyMinMax = true
			}
			top = math.Max(top, math.Max(br.hi, br.med))
			g = append(g, br)
		}
		groups = append(groups, g)
		names = append(names, row.Labels[0])
	}
	if top <= 0 || len(groups) == 0 {
		return
	}
	step := niceStep(top / 4)
	ticks := int(math.Ceil(top / step))
	top = step * float64(ticks)
	const (
		W, H         = 720, 260
		left, bottom = 60, 40
		plotW, plotH = W - left - 10, H - bottom - 20
	)
	gw := float64(plotW) / float64(len(groups))
	y := func(v float64) float64 { return 20 + float64(plotH)*(1-v/top) }
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n", W, H+20, W, H+20, htmlText(t.Title))
	// Axis and gridlines.
	for i := 0; i <= ticks; i++ {
		v := step * float64(i)
		fmt.Fprintf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", left, W-10, y(v), y(v))
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left-4, y(v)+4, htmlText(tickLabel(v)))
	}
	fmt.Fprintf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left, W-10, y(0), y(0))
	for gi, g := range groups {
		x0 := float64(left) + gw*float64(gi)
		bw := gw * 0.8 / float64(max(len(g), 1))
		for bi, br := range g {
			if math.IsNaN(br.med) {
				continue
			}
			x := x0 + gw*0.1 + bw*float64(bi)
			fill := barColors[bi%len(barColors)]
			op := "1"
			if br.emulated {
				op = "0.55"
			}
			fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"%s\"><title>%s: %s</title></rect>",
				x, y(br.med), bw*0.9, y(0)-y(br.med), fill, op, htmlText(r.Columns[bi]), htmlText(units.SI(br.med)))
			cx := x + bw*0.45
			fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>", cx, cx, y(br.lo), y(br.hi))
			for _, v := range []float64{br.lo, br.hi} {
				fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>", cx-3, cx+3, y(v), y(v))
			}
			b.WriteString("\n")
		}
		name := names[gi]
		if len(name) > 28 {
			name = name[:27] + "…"
		}
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x0+gw/2, H-bottom+36, htmlText(name))
	}
	// Legend.
	for i, c := range r.Columns {
		label := c
		if r.IsEmulated(c) {
			label += " (TCG, emulated)"
		}
		fmt.Fprintf(b, "<rect x=\"%d\" y=\"4\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"13\">%s</text>\n",
			left+i*160, barColors[i%len(barColors)], left+i*160+14, htmlText(label))
	}
	b.WriteString("</svg>\n")
	fmt.Fprintf(b, "<p class=\"notes\">%s</p>\n", chartCaption(cis, anyMinMax))
}

// chartCaption says what a chart's error bars are: the confidence
// intervals of the median cis by their own levels (CIName), min..max
// where anyMinMax (too few samples), or both.
func chartCaption(cis []*Stats, anyMinMax bool) string {
	switch {
	case len(cis) == 0:
		return "Bars: median; error bars: min to max: too few samples give no finite confidence interval of the median."
	case anyMinMax:
		return "Bars: median; error bars: " + CIName(cis) + ", or min to max where too few samples give no finite interval."
	}
	return "Bars: median; error bars: " + CIName(cis) + "."
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// tickLabel is si without trailing zeros: "500k", "1.5M".
func tickLabel(v float64) string {
	t := units.SI(v)
	num := strings.TrimRight(t, "kMGT")
	if strings.Contains(num, ".") {
		num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
	}
	return num + t[len(strings.TrimRight(t, "kMGT")):]
}
