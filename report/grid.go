package report

import (
	"slices"
	"strings"
)

// The hand-written grid: the thread's layout, which tablewriter cannot
// draw (see drawTable).

// drawGrid draws t as a grid. Thread tables get a full grid with the
// backend column merged across its rows and the context in the header cell
// above the label columns, like the tables on netdev; the others get only a
// header rule.
func drawGrid(t *Table, style Style) string {
	g := newGrid(t, style)
	g.measure()
	g.drawHeader()
	g.drawBody()
	return g.cv.String(style)
}

// grid is the layout of one table while drawTable draws it.
type grid struct {
	t       *Table
	style   Style
	nl      int // label columns
	ncol    int // label and value columns
	full    bool
	grouped bool

	body       [][]string       // cell texts, ncol per row
	groups     []rowRun         // runs of rows sharing the first label
	widths     []int            // column widths
	groupLines map[int][]string // wrapped first label, by group start
	ctx        []string         // wrapped context, nil without one
	cv         canvas
}

// rowRun is the rows [start, end) of a table.
type rowRun struct{ start, end int }

// newGrid fixes the shape of t and the texts of its body.
func newGrid(t *Table, style Style) *grid {
	nl := len(t.LabelHeader)
	if len(t.Rows) > 0 {
		nl = len(t.Rows[0].Labels)
	}
	g := &grid{
		style:      style,
		nl:         nl,
		ncol:       nl + len(t.Header),
		full:       t.Kind == KindThread || t.Kind == KindVersus || t.Kind == KindLatency,
		grouped:    nl >= 2 && (t.Kind == KindThread || t.Kind == KindSenders || t.Kind == KindVersus || t.Kind == KindLatency || t.Kind == KindPerfStat || t.Kind == KindHarness),
		groupLines: map[int][]string{},
	}
	g.t = t
	g.body = g.bodyTexts()
	g.groups = g.groupRows()
	return g
}

// bodyTexts returns the texts of the body cells, notes appended.
func (g *grid) bodyTexts() [][]string { return bodyTexts(g.t, g.nl, g.ncol, g.style) }

// groupRows returns the runs of equal first labels (one row each when the
// table is not grouped).
func (g *grid) groupRows() []rowRun {
	var groups []rowRun
	for i := range g.body {
		if g.grouped && i > 0 && g.body[i][0] == g.body[i-1][0] {
			groups[len(groups)-1].end = i + 1
			continue
		}
		groups = append(groups, rowRun{i, i + 1})
	}
	return groups
}

// physLines is the number of text lines group r takes in the grid.
func (g *grid) physLines(r rowRun) int {
	if g.full {
		return 2*(r.end-r.start) - 1
	}
	return r.end - r.start
}

// measure sets the column widths, wrapping the group labels and the
// context.
func (g *grid) measure() {
	g.widths = make([]int, g.ncol)
	for c := 0; c < g.ncol; c++ {
		if c >= g.nl {
			g.widths[c] = width(g.t.Header[c-g.nl])
		} else if g.t.Context == "" && c < len(g.t.LabelHeader) {
			g.widths[c] = width(g.t.LabelHeader[c])
		}
		for i := range g.body {
			if g.grouped && c == 0 {
				continue
			}
			g.widths[c] = max(g.widths[c], width(g.body[i][c]))
		}
	}
	if g.grouped {
		g.wrapGroupLabels()
	}
	if g.t.Context != "" {
		g.wrapContext()
	}
}

// wrapGroupLabels wraps each group's first label into the lines the group
// has, and widens the first column to fit. A label that would then push
// the table past MaxWidth (a group of one row has one line) is wrapped to
// what the other columns leave instead, when its longest word fits there:
// drawBody writes its extra lines below the group's last row.
func (g *grid) wrapGroupLabels() {
	fit := MaxWidth - 4
	for c := 1; c < g.ncol; c++ {
		fit -= g.widths[c] + 3
	}
	for _, r := range g.groups {
		txt := g.body[r.start][0]
		w := maxWidth(strings.Fields(txt))
		limit := width(txt)
		if w <= fit {
			limit = min(limit, fit)
		}
		lines := wrap(txt, w)
		for len(lines) > g.physLines(r) && w < limit {
			w++
			lines = wrap(txt, w)
		}
		g.groupLines[r.start] = lines
		g.widths[0] = max(g.widths[0], maxWidth(lines))
	}
}

// labelSpan is the width of the label columns with the borders between
// them.
func (g *grid) labelSpan() int {
	span := -3
	for c := 0; c < g.nl; c++ {
		span += g.widths[c] + 3
	}
	return span
}

// wrapContext wraps the context, which spans the label columns, widening
// them up to MaxWidth.
func (g *grid) wrapContext() {
	span := g.labelSpan()
	vals := 1
	for c := g.nl; c < g.ncol; c++ {
		vals += g.widths[c] + 3
	}
	avail := MaxWidth - vals - 3 - 1
	target := max(span, min(avail, width(g.t.Context), 34))
	g.ctx = wrap(g.t.Context, target)
	if mw := maxWidth(g.ctx); mw > span {
		g.widths[g.nl-1] += mw - span
	}
}

// mergedRule draws a rule between two rows of a group, with the group
// label's next line in the merged first column.
func (g *grid) mergedRule(label string) {
	merged := func(c int) bool { return g.grouped && c == 0 }
	line := []cellRune{{'+', true}}
	for c := 0; c < g.ncol; c++ {
		if merged(c) {
			line = append(line, textRunes(" "+pad(label, g.widths[c], false)+" ")...)
		} else {
			line = append(line, repeatBorder('-', g.widths[c]+2)...)
		}
		line = append(line, cellRune{'+', true})
	}
	if merged(0) {
		line[0] = cellRune{'|', true}
	}
	g.cv = append(g.cv, line)
}

// spanRule draws a full rule; spanned leaves out the joints between the
// label columns (under and above the context).
func (g *grid) spanRule(spanned bool) {
	line := []cellRune{{'+', true}}
	for c := 0; c < g.ncol; c++ {
		line = append(line, repeatBorder('-', g.widths[c]+2)...)
		if spanned && c < g.nl-1 {
			line = append(line, cellRune{'-', true})
		} else {
			line = append(line, cellRune{'+', true})
		}
	}
	g.cv = append(g.cv, line)
}

// textLine draws one line of cells; useSpan draws spanCtx across the
// label columns instead of their cells.
func (g *grid) textLine(cells []string, spanCtx string, useSpan bool) {
	line := []cellRune{{'|', true}}
	c0 := 0
	if useSpan {
		line = append(line, textRunes(" "+pad(spanCtx, g.labelSpan(), false)+" ")...)
		line = append(line, cellRune{'|', true})
		c0 = g.nl
	}
	for c := c0; c < g.ncol; c++ {
		right := c >= g.nl
		line = append(line, textRunes(" "+pad(cells[c], g.widths[c], right)+" ")...)
		line = append(line, cellRune{'|', true})
	}
	g.cv = append(g.cv, line)
}

// drawHeader draws the header row between two rules, the context beside
// it when there is one.
func (g *grid) drawHeader() {
	g.spanRule(g.ctx != nil)
	hdr := make([]string, g.ncol)
	copy(hdr, g.t.LabelHeader)
	for c := g.nl; c < g.ncol; c++ {
		hdr[c] = g.t.Header[c-g.nl]
	}
	if g.ctx != nil {
		for i, l := range g.ctx {
			cells := make([]string, g.ncol)
			if i == 0 {
				copy(cells, hdr)
			}
			g.textLine(cells, l, true)
		}
	} else {
		g.textLine(hdr, "", false)
	}
	g.spanRule(false)
}

// drawBody draws the rows group by group and the closing rule.
func (g *grid) drawBody() {
	for gi, r := range g.groups {
		lines := g.groupLines[r.start]
		li := 0
		next := func() string {
			if li < len(lines) {
				li++
				return lines[li-1]
			}
			return ""
		}
		for i := r.start; i < r.end; i++ {
			cells := slices.Clone(g.body[i])
			if g.grouped {
				cells[0] = next()
			}
			g.textLine(cells, "", false)
			if g.full && i+1 < r.end {
				g.mergedRule(next())
			}
		}
		for li < len(lines) {
			cells := make([]string, g.ncol)
			cells[0] = next()
			g.textLine(cells, "", false)
		}
		if gi+1 < len(g.groups) && (g.full || g.grouped) {
			g.spanRule(false)
		}
	}
	g.spanRule(false)
}

func pad(s string, w int, right bool) string {
	n := w - width(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

type cellRune struct {
	r      rune
	border bool
}

type canvas [][]cellRune

func textRunes(s string) []cellRune {
	out := make([]cellRune, 0, len(s))
	for _, r := range s {
		out = append(out, cellRune{r, false})
	}
	return out
}

func repeatBorder(r rune, n int) []cellRune {
	out := make([]cellRune, n)
	for i := range out {
		out[i] = cellRune{r, true}
	}
	return out
}

func (cv canvas) at(y, x int) (rune, bool) {
	if y < 0 || y >= len(cv) || x < 0 || x >= len(cv[y]) || !cv[y][x].border {
		return 0, false
	}
	return cv[y][x].r, true
}

var boxJunction = map[[4]bool]rune{ // up, down, left, right
	{true, true, true, true}: '┼', {false, true, true, true}: '┬', {true, false, true, true}: '┴',
	{true, true, false, true}: '├', {true, true, true, false}: '┤', {false, true, false, true}: '┌',
	{false, true, true, false}: '┐', {true, false, false, true}: '└', {true, false, true, false}: '┘',
	{true, true, false, false}: '│', {false, false, true, true}: '─',
}

func (cv canvas) String(style Style) string {
	var b strings.Builder
	for y, line := range cv {
		for x, c := range line {
			r := c.r
			if c.border && style == Unicode {
				switch r {
				case '-':
					r = '─'
				case '|':
					r = '│'
				case '+':
					u, uok := cv.at(y-1, x)
					d, dok := cv.at(y+1, x)
					l, lok := cv.at(y, x-1)
					rr, rok := cv.at(y, x+1)
					key := [4]bool{uok && (u == '|' || u == '+'), dok && (d == '|' || d == '+'), lok && (l == '-' || l == '+'), rok && (rr == '-' || rr == '+')}
					if j, ok := boxJunction[key]; ok {
						r = j
					}
				}
			}
			b.WriteRune(r)
		}
		b.WriteString("\n")
	}
	return b.String()
}
