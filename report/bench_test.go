package report

import (
	"io"
	"testing"
)

// BenchmarkReport measures loading two run directories, building the
// model and rendering text.
func BenchmarkReport(b *testing.B) {
	for b.Loop() {
		_, r := built(b, Options{}, "stock", "patched")
		if err := WriteText(io.Discard, r, ASCII); err != nil {
			b.Fatal(err)
		}
	}
}
