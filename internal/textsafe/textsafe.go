// Package textsafe shows names read from files vnetbench did not write
// (kernel labels, cells, metric keys, run labels) in text for a terminal
// or a line-oriented reader: control characters, line breaks and Unicode
// bidirectional controls become visible escapes, so a name can neither
// drive a terminal nor forge a line. It does not quote for HTML, CSV or a
// shell: those writers quote on top of it.
package textsafe

import (
	"fmt"
	"strings"
)

// OneLine is s for a text that must stay on its line (a label, a title, a
// warning): every rune Unsafe reports becomes \xNN or \u{NNNN}.
func OneLine(s string) string { return Escape(s, Unsafe) }

// Terminal is s for a terminal: as OneLine, but line breaks and tabs stay.
func Terminal(s string) string {
	return Escape(s, func(r rune) bool { return r != '\n' && r != '\t' && Unsafe(r) })
}

// Unsafe reports whether r is a control character (C0, DEL, C1), a line or
// paragraph separator, or a bidirectional control.
func Unsafe(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Escape writes the runes of s that bad reports as \xNN or \u{NNNN}.
func Escape(s string, bad func(rune) bool) string {
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
