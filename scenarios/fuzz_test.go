package scenarios

import (
	"errors"
	"strings"
	"testing"
)

// FuzzLoad: any input gives a scenario or an *Error, never a panic or a
// hang; a loaded scenario expands to uniquely named cells and orders them.
func FuzzLoad(f *testing.F) {
	for _, b := range Builtins() {
		data, _ := BuiltinData(b.Name)
		f.Add(data)
	}
	for _, src := range badInputs {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Load("fuzz.yaml", data)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error is not *Error: %T %v", err, err)
			}
			if se.Msg == "" || strings.Contains(se.Msg, "\n") {
				t.Fatalf("want one line saying what is wrong, got %q", se.Msg)
			}
			return
		}
		cells := s.Expand()
		if len(cells) == 0 {
			t.Fatal("no cells")
		}
		seen := map[string]bool{}
		for _, c := range cells {
			key := c.Kernel.Label + " " + c.Name
			if seen[key] {
				t.Fatalf("duplicate cell %q", key)
			}
			seen[key] = true
			_ = c.Params()
		}
		_ = s.CheckHost(Host{NumCPU: 2})
		if n := len(Order(cells, 1)); n < len(cells) {
			t.Fatalf("order has %d runs for %d cells", n, len(cells))
		}
	})
}

// BenchmarkLoadSweep measures decoding and expanding the largest built-in.
func BenchmarkLoadSweep(b *testing.B) {
	data, _ := BuiltinData("thread-sweep")
	for b.Loop() {
		if _, err := Load("thread-sweep.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
