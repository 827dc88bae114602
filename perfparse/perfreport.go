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
	// Event is the sampled event ("cpu-clock:ppp").
	Event string `json:"event,omitempty"`
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
		if !have {
			rr.err = errorf(ln, "perf report: expected a row like \"9.75%%  cmd  dso  [k] sym\", got %q", clip(string(b)))
			return false
		}
		rr.callLine(b)
	}
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
		// "Samples: 16K of event 'cpu-clock:ppp'"
		rest := strings.TrimSpace(strings.TrimPrefix(s, "Samples:"))
		num, ev, ok := strings.Cut(rest, " of event ")
		if !ok {
			return errorf(ln, "perf report: want \"# Samples: N of event 'E'\", got %q", clip(s))
		}
		n, err := parseScaled(strings.TrimSpace(num))
		if err != nil {
			return errorf(ln, "perf report: samples %q: %v", num, err)
		}
		lost := rr.hdr.LostSamples
		rr.hdr = PerfReportHeader{Event: strings.Trim(strings.TrimSpace(ev), "'"), Samples: n, SamplesRaw: strings.TrimSpace(num), LostSamples: lost, Columns: rr.hdr.Columns}
		rr.gen++
		rr.sawHeader = true
	case strings.HasPrefix(s, "Event count (approx.):"):
		n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(s, "Event count (approx.):")), 10, 64)
		if err != nil {
			return errorf(ln, "perf report: event count in %q is not a count", clip(s))
		}
		rr.hdr.EventCount = n
	case strings.HasPrefix(s, "Overhead") || strings.HasPrefix(s, "Children") || strings.HasPrefix(s, "Samples") && !strings.Contains(s, ":"):
		rr.hdrNames = string(t)
		rr.setCols(namesFromHeader(s))
		rr.positions = false
		rr.sawHeader = true
	case strings.HasPrefix(s, ".") && strings.Trim(s, ". ") == "" && rr.hdrNames != "":
		if cols := colsFromDots(string(t), rr.hdrNames); cols != nil {
			rr.setCols(cols)
			rr.positions = true
		}
	}
	return nil
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

var multiWordCols = []string{"IPC [IPC Coverage]", "Shared Object", "Data Symbol", "Data Object", "Local Weight", "Memory access", "TLB access", "Snoop", "Branch Mispredicted", "Source Shared Object", "Target Shared Object", "Source Symbol", "Target Symbol", "Basic Block Cycles", "Local INSTR Latency", "Local Pipeline Stage Cycle"}

func colKind(name string) byte {
	switch name {
	case "Overhead", "Children", "Self", "Overhead sys", "Overhead us", "Overhead guest sys", "Overhead guest us":
		return 'p'
	case "Samples", "Period", "Weight", "Pid":
		return 'n'
	}
	return 't'
}

// namesFromHeader splits "Overhead  Command  Shared Object  Symbol" (or the
// same with single spaces) into column names.
func namesFromHeader(s string) []reportCol {
	var names []string
	if parts := splitWide(s); len(parts) > 1 {
		names = parts
	} else {
		f := strings.Fields(s)
		for i := 0; i < len(f); i++ {
			merged := false
			for _, m := range multiWordCols {
				w := strings.Fields(m)
				if i+len(w) <= len(f) && strings.Join(f[i:i+len(w)], " ") == m && len(w) > 1 {
					names = append(names, m)
					i += len(w) - 1
					merged = true
					break
				}
			}
			if !merged {
				names = append(names, f[i])
			}
		}
	}
	cols := make([]reportCol, len(names))
	for i, n := range names {
		n = collapse(n)
		cols[i] = reportCol{name: n, kind: colKind(n), end: -1}
	}
	return cols
}

// splitWide splits on runs of two or more spaces.
func splitWide(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "  ") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// colsFromDots takes column positions from "# ........  ......." and names
// from the header line above it.
func colsFromDots(dots, names string) []reportCol {
	var cols []reportCol
	for i := 0; i < len(dots); {
		if dots[i] != '.' {
			i++
			continue
		}
		j := i
		for j < len(dots) && dots[j] == '.' {
			j++
		}
		name := ""
		if i < len(names) {
			name = collapse(names[i:min(j, len(names))])
		}
		cols = append(cols, reportCol{name: name, start: i, end: j, kind: colKind(name)})
		i = j
	}
	if len(cols) == 0 {
		return nil
	}
	// Percent columns are right-aligned: their text may start left of the
	// dots (never for perf's own output, but be lenient); the last column
	// runs to the end of the line.
	cols[len(cols)-1].end = -1
	for _, c := range cols {
		if c.name == "" {
			return nil
		}
	}
	return cols
}

func (rr *PerfReportReader) str(b []byte) string {
	if s, ok := rr.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(rr.intern) < 1<<14 {
		rr.intern[s] = s
	}
	return s
}

// parseRow parses a histogram row into row. It returns false (leaving row
// alone) when the line is not a row.
func (rr *PerfReportReader) parseRow(b []byte, ln int, row *PerfReportRow) bool {
	if k := rr.cols[0].kind; k == 'p' || k == 'n' {
		// Rows start with a number; call-graph lines with '|' or '-'.
		i := 0
		for i < len(b) && b[i] == ' ' {
			i++
		}
		if i == len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
	}
	var fields [][]byte
	var buf [12][]byte
	fields = buf[:0]
	if rr.positions && rowFitsCols(b, rr.cols) {
		for i, c := range rr.cols {
			end := c.end
			if end < 0 || end > len(b) || i == len(rr.cols)-1 {
				end = len(b)
			}
			start := c.start
			if i == 0 {
				start = 0
			}
			if start > len(b) {
				fields = append(fields, nil)
				continue
			}
			fields = append(fields, bytes.TrimSpace(b[start:end]))
		}
	} else {
		var ok bool
		if fields, ok = splitCollapsedRow(b, rr.cols, fields); !ok {
			return false
		}
	}
	// Validate numeric columns before touching rr.row.
	for i, c := range rr.cols {
		switch c.kind {
		case 'p':
			if _, ok := parsePct(fields[i]); !ok {
				return false
			}
		case 'n':
			if _, err := strconv.ParseUint(string(fields[i]), 10, 64); err != nil {
				return false
			}
		}
		if c.name == "Symbol" && len(fields[i]) > 0 && !validSymField(fields[i]) {
			return false
		}
	}
	cg := row.CallGraph[:0]
	*row = PerfReportRow{Line: ln, Event: rr.hdr.Event, CallGraph: cg}
	for i, c := range rr.cols {
		f := fields[i]
		switch c.name {
		case "Overhead", "Self":
			row.Overhead, _ = parsePct(f)
		case "Children":
			v, _ := parsePct(f)
			row.Children = &v
		case "Samples", "Period":
			n, _ := strconv.ParseUint(string(f), 10, 64)
			if c.name == "Samples" {
				row.Samples = &n
			} else {
				row.Period = &n
			}
		case "Command":
			row.Command = rr.str(f)
		case "Shared Object":
			row.SharedObject = rr.str(f)
			if rest, ok := bytes.CutPrefix(f, []byte("[JIT] tid ")); ok {
				row.JITTID, _ = strconv.Atoi(string(rest))
			}
		case "Symbol":
			if len(f) >= 4 && f[0] == '[' && f[2] == ']' {
				row.SymbolKind = rr.str(f[1:2])
				f = bytes.TrimLeft(f[3:], " ")
			}
			row.Symbol = rr.str(f)
			if a, ok := hexAddr(f); ok {
				row.Address = &a
			}
		default:
			if row.Extra == nil {
				row.Extra = map[string]string{}
			}
			row.Extra[c.name] = rr.str(collapseBytes(f))
		}
	}
	return true
}

func validSymField(f []byte) bool {
	return len(f) >= 4 && f[0] == '[' && f[2] == ']' && f[3] == ' '
}

// rowFitsCols checks that a line is laid out in the dotted columns: each
// column after the first starts after two blanks.
func rowFitsCols(b []byte, cols []reportCol) bool {
	last := cols[len(cols)-1]
	if len(b) < last.start {
		return false
	}
	for _, c := range cols[1:] {
		if c.start < 2 || c.start >= len(b) || b[c.start-1] != ' ' || b[c.start-2] != ' ' {
			return false
		}
		end := c.end
		if end < c.start || end > len(b) {
			end = len(b)
		}
		// A left-aligned text column starts at its first dot unless empty.
		if b[c.start] == ' ' && c.kind == 't' && c.name != "Symbol" && !allBlank(b[c.start:end]) {
			return false
		}
	}
	return true
}

func allBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// splitCollapsedRow splits a row whose spacing was lost: leading numeric
// columns are one token each, the symbol starts at its "[x] " marker, the
// shared object is "[JIT] tid N" or one token, and the command is the rest.
func splitCollapsedRow(b []byte, cols []reportCol, out [][]byte) ([][]byte, bool) {
	rest := bytes.TrimSpace(b)
	i := 0
	for ; i < len(cols) && cols[i].kind != 't'; i++ {
		sp := bytes.IndexByte(rest, ' ')
		var tok []byte
		if sp < 0 {
			tok, rest = rest, nil
		} else {
			tok, rest = rest[:sp], bytes.TrimLeft(rest[sp:], " ")
		}
		out = append(out, tok)
	}
	text := cols[i:]
	if len(text) == 0 {
		return out, len(bytes.TrimSpace(rest)) == 0
	}
	var sym []byte
	var after [][]byte // columns after the symbol, e.g. "IPC [IPC Coverage]"
	si := -1
	for j, c := range text {
		if c.name == "Symbol" {
			si = j
		}
	}
	hasSym := si >= 0
	if hasSym {
		k := symMarker(rest)
		if k < 0 {
			return nil, false
		}
		sym, rest = rest[k:], bytes.TrimRight(rest[:k], " ")
		after = make([][]byte, len(text)-si-1)
		for j := len(text) - 1; j > si; j-- {
			ntok := 1
			if strings.HasPrefix(text[j].name, "IPC") {
				ntok = 2 // "1.23  45.6%" or "-  -"
			}
			cut := len(sym)
			for n := 0; n < ntok; n++ {
				sp := bytes.LastIndexByte(sym[:cut], ' ')
				if sp < 4 { // keep at least "[x] "
					return nil, false
				}
				cut = sp
				for cut > 0 && sym[cut-1] == ' ' {
					cut--
				}
			}
			after[j-si-1] = bytes.TrimSpace(sym[cut:])
			sym = sym[:cut]
		}
		text = text[:si]
	}
	// Assign text columns from the right: one token each, except the
	// first (the command may contain blanks) and "[JIT] tid N" objects.
	if len(text) == 0 {
		if len(rest) > 0 {
			return nil, false
		}
		return append(append(out, sym), after...), true
	}
	vals := make([][]byte, len(text))
	for j := len(text) - 1; j >= 1; j-- {
		if text[j].name == "Shared Object" {
			if k := bytes.LastIndex(rest, []byte("[JIT] tid ")); k >= 0 && (k == 0 || rest[k-1] == ' ') {
				vals[j], rest = rest[k:], bytes.TrimRight(rest[:k], " ")
				continue
			}
		}
		sp := bytes.LastIndexByte(rest, ' ')
		if sp < 0 {
			// Fewer words than columns: this one takes what is left and
			// the ones before it stay empty (e.g. an unknown shared object).
			vals[j], rest = rest, nil
			continue
		}
		vals[j], rest = rest[sp+1:], bytes.TrimRight(rest[:sp], " ")
	}
	vals[0] = rest
	out = append(out, vals...)
	if hasSym {
		out = append(append(out, sym), after...)
	}
	return out, true
}

// symMarker finds "[k] ", "[.] " etc. that starts the symbol column.
func symMarker(b []byte) int {
	for i := 0; i+3 < len(b); i++ {
		if b[i] == '[' && b[i+2] == ']' && b[i+3] == ' ' && (i == 0 || b[i-1] == ' ') {
			switch b[i+1] {
			case 'k', '.', 'g', 'u', 'H', 's', 'v':
				return i
			}
		}
	}
	return -1
}

// parsePct reads "9.75%" (or "9,75%") as a fraction.
func parsePct(b []byte) (float64, bool) {
	if len(b) < 2 || b[len(b)-1] != '%' {
		return 0, false
	}
	b = b[:len(b)-1]
	// fast path: digits '.' digits
	var ip, fp uint64
	var fd int
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		ip = ip*10 + uint64(b[i]-'0')
		if ip > 1e12 {
			return 0, false
		}
	}
	if i == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == ',') {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && fd < 9; i++ {
			fp = fp*10 + uint64(b[i]-'0')
			fd++
		}
	}
	if i != len(b) {
		return 0, false
	}
	return float64(ip*uint64(pow10[fd])+fp) / (100 * pow10[fd]), true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// hexAddr reads "0x00007f1500b15350" or "0000000000000000" (16 hex digits).
func hexAddr(b []byte) (uint64, bool) {
	s := b
	if len(s) > 2 && s[0] == '0' && s[1] == 'x' {
		s = s[2:]
	} else if len(s) != 16 {
		return 0, false
	}
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// callLine appends a -g line ("|--7.06%--sym", "---sym", "sym", "|").
func (rr *PerfReportReader) callLine(b []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '|' || b[i] == '\t') {
		i++
	}
	if i == len(b) {
		return // "|" spacer
	}
	cl := PerfCallLine{}
	rest := b[i:]
	switch {
	case bytes.HasPrefix(rest, []byte("---")):
		cl.Root = true
		rest = rest[3:]
		i += 3
	case bytes.HasPrefix(rest, []byte("--")):
		// "--7.06%--sym"
		end := bytes.Index(rest[2:], []byte("--"))
		if end > 0 {
			if v, ok := parsePct(rest[2 : 2+end]); ok {
				cl.Frac, cl.Branch = v, true
				i += 4 + end
				rest = rest[4+end:]
			}
		}
	default:
		// "-g folded": "100.00% a;b;c"
		if sp := bytes.IndexByte(rest, ' '); sp > 0 {
			if v, ok := parsePct(rest[:sp]); ok {
				cl.Frac, cl.Branch = v, true
				i += sp + 1
				rest = rest[sp+1:]
			}
		}
	}
	cl.Column = i
	cl.Symbol = rr.str(bytes.TrimSpace(rest))
	rr.row.CallGraph = append(rr.row.CallGraph, cl)
}

// collapseBytes replaces runs of blanks with one space (no copy when there
// are none).
func collapseBytes(b []byte) []byte {
	if !bytes.Contains(b, []byte("  ")) {
		return b
	}
	return []byte(collapse(string(b)))
}
