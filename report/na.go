package report

import (
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// unsupported returns why cell cannot run in column col (the reason of its
// samples marked Unsupported), or "".
func (b *builder) unsupported(cell, col string) string {
	for _, s := range b.idx.byCol[cellCol{cell, col}] {
		if s.Unsupported != "" {
			return s.Unsupported
		}
	}
	return ""
}

// naText is a table cell for a configuration the kernel refused.
func naText(reason string) string { return "n/a (" + reason + ")" }

// headlineOf is the headline metric of the table of s's workload ("" =
// none).
func headlineOf(s *results.Sample) metric.Key {
	if w, ok := workload.Lookup(workload.NameOf(generatorOf(s))); ok {
		if t, ok := w.(workload.Tabler); ok {
			return t.Table().Headline
		}
	}
	return ""
}

// measured returns the first sample of cell that has metrics (not
// Unsupported), else the first sample: what headers and row labels read.
func (b *builder) measured(cell string) *results.Sample {
	for _, s := range b.idx.byCell[cell] {
		if s.Unsupported == "" {
			return s
		}
	}
	return b.firstSample(cell)
}
