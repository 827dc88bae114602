package perfparse

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// PerfReportHeader is the comment header of one event's section of
// `perf report --stdio`.
type PerfReportHeader struct {
	// Event is the sampled event ("cpu-clock:ppp"), or the group of a
	// grouped recording as printed ("anon group { cycles, instructions }").
	Event string `json:"event,omitempty"`
	// GroupEvents are the members of a group section ("# Samples: N of
	// events 'anon group { a, b }'"), leader first; each numeric column then
	// has one value per member (PerfReportRow.Group).
	GroupEvents []string `json:"group_events,omitempty"`
	// Samples is "# Samples: 16K": perf rounds to K/M/G, so it is
	// approximate when SamplesRaw has a suffix.
	Samples    uint64 `json:"samples"`
	SamplesRaw string `json:"samples_raw,omitempty"`
	// EventCount is "# Event count (approx.): N".
	EventCount uint64 `json:"event_count"`
	// LostSamples is "# Total Lost Samples: N" (nil when absent).
	LostSamples *uint64 `json:"lost_samples,omitempty"`
	// Columns are the column names of the "# Overhead  Command ..." line.
	Columns []string `json:"columns"`
}

// PerfReportRow is one histogram entry with its call graph (-g).
type PerfReportRow struct {
	// Line is the row's line number in the input.
	Line int `json:"line"`
	// Event is the section's event.
	Event string `json:"event,omitempty"`
	// Overhead is the self overhead as a fraction of the event's samples:
	// the "Overhead" column, or "Self" with --children.
	Overhead float64 `json:"overhead_frac"`
	// Children is the --children column (nil without --children).
	Children *float64 `json:"children_frac,omitempty"`
	// Latency is perf 6.15's wall-clock overhead (`perf record --latency`:
	// each sample weighted by 1/parallelism) as a fraction; nil without it.
	Latency *float64 `json:"latency_frac,omitempty"`
	// Samples and Period are the -n / --show-total-period columns.
	Samples *uint64 `json:"samples,omitempty"`
	Period  *uint64 `json:"period,omitempty"`
	Command string  `json:"command,omitempty"`
	// SharedObject is the DSO ("[kernel.kallsyms]", "libc.so.6",
	// "[JIT] tid 12619"); JITTID is N of "[JIT] tid N".
	SharedObject string `json:"shared_object,omitempty"`
	JITTID       int    `json:"jit_tid,omitempty"`
	// Symbol is the symbol name or address as printed, SymbolKind the
	// marker before it: "k" kernel, "." user, "g" guest kernel, "u" guest
	// user, "H" hypervisor.
	Symbol     string `json:"symbol,omitempty"`
	SymbolKind string `json:"symbol_kind,omitempty"`
	// Address is set when Symbol is a bare hex address.
	Address *uint64 `json:"address,omitempty"`
	// Group holds, in a group section, every member's value of each
	// numeric column ("Overhead", "Period", ...; percentages as fractions)
	// in Header.GroupEvents order; the single-value fields above hold the
	// leader's.
	Group map[string][]float64 `json:"group,omitempty"`
	// Extra holds other sort columns (--sort pid, srcline, ...) by name.
	Extra map[string]string `json:"extra,omitempty"`
	// CallGraph are the -g lines under the row, in order.
	CallGraph []PerfCallLine `json:"call_graph,omitempty"`
}

// PerfCallLine is one line of a -g call graph.
type PerfCallLine struct {
	// Column is where Symbol starts in the printed line (its depth in the
	// graph; meaningless once whitespace was collapsed).
	Column int `json:"column"`
	// Branch is true on a "--7.06%--sym" branch line (and on "-g folded"
	// lines); Frac is its percentage as a fraction.
	Branch bool    `json:"branch,omitempty"`
	Frac   float64 `json:"frac,omitempty"`
	// Root is true for the "---sym" line that starts a graph.
	Root   bool   `json:"root,omitempty"`
	Symbol string `json:"symbol"`
}

// PerfReport is a whole report: its sections in order.
type PerfReport struct {
	Sections []PerfReportSection `json:"sections"`
}

// PerfReportSection is one event's header and rows.
type PerfReportSection struct {
	Header PerfReportHeader `json:"header"`
	Rows   []PerfReportRow  `json:"rows"`
}

// ParsePerfReport reads a whole `perf report --stdio` into memory. Use
// NewPerfReportReader to stream large reports.
func ParsePerfReport(r io.Reader) (*PerfReport, error) {
	rr := NewPerfReportReader(r)
	out := &PerfReport{Sections: []PerfReportSection{}}
	gen := -1
	for rr.Next() {
		if gen != rr.gen {
			gen = rr.gen
			out.Sections = append(out.Sections, PerfReportSection{Header: rr.hdr, Rows: []PerfReportRow{}})
		}
		row := *rr.Row()
		row.CallGraph = append([]PerfCallLine(nil), row.CallGraph...)
		if len(row.CallGraph) == 0 {
			row.CallGraph = nil
		}
		s := &out.Sections[len(out.Sections)-1]
		s.Rows = append(s.Rows, row)
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	if len(out.Sections) == 0 {
		if rr.sawHeader {
			// A report with a header and no samples.
			out.Sections = append(out.Sections, PerfReportSection{Header: rr.hdr, Rows: []PerfReportRow{}})
			return out, nil
		}
		return nil, errorf(0, "perf report: no rows and no \"# Samples:\" header (is this perf report --stdio output?)")
	}
	return out, nil
}

type reportCol struct {
	name       string
	start, end int  // byte positions from the dotted line; end -1 = to the end
	kind       byte // 'p' percentage, 'n' number, 't' text
}

// PerfReportReader streams the rows of `perf report --stdio` in constant
// memory (beyond one row and its call graph):
//
//	rr := NewPerfReportReader(r)
//	for rr.Next() {
//		row := rr.Row() // valid until the next call to Next
//		...
//	}
//	if err := rr.Err(); err != nil { ... }
type PerfReportReader struct {
	lr        *lineReader
	hdr       PerfReportHeader
	gen       int // incremented when a new section header starts
	cols      []reportCol
	positions bool // cols have byte positions (from the dotted line)
	row       PerfReportRow
	next      PerfReportRow // a row read ahead while finishing row
	hasNext   bool
	pending   []byte
	hasPend   bool
	pendLine  int
	err       error
	done      bool
	sawHeader bool
	intern    map[string]string
	hdrNames  string // last "# Overhead ..." line, for the dotted line
	indent    int    // blanks before the '#' of the line being read
}

// NewPerfReportReader returns a reader of r.
func NewPerfReportReader(r io.Reader) *PerfReportReader {
	rr := &PerfReportReader{lr: newLineReader(r), intern: map[string]string{}}
	rr.setCols(defaultReportCols())
	return rr
}

func defaultReportCols() []reportCol {
	return []reportCol{{name: "Overhead", kind: 'p'}, {name: "Command", kind: 't'}, {name: "Shared Object", kind: 't'}, {name: "Symbol", kind: 't'}}
}

func (rr *PerfReportReader) setCols(c []reportCol) {
	rr.cols = c
	rr.hdr.Columns = make([]string, len(c))
	for i, x := range c {
		rr.hdr.Columns[i] = x.name
	}
}

// Header returns the header of the section the current row belongs to.
func (rr *PerfReportReader) Header() *PerfReportHeader { return &rr.hdr }

// Section is the number of the "# Samples: ... of event" section the
// current row belongs to, counting from 1 (0 when the report has no such
// header). It changes when a report holds several events.
func (rr *PerfReportReader) Section() int { return rr.gen }

// Row returns the current row; it is overwritten by the next call to Next.
func (rr *PerfReportReader) Row() *PerfReportRow { return &rr.row }

// Err returns the first error (a *SyntaxError for malformed input).
func (rr *PerfReportReader) Err() error { return rr.err }

func (rr *PerfReportReader) line() ([]byte, int, bool) {
	if rr.hasPend {
		rr.hasPend = false
		return rr.pending, rr.pendLine, true
	}
	b, ok := rr.lr.next()
	if !ok {
		if rr.lr.err != nil {
			rr.err = rr.lr.err
		}
		return nil, 0, false
	}
	return b, rr.lr.line, true
}

func (rr *PerfReportReader) pushBack(b []byte, ln int) {
	rr.pending = append(rr.pending[:0], b...)
	rr.hasPend, rr.pendLine = true, ln
}

// Next advances to the next row, reading its call graph; it returns false
// at the end of the input or on an error.
func (rr *PerfReportReader) Next() bool {
	if rr.done || rr.err != nil {
		return false
	}
	have := false
	if rr.hasNext {
		rr.row, rr.next = rr.next, rr.row
		rr.hasNext, have = false, true
	}
	for {
		b, ln, ok := rr.line()
		if !ok {
			rr.done = true
			return have && rr.err == nil
		}
		t := bytes.TrimLeft(b, " \t")
		if len(t) == 0 {
			continue
		}
		if (t[0] == '+' || t[0] == '-') && len(t) > 1 && t[1] == ' ' || b[len(b)-1] >= 0x80 {
			b = unmarkTUI(b)
			if t = bytes.TrimLeft(b, " \t"); len(t) == 0 {
				continue
			}
		}
		if !have && bytes.HasPrefix(t, []byte("Samples: ")) && bytes.Contains(t, []byte(", Event count (approx.): ")) {
			// The interactive report's title line, as copied from
			// its screen: "Samples: 2K of event 'cpu-clock:pppH',
			// Event count (approx.): 740750000".
			i := bytes.LastIndex(t, []byte(", Event count"))
			for _, c := range [][]byte{t[:i], t[i+2:]} {
				if rr.err = rr.comment(append([]byte("# "), c...), ln); rr.err != nil {
					return false
				}
			}
			continue
		}
		if cutMark(t) {
			// A mail's "..." where a header was cut, or a "====" rule
			// around the paste: not part of the report.
			continue
		}
		if t[0] == '#' {
			if have {
				rr.pushBack(b, ln)
				return true
			}
			rr.indent = len(b) - len(t)
			if err := rr.comment(t, ln); err != nil {
				rr.err = err
				return false
			}
			continue
		}
		if have {
			if rr.parseRow(b, ln, &rr.next) {
				rr.hasNext = true
				return true
			}
		} else if rr.parseRow(b, ln, &rr.row) {
			have = true
			continue
		}
		if rr.err != nil {
			return false
		}
		if !have && isReportColumnsLine(string(bytes.TrimSpace(t))) {
			// The column names pasted without their "#" (perf's own
			// documentation prints them so).
			if rr.err = rr.comment(append([]byte("# "), t...), ln); rr.err != nil {
				return false
			}
			continue
		}
		if !have {
			rr.err = errorf(ln, "perf report: expected a row like \"9.75%%  cmd  dso  [k] sym\", got %q", clip(string(b)))
			return false
		}
		rr.callLine(b)
	}
}

// unmarkTUI blanks what the interactive report (perf report without
// --stdio) draws around a row copied from its screen: the fold mark of a
// row with a call graph ("+   2.59%  moses ..." or "-   8.04% ...", always
// followed by blanks and the overhead) and the scroll bar's glyphs at the
// end ("... insert▒", "◆"). The mark becomes a blank so columns keep their
// places.
func unmarkTUI(b []byte) []byte {
	if t := b; len(t) > 0 && t[len(t)-1] >= 0x80 {
		for _, g := range []string{"▒", "◆", "▮"} {
			if bytes.HasSuffix(t, []byte(g)) {
				b = t[:len(t)-len(g)]
				break
			}
		}
	}
	t := bytes.TrimLeft(b, " ")
	if len(t) > 2 && (t[0] == '+' || t[0] == '-') && t[1] == ' ' {
		if d := bytes.TrimLeft(t[1:], " "); len(d) > 0 && d[0] >= '0' && d[0] <= '9' {
			i := len(b) - len(t)
			b = append(b[:i:i], append([]byte{' '}, t[1:]...)...)
		}
	}
	return b
}

// cutMark reports whether a line (without leading blanks) is what a mail
// puts around or into a pasted report: an ellipsis where lines were cut
// ("...", "[...]", "…", "[snip]") or a rule of at least three '=' or four
// '-' (a call graph's "---sym" has a symbol after its dashes).
func cutMark(t []byte) bool {
	s := strings.TrimSpace(string(t))
	switch s {
	case "[...]", "…", "[…]", "[snip]", "<snip>", "snip":
		return true
	}
	if len(s) < 3 {
		return false
	}
	c, n := s[0], 3
	switch c {
	case '-':
		n = 4
	case '=', '.':
	default:
		return false
	}
	return len(s) >= n && strings.Count(s, string(c)) == len(s)
}

// comment handles a "#" header line.
func (rr *PerfReportReader) comment(t []byte, ln int) error {
	s := strings.TrimSpace(string(t[1:]))
	switch {
	case strings.HasPrefix(s, "Total Lost Samples:"):
		n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(s, "Total Lost Samples:")), 10, 64)
		if err != nil {
			return errorf(ln, "perf report: lost samples in %q is not a count", clip(s))
		}
		rr.hdr.LostSamples = &n
	case strings.HasPrefix(s, "Samples:"):
		// "Samples: 16K of event 'cpu-clock:ppp'", "Samples: 219K of
		// events 'anon group { a, b }'"
		rest := strings.TrimSpace(strings.TrimPrefix(s, "Samples:"))
		num, ev, ok := strings.Cut(rest, " of event ")
		if !ok {
			num, ev, ok = strings.Cut(rest, " of events ")
		}
		if !ok {
			return errorf(ln, "perf report: want \"# Samples: N of event 'E'\", got %q", clip(s))
		}
		n, err := parseScaled(strings.TrimSpace(num))
		if err != nil {
			return errorf(ln, "perf report: samples %q: %v", num, err)
		}
		rr.startSection(strings.Trim(strings.TrimSpace(ev), "'"), n, strings.TrimSpace(num))
	case strings.HasPrefix(s, "Events:"):
		// perf 3.0-3.5: "# Events: 1K cycles"
		num, ev, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(s, "Events:")), " ")
		n, err := parseScaled(num)
		if !ok || err != nil {
			return errorf(ln, "perf report: want \"# Events: N EVENT\", got %q", clip(s))
		}
		rr.startSection(strings.TrimSpace(ev), n, num)
	case strings.HasPrefix(s, "Event count (approx.):"):
		n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(s, "Event count (approx.):")), 10, 64)
		if err != nil {
			return errorf(ln, "perf report: event count in %q is not a count", clip(s))
		}
		rr.hdr.EventCount = n
	case isReportColumnsLine(s):
		rr.hdrNames = string(t)
		rr.setCols(namesFromHeader(s))
		for _, c := range rr.cols {
			if strings.Contains(c.name, " / ") {
				// --hierarchy: one row per level (comm, then its
				// DSOs, then their symbols), each with its share;
				// read as rows and call graphs, the levels' shares
				// would add up to more than the whole.
				return errorf(ln, "perf report: column %q is perf report --hierarchy's, whose rows are levels of a tree; run perf report without --hierarchy", c.name)
			}
		}
		rr.positions = false
		rr.sawHeader = true
	case strings.HasPrefix(s, ".") && strings.Trim(s, ". ") == "" && rr.hdrNames != "":
		if cols := colsFromDots(string(t), rr.hdrNames); cols != nil {
			// A quoted report ("  # ....", mail or commit message
			// indentation) has its rows indented as much.
			for i := range cols {
				cols[i].start += rr.indent
				if cols[i].end >= 0 {
					cols[i].end += rr.indent
				}
			}
			rr.setCols(cols)
			rr.positions = true
		}
	}
	return nil
}

// startSection starts the section of an event's header line.
func (rr *PerfReportReader) startSection(ev string, samples uint64, raw string) {
	lost := rr.hdr.LostSamples
	rr.hdr = PerfReportHeader{Event: ev, Samples: samples, SamplesRaw: raw, LostSamples: lost, Columns: rr.hdr.Columns,
		GroupEvents: groupMembers(ev)}
	rr.gen++
	rr.sawHeader = true
}

// groupMembers splits "anon group { cycles, instructions }" into its
// events (nil for a single event).
func groupMembers(ev string) []string {
	i := strings.Index(ev, "{ ")
	if i < 0 || !strings.HasSuffix(ev, " }") || i+2 > len(ev)-2 {
		return nil
	}
	var out []string
	for _, m := range strings.Split(ev[i+2:len(ev)-2], ", ") {
		out = append(out, strings.TrimSpace(m))
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// isReportColumnsLine reports whether s (without its "#") names the
// columns: "Overhead  Command ...", "Children  Self ...", "Latency
// Overhead ..." (perf 6.15 --latency), "Samples  Command ...".
func isReportColumnsLine(s string) bool {
	first, _, _ := strings.Cut(s, " ")
	switch first {
	case "Overhead", "Children", "Latency":
		return true
	case "Samples":
		return !strings.Contains(s, ":") // not "Samples: 2K of event 'cycles'"
	}
	return false
}

// parseScaled reads "16K", "1M", "523".
func parseScaled(s string) (uint64, error) {
	mult := uint64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'K':
			mult = 1e3
		case 'M':
			mult = 1e6
		case 'G':
			mult = 1e9
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}
