package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// VoidReruns is how many of a column's samples are second attempts after
// a first that measured nothing valid (results.Sample.VoidRerun: the
// guest's iperf3 server reset the streams, say), by cause.
type VoidReruns struct {
	Column  string         `json:"column"`
	Reruns  int            `json:"reruns"`
	Samples int            `json:"samples"`
	Causes  map[string]int `json:"causes,omitempty"`
}

// voidReruns sets Report.VoidReruns, every column's count, when a column
// has a void re-run, and warns when one column has more than another (as
// a share of its samples): a kernel whose measurements are broken off more
// often hides a finding in its re-runs.
func (b *builder) voidReruns() {
	by := map[string]*VoidReruns{}
	for _, col := range b.r.Columns {
		by[col] = &VoidReruns{Column: col}
	}
	some := false
	for i := range b.set.Samples {
		s := &b.set.Samples[i]
		v := by[s.Kernel]
		if v == nil {
			continue
		}
		v.Samples++
		if s.VoidRerun != "" {
			if v.Causes == nil {
				v.Causes = map[string]int{}
			}
			v.Reruns, v.Causes[s.VoidRerun], some = v.Reruns+1, v.Causes[s.VoidRerun]+1, true
		}
	}
	if !some {
		return
	}
	for _, col := range b.r.Columns {
		b.r.VoidReruns = append(b.r.VoidReruns, *by[col])
	}
	if w := voidRerunWarning(b.r.VoidReruns); w != "" {
		b.r.Warnings = append(b.r.Warnings, w)
	}
}

// voidRerunWarning names the column with the largest share of void
// re-runs against the one with the smallest, or "" when all are alike.
func voidRerunWarning(vs []VoidReruns) string {
	share := func(a, b VoidReruns) int { return cmp.Compare(a.Reruns*b.Samples, b.Reruns*a.Samples) }
	most, least := slices.MaxFunc(vs, share), slices.MinFunc(vs, share)
	if share(most, least) == 0 {
		return ""
	}
	return fmt.Sprintf("%s re-ran more samples after a void first attempt than %s (%s; %s): a kernel whose measurements are broken off more often hides a finding in its re-runs; see the samples' %q warnings",
		most.Column, least.Column, most.count(), least.count(), "ran again after a void measurement")
}

// count is "3 of 12, connection reset by peer" or "0 of 12".
func (v VoidReruns) count() string {
	s := fmt.Sprintf("%d of %d", v.Reruns, v.Samples)
	if v.Reruns > 0 {
		s += ", " + v.causes()
	}
	return s
}

// causes is the one cause, or each with its count, most first:
// "2 connection reset by peer, 1 the server terminated".
func (v VoidReruns) causes() string {
	keys := make([]string, 0, len(v.Causes))
	for k := range v.Causes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(v.Causes[b]-v.Causes[a], strings.Compare(a, b)) })
	if len(keys) == 1 {
		return keys[0]
	}
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%d %s", v.Causes[k], k)
	}
	return strings.Join(keys, ", ")
}

// VoidRerunNote is the report's line on void re-runs, "" when no column
// has one: "re-run after a void first attempt: patched: 3 of 12 samples
// (connection reset by peer); stock: 0 of 12".
func (r *Report) VoidRerunNote() string {
	if len(r.VoidReruns) == 0 {
		return ""
	}
	var parts []string
	for _, v := range r.VoidReruns {
		p := fmt.Sprintf("%s: %d of %d samples", v.Column, v.Reruns, v.Samples)
		if v.Reruns > 0 {
			p += " (" + v.causes() + ")"
		}
		parts = append(parts, p)
	}
	return "re-run after a void first attempt: " + strings.Join(parts, "; ")
}
