package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Style selects the border characters of text tables.
type Style int

// Styles.
const (
	// ASCII draws +---+ borders and writes only ASCII, for mail.
	ASCII Style = iota
	// Unicode draws box-drawing borders.
	Unicode
)

// ParseStyle parses "ascii" or "unicode".
func ParseStyle(s string) (Style, error) {
	switch s {
	case "", "ascii":
		return ASCII, nil
	case "unicode":
		return Unicode, nil
	}
	return 0, fault.Input("unknown style %q; use ascii or unicode", s)
}

// MaxWidth is the line width text tables try to stay within (mail).
const MaxWidth = 72

// WriteText renders r as text tables for a terminal or a mail.
func WriteText(w io.Writer, r *Report, style Style) error {
	var b strings.Builder
	fmt.Fprintf(&b, "vnetbench report: %s\n", strings.Join(r.Columns, " vs "))
	for _, l := range kernelLines(r) {
		writeWrapped(&b, "  ", l)
	}
	if len(r.Emulated) > 0 {
		fmt.Fprintf(&b, "EMULATED (QEMU TCG, no KVM): %s; these numbers measure the emulator, not the kernel\n", strings.Join(r.Emulated, ", "))
	}
	notes := onceNotes{}
	for _, t := range r.Tables {
		if !r.shows(t) {
			continue
		}
		b.WriteString("\n")
		if t.Context == "" || t.Kind == KindCompare {
			writeWrapped(&b, "", t.Title)
		}
		b.WriteString(drawTable(t, style))
		refs := referencedNotes(t)
		for i, n := range t.Notes {
			switch {
			case refs[i]:
				writeWrapped(&b, noteMark(i, style)+" ", n)
			case notes.seen(n):
			default:
				writeWrapped(&b, "  ", n)
			}
		}
	}
	if env := envLines(r); len(env) > 0 {
		b.WriteString("\nenvironment:\n")
		for _, l := range env {
			writeWrapped(&b, "  ", l)
		}
	}
	for _, wn := range r.Warnings {
		writeWrapped(&b, "warning: ", wn)
	}
	out := termSafe(b.String())
	if style == ASCII {
		out = asciiOnly(out)
	}
	_, err := io.WriteString(w, out)
	return err
}

// termSafe shows the control characters of s (but line breaks) as \xNN or
// \u{NNNN} escapes: a run's labels and names come from files the report
// did not write, and a terminal would act on an escape sequence in them.
// Unicode bidirectional controls, which reorder what a terminal shows,
// are escaped too.
func termSafe(s string) string {
	bad := func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
	}
	if !strings.ContainsFunc(s, bad) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !bad(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u{%04x}`, r)
		}
	}
	return b.String()
}

// shows reports whether text and markdown draw t.
func (r *Report) shows(t *Table) bool { return r.Details || !t.Detail }

// referencedNotes returns the indexes of t's notes that some cell refers
// to; renderers number only those.
func referencedNotes(t *Table) map[int]bool {
	refs := map[int]bool{}
	for _, row := range t.Rows {
		for _, c := range row.Cells {
			for _, n := range c.Notes {
				refs[n] = true
			}
		}
	}
	return refs
}

// onceNotes remembers the report-wide notes (the emulation legend) that a
// text or markdown report prints only once.
type onceNotes map[string]bool

// seen reports whether n is a report-wide note already printed, and
// remembers it.
func (o onceNotes) seen(n string) bool {
	if n != emulatedNote && n != nestedNote && n != mixedNestingNote {
		return false
	}
	if o[n] {
		return true
	}
	o[n] = true
	return false
}

// writeWrapped writes text after prefix, wrapped to MaxWidth, with
// continuation lines indented by the prefix's width plus two.
func writeWrapped(b *strings.Builder, prefix, text string) {
	indent := strings.Repeat(" ", width(prefix)+2)
	for i, l := range wrap(text, MaxWidth-width(prefix)-2) {
		if i == 0 {
			b.WriteString(prefix + l + "\n")
		} else {
			b.WriteString(indent + l + "\n")
		}
	}
}

// kernelLines names the columns' kernels that were built from source, one
// line each ("patched: 6.1.192 built from ... + 1 patch (...)"), so the
// header says what stock and patched are.
func kernelLines(r *Report) []string {
	var out []string
	for _, c := range r.Columns {
		if e := r.Env[c]; e != nil && e.Build != nil {
			out = append(out, c+": "+e.Build.Describe())
		}
	}
	return out
}

// envLines describes each column's environment in one line.
func envLines(r *Report) []string {
	var out []string
	for _, c := range r.Columns {
		e := r.Env[c]
		if e == nil || (e.CPUModel == "" && e.KernelRelease == "") {
			continue
		}
		var p []string
		if e.KernelRelease != "" {
			p = append(p, "kernel "+e.KernelRelease)
		}
		if e.CPUModel != "" {
			cpu := shortCPU(e.CPUModel)
			if e.CPUs > 0 {
				cpu += fmt.Sprintf(" x%d", e.CPUs)
			}
			p = append(p, cpu)
		}
		if e.Accel != "" {
			p = append(p, e.Accel)
		}
		if e.Governor != "" {
			p = append(p, "governor "+e.Governor)
		}
		if e.SMT != "" {
			p = append(p, "SMT "+e.SMT)
		}
		if e.QEMUVersion != "" {
			p = append(p, strings.TrimPrefix(e.QEMUVersion, "QEMU emulator version "))
		}
		out = append(out, c+": "+strings.Join(p, ", "))
	}
	return out
}

var superscripts = []rune("¹²³⁴⁵⁶⁷⁸⁹")

func noteMark(i int, style Style) string {
	if style == Unicode && i < len(superscripts) {
		return string(superscripts[i])
	}
	return fmt.Sprintf("(%d)", i+1)
}

var asciiReplacer = strings.NewReplacer("±", "+-", "∞", "inf", "α", "alpha", "Δ", "delta", "µ", "u", "…", "...")

func asciiOnly(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return asciiReplacer.Replace(s)
		}
	}
	return s
}

// asciiTable returns a copy of t whose texts are ASCII only.
func asciiTable(t *Table) *Table {
	c := *t
	c.Context = asciiOnly(t.Context)
	c.Title = asciiOnly(t.Title)
	c.Header = make([]string, len(t.Header))
	for i, h := range t.Header {
		c.Header[i] = asciiOnly(h)
	}
	c.Rows = make([]Row, len(t.Rows))
	for i, r := range t.Rows {
		nr := Row{Labels: make([]string, len(r.Labels)), Cells: make([]Cell, len(r.Cells))}
		for j, l := range r.Labels {
			nr.Labels[j] = asciiOnly(l)
		}
		for j, cell := range r.Cells {
			cell.Text = asciiOnly(cell.Text)
			nr.Cells[j] = cell
		}
		c.Rows[i] = nr
	}
	return &c
}

func width(s string) int { return utf8.RuneCountInString(s) }

// wrap splits s into lines of at most w runes at spaces (a longer word
// gets a line of its own).
func wrap(s string, w int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case width(cur)+1+width(word) <= w:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = word
		}
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

func maxWidth(lines []string) int {
	m := 0
	for _, l := range lines {
		m = max(m, width(l))
	}
	return m
}

// drawTable draws t as a grid. Thread tables get a full grid with the
// backend column merged across its rows and the context in the header cell
// above the label columns, like the tables on netdev; the others get only a
// header rule.
func drawTable(t *Table, style Style) string {
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
	if style == ASCII {
		t = asciiTable(t)
	}
	g.t = t
	g.body = g.bodyTexts()
	g.groups = g.groupRows()
	return g
}

// bodyTexts returns the texts of the body cells, notes appended.
func (g *grid) bodyTexts() [][]string {
	body := make([][]string, len(g.t.Rows))
	for i, r := range g.t.Rows {
		row := append([]string(nil), r.Labels...)
		for _, c := range r.Cells {
			txt := c.Text
			for _, n := range c.Notes {
				txt += " " + noteMark(n, g.style)
			}
			row = append(row, txt)
		}
		for len(row) < g.ncol {
			row = append(row, "")
		}
		body[i] = row
	}
	return body
}

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
// has, and widens the first column to fit.
func (g *grid) wrapGroupLabels() {
	for _, r := range g.groups {
		txt := g.body[r.start][0]
		w := maxWidth(strings.Fields(txt))
		lines := wrap(txt, w)
		for len(lines) > g.physLines(r) && w < width(txt) {
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
