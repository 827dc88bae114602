package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// WriteMarkdown renders r as GitHub-flavoured markdown tables (drawn by
// olekukonko/tablewriter). Merged cells of the text tables are repeated
// labels left blank.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "## vnetbench report: %s\n", mdEscape(strings.Join(r.Columns, " vs ")))
	if kl := kernelLines(r); len(kl) > 0 {
		b.WriteString("\n")
		for _, l := range kl {
			fmt.Fprintf(&b, "- %s\n", mdEscape(l))
		}
	}
	if len(r.Emulated) > 0 {
		fmt.Fprintf(&b, "\n> **EMULATED** (QEMU TCG, no KVM): %s. These numbers measure the emulator, not the kernel.\n", mdEscape(strings.Join(r.Emulated, ", ")))
	}
	notes := onceNotes{}
	for _, t := range r.Tables {
		if !r.shows(t) {
			continue
		}
		title := t.Title
		if t.Context != "" && t.Kind != KindCompare && t.Kind != KindSweep {
			title = t.Context
		}
		fmt.Fprintf(&b, "\n**%s**\n\n", mdEscape(title))
		hdr := slices.Clone(t.LabelHeader)
		align := make([]tw.Align, 0, len(t.LabelHeader)+len(t.Header))
		for range t.LabelHeader {
			align = append(align, tw.AlignLeft)
		}
		for _, h := range t.Header {
			hdr = append(hdr, h)
			align = append(align, tw.AlignRight)
		}
		tb := tablewriter.NewTable(&b, tablewriter.WithRenderer(renderer.NewMarkdown()),
			tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: align}),
			tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}))
		hdrAny := make([]any, len(hdr))
		for i, h := range mdRow(hdr) {
			hdrAny[i] = h
		}
		tb.Header(hdrAny...)
		prev := ""
		for _, row := range t.Rows {
			cells := slices.Clone(row.Labels)
			if len(cells) > 1 && cells[0] == prev {
				cells[0] = ""
			} else {
				prev = cells[0]
			}
			for _, c := range row.Cells {
				txt := c.Text
				for _, n := range c.Notes {
					txt += " " + noteMark(n, Unicode)
				}
				cells = append(cells, txt)
			}
			if err := tb.Append(mdRow(cells)); err != nil {
				return fmt.Errorf("markdown table: %w", err)
			}
		}
		if err := tb.Render(); err != nil {
			return fmt.Errorf("markdown table: %w", err)
		}
		refs := referencedNotes(t)
		var lines []string
		for i, n := range t.Notes {
			switch {
			case refs[i]:
				lines = append(lines, fmt.Sprintf("%s %s  \n", noteMark(i, Unicode), mdEscape(n)))
			case notes.seen(n):
			default:
				lines = append(lines, fmt.Sprintf("_%s_  \n", mdEscape(n)))
			}
		}
		if len(lines) > 0 {
			b.WriteString("\n" + strings.Join(lines, ""))
		}
	}
	for _, n := range r.rerunNotes() {
		fmt.Fprintf(&b, "\n_%s_\n", mdEscape(n))
	}
	if env := envLines(r); len(env) > 0 {
		b.WriteString("\n**environment**\n\n")
		for _, l := range env {
			fmt.Fprintf(&b, "- %s\n", mdEscape(l))
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "\n> warning: %s\n", mdEscape(wn))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// mdReplacer makes text literal in markdown: no emphasis, code, link or
// table syntax, no raw HTML (a run's labels and names come from files the
// report did not write), no line break; mdEscape then escapes the control
// characters left (oneLine), which a terminal showing the file would act on.
var mdReplacer = strings.NewReplacer("\\", `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "&", `\&`, "\r\n", " ", "\n", " ", "\r", " ")

func mdEscape(s string) string { return oneLine(mdReplacer.Replace(s)) }

// mdRow escapes a table row's cells (mdEscape).
func mdRow(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = mdEscape(c)
	}
	return out
}

// csvSafe keeps a spreadsheet from taking a CSV field for a formula: text
// that starts with =, +, -, @, a tab or a carriage return gets a leading
// apostrophe (numbers, such as -3.5, stay as they are).
func csvSafe(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s
	}
	return "'" + s
}

// WriteCSV writes one row per (cell, column, metric) summary, with the
// comparison against the base column when there is one.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	axes := map[string]bool{}
	for _, s := range r.Summaries {
		for k := range s.Axes {
			axes[k] = true
		}
	}
	axisNames := sortedKeys(axes)
	hdr := []string{"cell"}
	for _, a := range axisNames {
		hdr = append(hdr, csvSafe("axis."+a))
	}
	hdr = append(hdr, csvSafe(r.By), "metric", "unit", "better", "n", "median", "mean", "stddev", "cv", "min", "max",
		"ci_lo", "ci_hi", "ci_level", "hmean", "emulated", "base", "vs_base_pct", "p", "significant", "verdict", "description")
	if err := cw.Write(hdr); err != nil {
		return err
	}
	cmpOf := map[[3]string]*Comparison{}
	for i := range r.Comparisons {
		c := &r.Comparisons[i]
		cmpOf[[3]string{c.Cell, c.New, c.Metric}] = c
	}
	f := func(v float64) string {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, s := range r.Summaries {
		row := []string{csvSafe(s.Cell)}
		for _, a := range axisNames {
			row = append(row, csvSafe(s.Axes[a]))
		}
		st := s.Stats
		// Empty where there is no number: an interval open on a side
		// and its level (too few runs; JSON's ci_finite false) and a
		// harmonic mean not computed (Stats.HMean 0).
		lo, hi, level, hmean := "", "", "", ""
		if st.CIFinite() {
			lo, hi, level = f(st.Lo), f(st.Hi), f(st.CILevel)
		}
		if st.HMean != 0 {
			hmean = f(st.HMean)
		}
		row = append(row, csvSafe(s.Column), csvSafe(s.Metric), csvSafe(s.Unit), s.Better, strconv.Itoa(st.N), f(st.Median), f(st.Mean), f(st.Stddev), f(st.CV),
			f(st.Min), f(st.Max), lo, hi, level, hmean, strconv.FormatBool(s.Emulated))
		if c := cmpOf[[3]string{s.Cell, s.Column, s.Metric}]; c != nil {
			row = append(row, csvSafe(c.Base), f(c.Delta.Pct), f(c.Delta.P), strconv.FormatBool(c.Delta.Significant), c.Verdict)
		} else {
			row = append(row, "", "", "", "", "")
		}
		row = append(row, csvSafe(s.Description))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the whole model as indented JSON. Infinite confidence
// bounds are written as 0, with ci_finite false (safeStats).
func WriteJSON(w io.Writer, r *Report) error {
	b, err := json.MarshalIndent(jsonSafe(r), "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// jsonSafe copies r with ±Inf and NaN replaced (encoding/json rejects
// them): by marshalling through a generic tree.
func jsonSafe(r *Report) any {
	// Marshal with a float-sanitizing pass over the known float holders.
	cp := *r
	cp.Summaries = slices.Clone(r.Summaries)
	for i := range cp.Summaries {
		cp.Summaries[i].Stats = safeStats(cp.Summaries[i].Stats)
	}
	cp.Comparisons = slices.Clone(r.Comparisons)
	for i := range cp.Comparisons {
		d := cp.Comparisons[i].Delta
		d.Base, d.New = safeStats(d.Base), safeStats(d.New)
		d.Pct = safeFloat(d.Pct)
		cp.Comparisons[i].Delta = d
	}
	cp.Tables = make([]*Table, len(r.Tables))
	for i, t := range r.Tables {
		tc := *t
		tc.Rows = make([]Row, len(t.Rows))
		for j, row := range t.Rows {
			nr := Row{Labels: row.Labels, Cells: make([]Cell, len(row.Cells))}
			for k, c := range row.Cells {
				if c.Stats != nil {
					s := safeStats(*c.Stats)
					c.Stats = &s
				}
				if c.Delta != nil {
					d := *c.Delta
					d.Base, d.New, d.Pct = safeStats(d.Base), safeStats(d.New), safeFloat(d.Pct)
					c.Delta = &d
				}
				if c.Value != nil {
					c.Value = ptr(safeFloat(*c.Value))
				}
				nr.Cells[k] = c
			}
			tc.Rows[j] = nr
		}
		cp.Tables[i] = &tc
	}
	return &cp
}

// safeFloat maps ±Inf and NaN to 0 (JSON has no such numbers); Stats
// carries ci_finite so readers can tell.
func safeFloat(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

func safeStats(s Stats) Stats {
	if !s.CIFinite() {
		s.Lo, s.Hi = 0, 0
	}
	s.Mean, s.Median, s.Stddev, s.CV = safeFloat(s.Mean), safeFloat(s.Median), safeFloat(s.Stddev), safeFloat(s.CV)
	return s
}

// Formats are the output formats of Render.
var Formats = []string{"text", "mail", "markdown", "csv", "json", "benchfmt", "html", "junit", "kcidb", "lava"}

// CheckFormat returns bad input (fault.ErrInput) for an unknown format name.
func CheckFormat(f string) error {
	if slices.Contains(Formats, f) {
		return nil
	}
	return fault.Input("unknown format %q; use one of %s", f, strings.Join(Formats, ", "))
}

// extFormats are the formats an output file's extension names: report's
// own, and some no command here writes, so that -o out.yaml is refused
// instead of filled with text.
var extFormats = map[string]string{
	".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown",
	".csv": "csv", ".json": "json", ".bench": "benchfmt", ".benchfmt": "benchfmt", ".xml": "junit",
	".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".tsv": "TSV",
	".jsonl": "JSON Lines", ".ndjson": "JSON Lines",
	".pdf": "PDF", ".svg": "SVG", ".png": "PNG",
}

// FormatForFile is the format an output file name's extension names
// ("" when it names none: out, out.txt, out.log). It may be one no
// command writes (YAML).
func FormatForFile(name string) string {
	return extFormats[strings.ToLower(filepath.Ext(name))]
}

// OutputFormat is the one rule of report's and history's --format and -o
// (cmd names the command, writes its formats, text first): --format when
// given, else the format -o's extension names, else text. An extension
// that names a format the command does not write (-o out.yaml), or
// another than --format's (-o out.md --format csv), is bad input: the
// file would hold what its name does not say. KCIDB's format is JSON, so
// a .json file may hold it.
func OutputFormat(cmd, format, out string, writes []string) (string, error) {
	ext := FormatForFile(out)
	if format == "" {
		if ext == "" {
			return writes[0], nil
		}
		if !slices.Contains(writes, ext) {
			return "", fault.Input("%s: -o %s names the %s format, which %s does not write; --format chooses the format (%s), and -o's extension when it names one of them (a name ending in .txt, or none, gets %s)", cmd, out, ext, cmd, strings.Join(writes, ", "), writes[0])
		}
		return ext, nil
	}
	if !slices.Contains(writes, format) {
		return "", fault.Input("%s: unknown --format %q; use one of %s", cmd, format, strings.Join(writes, ", "))
	}
	if ext == "" || ext == format || (ext == "json" && format == "kcidb") {
		return format, nil
	}
	fix := "give -o a name that ends in the format's extension (or none)"
	if slices.Contains(writes, ext) {
		fix += ", or leave --format out to write " + ext
	}
	return "", fault.Input("%s: -o %s names the %s format and --format is %s; %s", cmd, out, ext, format, fix)
}

// Render writes r (built from set) in format. benchfmt writes the samples
// of set itself, one line per repetition, with the tables' 0 for a drop
// reason a sample did not see (withDropZeros), so its medians are the
// tables'; kcidb needs r.Origin (see Options.Origin).
func Render(w io.Writer, set *Runs, r *Report, format string, style Style) error {
	switch format {
	case "", "text":
		return WriteText(w, r, style)
	case "mail":
		return WriteMail(w, r)
	case "markdown":
		return WriteMarkdown(w, r)
	case "csv":
		return WriteCSV(w, r)
	case "json":
		return WriteJSON(w, r)
	case "benchfmt":
		return results.WriteBenchfmt(w, reportedMetrics(withDropZeros(set), r))
	case "html":
		return WriteHTML(w, r)
	case "junit":
		return WriteJUnit(w, r, failedCells(set))
	case "kcidb":
		return WriteKCIDB(w, set, r, r.Origin)
	case "lava":
		return WriteLAVA(w, r, failedCells(set))
	}
	return CheckFormat(format)
}

// reportedMetrics returns set with each sample's metrics cut to those r
// summarizes (all of them unless Options.Metrics named some), so benchfmt
// honours --metric as CSV and JSON do. The per-thread metrics derived
// from a sample's Threads are kept as values of their own (Threads
// dropped), so a thread metric not asked for is not derived again. A
// sample left with no metric is left out (an n/a sample, which never had
// any, stays). Set itself when r is nil.
func reportedMetrics(set *results.Set, r *Report) *results.Set {
	if r == nil {
		return set
	}
	keep := map[metric.Key]bool{}
	for _, s := range r.Summaries {
		keep[metric.Key(s.Metric)] = true
	}
	keys := set.MetricKeys()
	out := *set
	out.Samples = nil
	for _, s := range set.Samples {
		had := len(s.Metrics) > 0
		m := map[metric.Key]float64{}
		for _, k := range keys {
			if v, ok := s.Value(k); ok && keep[k] {
				m[k] = v
			}
		}
		if had && len(m) == 0 {
			continue
		}
		s.Metrics, s.Threads = m, nil
		out.Samples = append(out.Samples, s)
	}
	return &out
}

// failedCells lists the samples of set that failed to measure, by kernel.
func failedCells(set *results.Set) []FailedCell {
	if set == nil {
		return nil
	}
	var out []FailedCell
	for _, f := range set.Failed {
		out = append(out, FailedCell{Column: f.Kernel, Cell: f.Cell, Rep: f.Rep, Error: f.Error})
	}
	return out
}
