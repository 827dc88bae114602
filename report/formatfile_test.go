package report

import (
	"errors"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
)

func TestCheckFormatForFile(t *testing.T) {
	for _, tc := range []struct {
		format, name string
		ok           bool
	}{
		{"csv", "out.csv", true}, {"csv", "out.txt", true}, {"csv", "out", true}, {"mail", "", true},
		{"kcidb", "submission.json", true}, {"junit", "gates.xml", true},
		{"csv", "out.md", false}, {"json", "r.html", false}, {"markdown", "r.json", false}, {"text", "r.bench", false},
	} {
		err := CheckFormatForFile(tc.format, tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, fault.ErrInput)) {
			t.Errorf("CheckFormatForFile(%q, %q) = %v, want ok %v (bad input otherwise)", tc.format, tc.name, err, tc.ok)
		}
	}
}
