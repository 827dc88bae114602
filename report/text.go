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
	nl := len(t.LabelHeader)
	if len(t.Rows) > 0 {
		nl = len(t.Rows[0].Labels)
	}
	nv := len(t.Header)
	ncol := nl + nv
	full := t.Kind == KindThread || t.Kind == KindVersus || t.Kind == KindLatency
	grouped := nl >= 2 && (t.Kind == KindThread || t.Kind == KindVersus || t.Kind == KindLatency || t.Kind == KindPerfStat || t.Kind == KindHarness)

	if style == ASCII {
		t = asciiTable(t)
	}
	// Body texts.
	body := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		row := append([]string(nil), r.Labels...)
		for _, c := range r.Cells {
			txt := c.Text
			for _, n := range c.Notes {
				txt += " " + noteMark(n, style)
			}
			row = append(row, txt)
		}
		for len(row) < ncol {
			row = append(row, "")
		}
		body[i] = row
	}
	// Groups: runs of equal first labels.
	type group struct{ start, end int } // rows [start, end)
	var groups []group
	for i := range body {
		if grouped && i > 0 && body[i][0] == body[i-1][0] {
			groups[len(groups)-1].end = i + 1
			continue
		}
		groups = append(groups, group{i, i + 1})
	}
	physLines := func(g group) int {
		if full {
			return 2*(g.end-g.start) - 1
		}
		return g.end - g.start
	}

	widths := make([]int, ncol)
	for c := 0; c < ncol; c++ {
		if c >= nl {
			widths[c] = width(t.Header[c-nl])
		} else if t.Context == "" && c < len(t.LabelHeader) {
			widths[c] = width(t.LabelHeader[c])
		}
		for i := range body {
			if grouped && c == 0 {
				continue
			}
			widths[c] = max(widths[c], width(body[i][c]))
		}
	}
	groupLines := map[int][]string{}
	if grouped {
		for _, g := range groups {
			txt := body[g.start][0]
			w := maxWidth(strings.Fields(txt))
			lines := wrap(txt, w)
			for len(lines) > physLines(g) && w < width(txt) {
				w++
				lines = wrap(txt, w)
			}
			groupLines[g.start] = lines
			widths[0] = max(widths[0], maxWidth(lines))
		}
	}

	// The context spans the label columns; widen it up to MaxWidth.
	var ctx []string
	if t.Context != "" {
		span := -3
		for c := 0; c < nl; c++ {
			span += widths[c] + 3
		}
		vals := 1
		for c := nl; c < ncol; c++ {
			vals += widths[c] + 3
		}
		avail := MaxWidth - vals - 3 - 1
		target := max(span, min(avail, width(t.Context), 34))
		ctx = wrap(t.Context, target)
		if mw := maxWidth(ctx); mw > span {
			widths[nl-1] += mw - span
		}
	}

	var cv canvas
	hrule := func(merged func(c int) bool, text func(c int) string) {
		var line []cellRune
		line = append(line, cellRune{'+', true})
		for c := 0; c < ncol; c++ {
			if merged(c) {
				line = append(line, textRunes(" "+pad(text(c), widths[c], false)+" ")...)
			} else {
				line = append(line, repeatBorder('-', widths[c]+2)...)
			}
			if c+1 < ncol && !merged(c) && merged(c+1) {
				line = append(line, cellRune{'+', true})
			} else if c+1 < ncol && merged(c) && !merged(c+1) {
				line = append(line, cellRune{'+', true})
			} else {
				line = append(line, cellRune{'+', true})
			}
		}
		if merged(0) {
			line[0] = cellRune{'|', true}
		}
		cv = append(cv, line)
	}
	spanRule := func(spanned bool) {
		var line []cellRune
		line = append(line, cellRune{'+', true})
		for c := 0; c < ncol; c++ {
			line = append(line, repeatBorder('-', widths[c]+2)...)
			if spanned && c < nl-1 {
				line = append(line, cellRune{'-', true})
			} else {
				line = append(line, cellRune{'+', true})
			}
		}
		cv = append(cv, line)
	}
	textLine := func(cells []string, spanCtx string, useSpan bool) {
		var line []cellRune
		line = append(line, cellRune{'|', true})
		c0 := 0
		if useSpan {
			span := -3
			for c := 0; c < nl; c++ {
				span += widths[c] + 3
			}
			line = append(line, textRunes(" "+pad(spanCtx, span, false)+" ")...)
			line = append(line, cellRune{'|', true})
			c0 = nl
		}
		for c := c0; c < ncol; c++ {
			right := c >= nl
			line = append(line, textRunes(" "+pad(cells[c], widths[c], right)+" ")...)
			line = append(line, cellRune{'|', true})
		}
		cv = append(cv, line)
	}

	// Header.
	spanRule(ctx != nil)
	hdr := make([]string, ncol)
	copy(hdr, t.LabelHeader)
	for c := nl; c < ncol; c++ {
		hdr[c] = t.Header[c-nl]
	}
	if ctx != nil {
		for i, l := range ctx {
			cells := make([]string, ncol)
			if i == 0 {
				copy(cells, hdr)
			}
			textLine(cells, l, true)
		}
	} else {
		textLine(hdr, "", false)
	}
	spanRule(false)

	// Body.
	for gi, g := range groups {
		lines := groupLines[g.start]
		li := 0
		next := func() string {
			if li < len(lines) {
				li++
				return lines[li-1]
			}
			return ""
		}
		for i := g.start; i < g.end; i++ {
			cells := slices.Clone(body[i])
			if grouped {
				cells[0] = next()
			}
			textLine(cells, "", false)
			if full && i+1 < g.end {
				gl := next()
				hrule(func(c int) bool { return grouped && c == 0 }, func(int) string { return gl })
			}
		}
		if full && gi+1 < len(groups) || !full && grouped && gi+1 < len(groups) {
			spanRule(false)
		}
	}
	spanRule(false)
	return cv.String(style)
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
