package perfparse

import (
	"bytes"
	"strings"
)

var multiWordCols = []string{"IPC [IPC Coverage]", "Shared Object", "Data Symbol", "Data Object", "Local Weight", "Memory access", "TLB access", "Snoop", "Branch Mispredicted", "Source Shared Object", "Target Shared Object", "Source Symbol", "Target Symbol", "Basic Block Cycles", "Local INSTR Latency", "Local Pipeline Stage Cycle"}

func colKind(name string) byte {
	switch name {
	case "Overhead", "Children", "Self", "Latency", "Overhead sys", "Overhead us", "Overhead guest sys", "Overhead guest us":
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
// columns are n tokens each (one per group member), the symbol starts at
// its "[x] " marker, the shared object is "[JIT] tid N" or one token, and
// the command is the rest.
func splitCollapsedRow(b []byte, cols []reportCol, n int, out [][]byte) ([][]byte, bool) {
	rest := bytes.TrimSpace(b)
	i := 0
	for ; i < len(cols) && cols[i].kind != 't'; i++ {
		var tok []byte
		tok, rest = cutTokens(rest, n)
		out = append(out, tok)
	}
	text := cols[i:]
	if len(text) == 0 {
		return out, len(bytes.TrimSpace(rest)) == 0
	}
	var sym []byte
	var after [][]byte // columns after the symbol, e.g. "IPC [IPC Coverage]"
	si := -1
	var syms []int
	for j, c := range text {
		if strings.HasSuffix(c.name, "Symbol") {
			si = j
			syms = append(syms, j)
		}
	}
	if len(syms) > 1 {
		return splitSymbolRun(rest, text, syms, out)
	}
	hasSym := si >= 0
	if hasSym {
		k := symMarker(rest)
		if k < 0 {
			return nil, false
		}
		sym, rest = rest[k:], bytes.TrimRight(rest[:k], " ")
		var ok bool
		if sym, after, ok = cutAfterSymbol(sym, text[si+1:]); !ok {
			return nil, false
		}
		text = text[:si]
	}
	if len(text) == 0 {
		if len(rest) > 0 {
			return nil, false
		}
		return append(append(out, sym), after...), true
	}
	out = append(out, splitTextCols(rest, text)...)
	if hasSym {
		out = append(append(out, sym), after...)
	}
	return out, true
}

// splitSymbolRun splits a collapsed row with several symbol columns
// ("Source Symbol  Target Symbol" of perf record -b): each runs from its
// "[x] " marker to the next one. Symbol columns with other columns between
// them cannot be told apart once the blanks are gone: such a row is not
// split (ok false) rather than split wrong.
func splitSymbolRun(rest []byte, text []reportCol, syms []int, out [][]byte) ([][]byte, bool) {
	for k := 1; k < len(syms); k++ {
		if syms[k] != syms[k-1]+1 {
			return nil, false
		}
	}
	start := symMarker(rest)
	if start < 0 {
		return nil, false
	}
	before := bytes.TrimRight(rest[:start], " ")
	var vals [][]byte
	for range syms[1:] {
		next := symMarker(rest[start+4:])
		if next < 0 {
			return nil, false
		}
		next += start + 4
		vals = append(vals, bytes.TrimRight(rest[start:next], " "))
		start = next
	}
	last, after, ok := cutAfterSymbol(rest[start:], text[syms[len(syms)-1]+1:])
	if !ok {
		return nil, false
	}
	if syms[0] == 0 {
		if len(before) > 0 {
			return nil, false
		}
	} else {
		out = append(out, splitTextCols(before, text[:syms[0]])...)
	}
	return append(append(append(out, vals...), last), after...), true
}

// cutTokens cuts the first n blank-separated tokens (as one field) off b.
func cutTokens(b []byte, n int) ([]byte, []byte) {
	end := 0
	for k := 0; k < n && end < len(b); k++ {
		for end < len(b) && b[end] == ' ' {
			end++
		}
		for end < len(b) && b[end] != ' ' {
			end++
		}
	}
	return b[:end], bytes.TrimLeft(b[end:], " ")
}

// cutAfterSymbol cuts the columns that follow the symbol (one token each,
// two for "IPC [IPC Coverage]") off its end.
func cutAfterSymbol(sym []byte, cols []reportCol) ([]byte, [][]byte, bool) {
	after := make([][]byte, len(cols))
	for j := len(cols) - 1; j >= 0; j-- {
		ntok := 1
		if strings.HasPrefix(cols[j].name, "IPC") {
			ntok = 2 // "1.23  45.6%" or "-  -"
		}
		cut := len(sym)
		for n := 0; n < ntok; n++ {
			sp := bytes.LastIndexByte(sym[:cut], ' ')
			if sp < 4 { // keep at least "[x] "
				return nil, nil, false
			}
			cut = sp
			for cut > 0 && sym[cut-1] == ' ' {
				cut--
			}
		}
		after[j] = bytes.TrimSpace(sym[cut:])
		sym = sym[:cut]
	}
	return sym, after, true
}

// splitTextCols assigns the text before the symbol to text columns from the
// right: one token each, except the first (the command may contain
// blanks) and "[JIT] tid N" objects.
func splitTextCols(rest []byte, text []reportCol) [][]byte {
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
	return vals
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
