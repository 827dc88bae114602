package report

import (
	"io"
	"testing"
)

// BenchmarkReport measures loading two run directories, building the
// model and rendering text.
func BenchmarkReport(b *testing.B) {
	for b.Loop() {
		set, err := Load(run("stock", "patched")...)
		if err != nil {
			b.Fatal(err)
		}
		r, err := Build(set, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteText(io.Discard, r, ASCII); err != nil {
			b.Fatal(err)
		}
	}
}
