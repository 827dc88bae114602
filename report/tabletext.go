package report

import (
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// drawTable draws t as text. Most tables are drawn by
// olekukonko/tablewriter, as the markdown ones are. The thread's layout is
// drawn by the hand-written grid (grid.go), because tablewriter (v1.1)
// cannot draw two of its parts: a header cell spanning the label columns
// that holds the wrapped context (a horizontally merged header cell gets
// the whole context's width in every column it spans), and a group label
// that wraps down through the rules between the rows of its group ("TAP +"
// above "vhost-net"; a vertically merged cell keeps its text in its first
// row). Thread, versus and latency tables, and perf stat tables (a context
// over two label columns, grouped by target) use the grid.
func drawTable(t *Table, style Style) string {
	t = textTable(t, style)
	if l := layoutOf(t); l.full || l.grouped || t.Context != "" && l.nl >= 2 {
		return drawGrid(t, style)
	}
	return drawPlain(t, style)
}

// layout is the shape of a table as text: its label columns, whether it
// gets a full grid (rules between all rows) and whether equal first labels
// are merged.
type layout struct {
	nl            int
	full, grouped bool
}

func layoutOf(t *Table) layout {
	nl := len(t.LabelHeader)
	if len(t.Rows) > 0 {
		nl = len(t.Rows[0].Labels)
	}
	full := t.Kind == KindThread || t.Kind == KindVersus || t.Kind == KindLatency
	grouped := nl >= 2 && (full || t.Kind == KindPerfStat || t.Kind == KindHarness)
	return layout{nl: nl, full: full, grouped: grouped}
}

// drawPlain draws a table with one header rule: its label columns on the
// left, values on the right; a context over its one label column wraps in
// the header cell.
func drawPlain(t *Table, style Style) string {
	l := layoutOf(t)
	ncol := l.nl + len(t.Header)
	hdr := make([]string, ncol)
	copy(hdr, t.LabelHeader)
	copy(hdr[l.nl:], t.Header)
	body := bodyTexts(t, l.nl, ncol, style)
	if t.Context != "" {
		hdr[0] = strings.Join(contextLines(t.Context, body, hdr, l.nl), "\n")
	}
	align := make([]tw.Align, ncol)
	for c := range align {
		align[c] = tw.AlignRight
		if c < l.nl {
			align[c] = tw.AlignLeft
		}
	}
	sym := tw.NewSymbols(tw.StyleASCII)
	if style == Unicode {
		sym = tw.NewSymbols(tw.StyleLight)
	}
	var b strings.Builder
	tb := tablewriter.NewTable(&b,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: sym})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}))
	tb.Header(anySlice(hdr)...)
	for _, row := range body {
		if err := tb.Append(row); err != nil {
			return err.Error() + "\n"
		}
	}
	if err := tb.Render(); err != nil {
		return err.Error() + "\n"
	}
	return b.String()
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// bodyTexts returns the texts of t's body cells, ncol per row, the marks
// of their notes appended.
func bodyTexts(t *Table, nl, ncol int, style Style) [][]string {
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
	return body
}

// contextLines wraps the context of a table with one label column as the
// grid wraps it: at least as wide as the label column, at most 34 cells or
// what MaxWidth leaves beside the value columns.
func contextLines(ctx string, body [][]string, hdr []string, nl int) []string {
	widths := make([]int, len(hdr))
	for c := range hdr {
		if c >= nl {
			widths[c] = width(hdr[c])
		}
		for _, row := range body {
			widths[c] = max(widths[c], width(row[c]))
		}
	}
	vals := 1
	for c := nl; c < len(hdr); c++ {
		vals += widths[c] + 3
	}
	avail := MaxWidth - vals - 3 - 1
	return wrap(ctx, max(widths[0], min(avail, width(ctx), 34)))
}

// width is the display width of s in terminal cells (a wide character
// takes two, a combining mark none).
func width(s string) int { return twwidth.Width(s) }
