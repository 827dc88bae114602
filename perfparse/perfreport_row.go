package perfparse

import (
	"bytes"
	"strconv"
)

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
	if k := rr.cols[0].kind; (k == 'p' || k == 'n') && !startsWithDigit(b) {
		return false // rows start with a number; call-graph lines with '|' or '-'
	}
	var buf [12][]byte
	var fields [][]byte
	if rr.positions && rowFitsCols(b, rr.cols) {
		fields = positionalFields(b, rr.cols, buf[:0])
	} else {
		var ok bool
		if fields, ok = splitCollapsedRow(b, rr.cols, rr.members(), buf[:0]); !ok {
			return false
		}
	}
	// Validate numeric columns before touching rr.row.
	if !fieldsValid(fields, rr.cols, rr.members()) {
		return false
	}
	cg := row.CallGraph[:0]
	*row = PerfReportRow{Line: ln, Event: rr.hdr.Event, CallGraph: cg}
	for i, c := range rr.cols {
		if rr.members() > 1 && c.kind != 't' {
			row.setGroupField(c, fields[i])
			fields[i] = firstToken(fields[i])
		}
		rr.setField(row, c.name, fields[i])
	}
	return true
}

// members is the number of values in each numeric column: the group's
// member count in a group section, else 1.
func (rr *PerfReportReader) members() int { return max(len(rr.hdr.GroupEvents), 1) }

// setGroupField stores every member's value of a numeric group column.
func (row *PerfReportRow) setGroupField(c reportCol, f []byte) {
	if row.Group == nil {
		row.Group = map[string][]float64{}
	}
	for _, tok := range bytes.Fields(f) {
		var v float64
		if c.kind == 'p' {
			v, _ = parsePct(tok)
		} else {
			n, _ := strconv.ParseUint(string(tok), 10, 64)
			v = float64(n)
		}
		row.Group[c.name] = append(row.Group[c.name], v)
	}
}

func firstToken(f []byte) []byte {
	if fs := bytes.Fields(f); len(fs) > 0 {
		return fs[0]
	}
	return f
}

// startsWithDigit reports whether the first non-blank byte of b is a digit.
func startsWithDigit(b []byte) bool {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i < len(b) && b[i] >= '0' && b[i] <= '9'
}

// positionalFields cuts a row at the byte positions of the dotted columns.
func positionalFields(b []byte, cols []reportCol, fields [][]byte) [][]byte {
	for i, c := range cols {
		end := c.end
		if end < 0 || end > len(b) || i == len(cols)-1 {
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
	return fields
}

// fieldsValid checks the percentage, number and symbol columns of a row;
// numeric columns hold n values (the members of a group).
func fieldsValid(fields [][]byte, cols []reportCol, n int) bool {
	for i, c := range cols {
		if c.kind != 't' && !numFieldValid(fields[i], c.kind, n) {
			return false
		}
		if c.name == "Symbol" && len(fields[i]) > 0 && !validSymField(fields[i]) {
			return false
		}
	}
	return true
}

// numFieldValid checks that f holds n percentages (kind 'p') or counts.
func numFieldValid(f []byte, kind byte, n int) bool {
	toks := [][]byte{f}
	if n > 1 {
		if toks = bytes.Fields(f); len(toks) != n {
			return false
		}
	}
	for _, t := range toks {
		if kind == 'p' {
			if _, ok := parsePct(t); !ok {
				return false
			}
		} else if _, err := strconv.ParseUint(string(t), 10, 64); err != nil {
			return false
		}
	}
	return true
}

// setField stores the field of column name in row.
func (rr *PerfReportReader) setField(row *PerfReportRow, name string, f []byte) {
	switch name {
	case "Overhead", "Self":
		row.Overhead, _ = parsePct(f)
	case "Children":
		v, _ := parsePct(f)
		row.Children = &v
	case "Latency":
		v, _ := parsePct(f)
		row.Latency = &v
	case "Samples", "Period":
		n, _ := strconv.ParseUint(string(f), 10, 64)
		if name == "Samples" {
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
		f = cutVerboseSym(f)
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
		row.Extra[name] = rr.str(collapseBytes(f))
	}
}

func validSymField(f []byte) bool {
	f = cutVerboseSym(f)
	return len(f) >= 4 && f[0] == '[' && f[2] == ']' && f[3] == ' '
}

// cutVerboseSym drops what perf report -v prints before a symbol: its
// address and where the symbol came from ("0x167149           D [.] sym",
// perf's "%-#*llx %c ").
func cutVerboseSym(f []byte) []byte {
	if !bytes.HasPrefix(f, []byte("0x")) {
		return f
	}
	i := 2
	for i < len(f) && (isDigit(f[i]) || f[i] >= 'a' && f[i] <= 'f') {
		i++
	}
	rest := bytes.TrimLeft(f[i:], " ")
	if i == 2 || len(rest) < 6 || rest[1] != ' ' || rest[2] != '[' || len(rest) == len(f[i:]) {
		return f
	}
	return rest[2:]
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
