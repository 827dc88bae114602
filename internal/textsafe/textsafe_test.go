package textsafe

import "testing"

func TestOneLineAndTerminal(t *testing.T) {
	for _, c := range []struct{ in, line, term string }{
		{"stock", "stock", "stock"},
		{"a\nFORGED", `a\x0aFORGED`, "a\nFORGED"},
		{"k\x1b]0;t\x07\t", `k\x1b]0;t\x07\x09`, "k\\x1b]0;t\\x07\t"},
		{"x\u202ey\u0085", `x\u{202e}y\x85`, `x\u{202e}y\x85`},
		{"üñí · ok", "üñí · ok", "üñí · ok"},
	} {
		if got := OneLine(c.in); got != c.line {
			t.Errorf("OneLine(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Terminal(c.in); got != c.term {
			t.Errorf("Terminal(%q) = %q, want %q", c.in, got, c.term)
		}
	}
}
