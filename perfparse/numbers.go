package perfparse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Number conventions in perf stat text. perf prints the counter column
// with printf's "'" flag (thousands grouped by the locale: "1,234,567",
// "1.234.567", "1 234 567", "1'234'567") and exactly two decimals for
// non-integers; metrics, percentages and the "seconds time elapsed" footer
// are never grouped, so their single separator is the decimal mark. The
// decimal mark of an input is therefore decided from the evidence: any
// number that can only be read one way fixes it, conflicting evidence is
// an error, and a number that could be read two ways without evidence is an
// error that says so (never a silent factor of 1000).

// numFormat is the decimal mark and grouping separator found in an input.
type numFormat struct {
	dec     byte // '.' or ','; 0 = not known
	decLine int  // line that decided dec
	group   byte // '.', ',', ' ', '\'' or 0 = none seen
}

// String describes the format for humans, e.g. `decimal ',' grouping '.'`.
func (f numFormat) String() string {
	if f.dec == 0 && f.group == 0 {
		return ""
	}
	s := "decimal unknown"
	if f.dec != 0 {
		s = fmt.Sprintf("decimal %q", rune(f.dec))
	}
	if f.group != 0 {
		s += fmt.Sprintf(" grouping %q", rune(f.group))
	}
	return s
}

// setDec records evidence that c is the decimal mark.
func (f *numFormat) setDec(c byte, line int, why string) error {
	if f.dec == 0 {
		f.dec, f.decLine = c, line
		return nil
	}
	if f.dec != c {
		return errorf(line, "conflicting number formats: %s means %q is the decimal mark, but line %d uses %q; fix the paste so all numbers use one locale (or use perf stat -x, / -j)", why, rune(c), f.decLine, rune(f.dec))
	}
	return nil
}

func (f *numFormat) setGroup(c byte, line int, why string) error {
	if c == '.' || c == ',' {
		other := byte('.')
		if c == '.' {
			other = ','
		}
		if err := f.setDec(other, line, why+" groups thousands with "+strconv.QuoteRune(rune(c))); err != nil {
			return err
		}
	}
	if f.group == 0 {
		f.group = c
	}
	return nil
}

// numRole says how perf printed a number.
type numRole int

const (
	roleCounter numRole = iota // counter column: grouped, 0 or 2 decimals
	roleDecimal                // metric, percentage, seconds: never grouped
	roleCount                  // counter column of a count: grouped, never a fraction
)

// isNumTok reports whether s looks like a (possibly locale-formatted) number.
func isNumTok(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == ',' || c == '\'' || c == ' ') {
			return false
		}
	}
	return s[len(s)-1] >= '0' && s[len(s)-1] <= '9'
}

// observe collects decimal-mark evidence from a number token.
func (f *numFormat) observe(tok string, role numRole, line int) error {
	tok = strings.TrimLeft(tok, "+-")
	dots, commas := strings.Count(tok, "."), strings.Count(tok, ",")
	other := strings.ContainsAny(tok, "' ")
	why := fmt.Sprintf("%q", tok)
	switch {
	case dots+commas == 0:
		if other {
			return f.setGroup(groupChar(tok), line, why)
		}
		return nil
	case role == roleDecimal:
		if dots+commas > 1 || other {
			return nil // not a plain perf decimal; the value parse reports it
		}
		if dots == 1 {
			return f.setDec('.', line, why)
		}
		return f.setDec(',', line, why)
	case dots > 0 && commas > 0:
		last := tok[strings.LastIndexAny(tok, ".,")]
		return f.setDec(last, line, why)
	case other:
		if err := f.setGroup(groupChar(tok), line, why); err != nil {
			return err
		}
		if dots == 1 {
			return f.setDec('.', line, why)
		}
		if commas == 1 {
			return f.setDec(',', line, why)
		}
		return nil
	}
	sep := byte('.')
	if commas > 0 {
		sep = ','
	}
	if dots+commas > 1 {
		return f.setGroup(sep, line, why)
	}
	if k := len(tok) - strings.IndexByte(tok, sep) - 1; k != 3 {
		return f.setDec(sep, line, why)
	}
	if role == roleCount {
		// perf prints counts as integers: "46.997" groups thousands.
		return f.setGroup(sep, line, "count "+why)
	}
	return nil // "1.234 msec": decided by other evidence, else ambiguous
}

func groupChar(tok string) byte {
	if strings.IndexByte(tok, '\'') >= 0 {
		return '\''
	}
	return ' '
}

// parseNum reads tok under the format. integer says the caller expects a
// count (perf prints counts without decimals), which resolves "46.997" to
// 46997 even when the decimal mark is unknown. It returns the value, the
// exact integer when the number has no fraction, and whether it has none.
func (f *numFormat) parseNum(tok string, role numRole, integer bool, line int, what string) (float64, uint64, bool, error) {
	neg := strings.HasPrefix(tok, "-")
	t := strings.TrimLeft(tok, "+-")
	dec := f.dec
	if role == roleDecimal && dec == 0 && strings.Count(t, ".")+strings.Count(t, ",") == 1 {
		dec = t[strings.IndexAny(t, ".,")]
	}
	if dec == 0 {
		dots, commas := strings.Count(t, "."), strings.Count(t, ",")
		if dots+commas == 1 {
			sep := t[strings.IndexAny(t, ".,")]
			if !integer {
				return 0, 0, false, errorf(line, "%s %q is ambiguous: %q could group thousands or be the decimal mark, and no other number in the input shows which (add the \"seconds time elapsed\" footer to the paste, or use perf stat -x, or -j)", what, tok, rune(sep))
			}
			dec = '.'
			if sep == '.' {
				dec = ','
			}
		}
	}
	intPart, frac := t, ""
	if dec != 0 {
		if i := strings.LastIndexByte(t, dec); i >= 0 {
			intPart, frac = t[:i], t[i+1:]
			if strings.IndexByte(intPart, dec) >= 0 {
				return 0, 0, false, errorf(line, "%s %q: more than one decimal mark %q", what, tok, rune(dec))
			}
		}
	}
	digits, err := ungroup(intPart, dec)
	if err != nil {
		return 0, 0, false, errorf(line, "%s %q: %v", what, tok, err)
	}
	for i := 0; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, 0, false, errorf(line, "%s %q: bad digits after the decimal mark", what, tok)
		}
	}
	if (dec != 0 && strings.IndexByte(t, dec) >= 0 && frac == "") || digits == "" {
		return 0, 0, false, errorf(line, "%s %q is not a number", what, tok)
	}
	allZero := strings.Trim(frac, "0") == ""
	if integer && !allZero {
		return 0, 0, false, errorf(line, "%s %q has a fraction but perf prints counts as integers (the input uses %q as the decimal mark, see line %d)", what, tok, rune(f.dec), f.decLine)
	}
	s := digits
	if frac != "" {
		s += "." + frac
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, 0, false, errorf(line, "%s %q: %v", what, tok, err)
	}
	if neg {
		v = -v
	}
	if allZero && !neg {
		n, err := strconv.ParseUint(digits, 10, 64)
		if err == nil {
			return v, n, true, nil
		}
	}
	return v, 0, allZero, nil
}

// ungroup removes thousands separators from an integer part, checking that
// every group after the first has three digits.
func ungroup(s string, dec byte) (string, error) {
	if strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		return s, nil
	}
	var sep byte
	groups := []string{}
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			continue
		}
		if c == dec {
			return "", fmt.Errorf("misplaced decimal mark")
		}
		if sep == 0 {
			sep = c
		} else if c != sep {
			return "", fmt.Errorf("mixed thousands separators %q and %q", rune(sep), rune(c))
		}
		groups = append(groups, s[start:i])
		start = i + 1
	}
	groups = append(groups, s[start:])
	if !thousands(groups) && !lakhs(groups) {
		return "", fmt.Errorf("digit groups are not thousands (%q)", s)
	}
	return strings.Join(groups, ""), nil
}

// thousands reports whether digit groups are 1-3 digits, then 3s.
func thousands(groups []string) bool {
	for i, g := range groups {
		if i == 0 && (len(g) < 1 || len(g) > 3) || i > 0 && len(g) != 3 {
			return false
		}
	}
	return true
}

// lakhs reports whether digit groups are the Indian locales' (en_IN,
// hi_IN: glibc grouping 3;2): 1-2 digits, then 2s, the last 3 —
// "1,25,671", "17,24,51,22,468" as perf stat prints counts there.
func lakhs(groups []string) bool {
	n := len(groups)
	if n < 2 || len(groups[n-1]) != 3 || len(groups[0]) < 1 || len(groups[0]) > 2 {
		return false
	}
	for _, g := range groups[1 : n-1] {
		if len(g) != 2 {
			return false
		}
	}
	return true
}

// scale returns v × 10^exp rounded as the decimal would be (so 58.1% is
// 0.581, not 0.58100000000000006).
func scale(v float64, exp int) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	mant, e, _ := strings.Cut(strconv.FormatFloat(v, 'e', -1, 64), "e")
	n, _ := strconv.Atoi(e)
	r, err := strconv.ParseFloat(mant+"e"+strconv.Itoa(n+exp), 64)
	if err != nil {
		return v * math.Pow10(exp)
	}
	return r
}
