package report

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseResults: any bytes give samples or an error, never a panic;
// good bytes never exceed the input.
func FuzzParseResults(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "runs", "few-a", ResultsFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte("{}\n{\"schema\":99}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		samples, good, _, err := parseResults("results.jsonl", data)
		if err != nil {
			return
		}
		if good > len(data) || good < 0 {
			t.Fatalf("good = %d of %d bytes", good, len(data))
		}
		for _, s := range samples {
			_, _ = Lookup(s.Cell)
		}
	})
}
