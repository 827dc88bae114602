package report

import (
	"errors"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// OutputFormat is report's and history's one rule: --format, else -o's
// extension, else text; an extension that names a format the command
// does not write (-o out.yaml wrote text), or another than --format's,
// is bad input.
func TestOutputFormat(t *testing.T) {
	history := []string{"text", "html", "json"}
	for _, tc := range []struct {
		format, name string
		writes       []string
		want         string // "" = bad input
	}{
		{"", "out.csv", Formats, "csv"}, {"", "out.HTML", Formats, "html"}, {"", "out.txt", Formats, "text"},
		{"", "out", Formats, "text"}, {"", "", Formats, "text"}, {"", "-", Formats, "text"},
		{"csv", "out.csv", Formats, "csv"}, {"csv", "out.txt", Formats, "csv"}, {"csv", "out", Formats, "csv"},
		{"mail", "", Formats, "mail"}, {"kcidb", "submission.json", Formats, "kcidb"}, {"junit", "gates.xml", Formats, "junit"},
		{"csv", "out.md", Formats, ""}, {"json", "r.html", Formats, ""}, {"markdown", "r.json", Formats, ""}, {"text", "r.bench", Formats, ""},
		{"", "out.yaml", Formats, ""}, {"", "out.yml", Formats, ""}, {"text", "out.yaml", Formats, ""}, {"yaml", "", Formats, ""},
		{"", "h.json", history, "json"}, {"", "h.htm", history, "html"}, {"", "h.csv", history, ""}, {"", "h.md", history, ""},
		{"csv", "", history, ""}, {"html", "h.json", history, ""},
		// The format's own name as the extension; JSON Lines is not
		// report's JSON (one document): both wrote text.
		{"", "out.benchfmt", Formats, "benchfmt"}, {"", "out.jsonl", Formats, ""}, {"json", "out.ndjson", Formats, ""},
	} {
		got, err := OutputFormat("cmd", tc.format, tc.name, tc.writes)
		if got != tc.want || (err == nil) != (tc.want != "") || (err != nil && !errors.Is(err, fault.ErrInput)) {
			t.Errorf("OutputFormat(%q, %q) = %q, %v; want %q (bad input when empty)", tc.format, tc.name, got, err, tc.want)
		}
	}
}
