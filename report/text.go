package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/textsafe"
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
	fmt.Fprintf(&b, "vnetbench report: %s\n", oneLine(strings.Join(r.Columns, " vs ")))
	for _, l := range kernelLines(r) {
		writeWrapped(&b, "  ", l)
	}
	if len(r.Emulated) > 0 {
		writeWrapped(&b, "", fmt.Sprintf("%s: %s; these numbers measure the emulator, not the kernel", results.EmulatedMark, strings.Join(r.Emulated, ", ")))
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
	for _, n := range r.rerunNotes() {
		b.WriteString("\n")
		writeWrapped(&b, "", n)
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

// termSafe shows the control characters of s (but line breaks and tabs)
// as \xNN or \u{NNNN} escapes: a run's labels and names come from files the
// report did not write, and a terminal would act on an escape sequence in
// them (textsafe.Terminal).
func termSafe(s string) string { return textsafe.Terminal(s) }

// oneLine is termSafe for a text that must stay on its line: a label, a
// cell, a title, a note or a warning; line breaks and tabs are escaped too,
// so a name cannot forge a line of a table or of the report.
func oneLine(s string) string { return textsafe.OneLine(s) }

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

// onceNotes remembers the report-wide warning a text or markdown report
// prints only once: that the columns differ in nesting (four lines, the
// same for every table). The legends of what a table's numbers count and
// whether they were measured under emulation or nested are the table's
// own and repeat with it, as a table is quoted alone.
type onceNotes map[string]bool

// seen reports whether n is a report-wide note already printed, and
// remembers it.
func (o onceNotes) seen(n string) bool {
	if n != mixedNestingNote {
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
	text = oneLine(text)
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
	for _, c := range r.EnvKeys() {
		if e := r.Env[c]; e != nil && e.Build != nil {
			out = append(out, c+": "+e.Build.Describe())
		}
	}
	return out
}

// envLines describes each column's environment in one line.
func envLines(r *Report) []string {
	var out []string
	for _, c := range r.EnvKeys() {
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
		if strings.HasPrefix(e.Extra[results.ExtraGuestState], "restored ") {
			// Not booted: its guest runs on from a state an earlier
			// lab's boot saved (the numbers count the same things).
			p = append(p, "guest from a saved state")
		}
		if e.QEMUVersion != "" {
			// "QEMU 7.2.22 (Debian ...)": a bare version beside the
			// CPU model read as the model's.
			p = append(p, "QEMU "+strings.TrimPrefix(e.QEMUVersion, "QEMU emulator version "))
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

// textTable returns a copy of t whose texts are safe on one line of a
// terminal (oneLine) and, for ASCII, ASCII only.
func textTable(t *Table, style Style) *Table {
	f := oneLine
	if style == ASCII {
		f = func(s string) string { return asciiOnly(oneLine(s)) }
	}
	c := *t
	c.Context = f(t.Context)
	c.Title = f(t.Title)
	c.LabelHeader = make([]string, len(t.LabelHeader))
	for i, h := range t.LabelHeader {
		c.LabelHeader[i] = f(h)
	}
	c.Header = make([]string, len(t.Header))
	for i, h := range t.Header {
		c.Header[i] = f(h)
	}
	c.Rows = make([]Row, len(t.Rows))
	for i, r := range t.Rows {
		nr := Row{Labels: make([]string, len(r.Labels)), Cells: make([]Cell, len(r.Cells))}
		for j, l := range r.Labels {
			nr.Labels[j] = f(l)
		}
		for j, cell := range r.Cells {
			cell.Text = f(cell.Text)
			nr.Cells[j] = cell
		}
		c.Rows[i] = nr
	}
	return &c
}

// wrap splits s into lines of at most w cells at spaces; a word longer
// than w (a cell name) breaks after a "/" where it can, else gets a line
// of its own.
func wrap(s string, w int) []string {
	var lines []string
	cur := ""
	for _, p := range words(s, w) {
		switch {
		case cur == "":
			cur = p.text
		case p.glued && width(cur)+width(p.text) <= w:
			cur += p.text // the rest of a word broken after a "/"
		case !p.glued && width(cur)+1+width(p.text) <= w:
			cur += " " + p.text
		default:
			lines = append(lines, cur)
			cur = p.text
		}
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// piece is a word of wrap, or part of one: glued parts follow the part
// before them without a space.
type piece struct {
	text  string
	glued bool
}

// words splits s at spaces, and a word wider than w after each "/" in it.
func words(s string, w int) []piece {
	var out []piece
	for _, word := range strings.Fields(s) {
		if width(word) <= w || !strings.Contains(strings.TrimSuffix(word, "/"), "/") {
			out = append(out, piece{text: word})
			continue
		}
		for first := true; word != ""; first = false {
			i := strings.Index(word, "/")
			if i < 0 || i == len(word)-1 {
				out = append(out, piece{word, !first})
				break
			}
			out = append(out, piece{word[:i+1], !first})
			word = word[i+1:]
		}
	}
	return out
}

func maxWidth(lines []string) int {
	m := 0
	for _, l := range lines {
		m = max(m, width(l))
	}
	return m
}
