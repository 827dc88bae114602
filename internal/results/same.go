package results

import (
	"maps"
	"slices"
	"strings"
)

// SameRun says how a and b hold the results of one run, or "" when they
// do not: the same run IDs (a run directory and its copy, or one path
// given twice), else, where the samples carry no run ID (benchfmt
// files), the same samples (cell, repetition, start and every metric
// value; the kernel label is left out, since an unlabelled run takes the
// name of its directory). Two sides that are one run compare it with
// itself: every difference is none.
func SameRun(a, b *Set) string {
	ia, ib := runIDs(a), runIDs(b)
	if len(ia) > 0 && slices.Equal(ia, ib) {
		return "run ID " + strings.Join(ia, ", ")
	}
	if len(ia) == 0 && len(ib) == 0 && len(a.Samples) > 0 && slices.EqualFunc(a.Samples, b.Samples, sameSample) {
		return "the same samples"
	}
	return ""
}

// runIDs are the distinct run IDs of s's samples, failed ones included,
// sorted.
func runIDs(s *Set) []string {
	var ids []string
	for _, x := range append(slices.Clip(s.Samples), s.Failed...) {
		if x.Run != "" && !slices.Contains(ids, x.Run) {
			ids = append(ids, x.Run)
		}
	}
	slices.Sort(ids)
	return ids
}

func sameSample(x, y Sample) bool {
	return x.Cell == y.Cell && x.Rep == y.Rep && x.Start.Equal(y.Start) && maps.Equal(x.Metrics, y.Metrics)
}
