package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
)

// Reruns is how many of a column's samples are second attempts of their
// cell, by the first attempt's cause: after a first that measured nothing
// valid (results.Sample.VoidRerun: the guest's iperf3 server reset the
// streams, say), or after a first whose guest kernel faulted under TCG
// (results.Sample.FaultRerun: the fault line).
type Reruns struct {
	Column  string         `json:"column"`
	Reruns  int            `json:"reruns"`
	Samples int            `json:"samples"`
	Causes  map[string]int `json:"causes,omitempty"`
}

// VoidReruns is the Reruns of void first attempts (Report.VoidReruns).
type VoidReruns = Reruns

// rerunKind is one reason for a second attempt, as the report counts it.
type rerunKind struct {
	cause func(*results.Sample) string // the sample's first attempt's cause, "" for none
	lead  string                       // the note's lead: "re-run after ..."
	// what and warning fill the warning of a column with more of them
	// than another: "%s re-ran more samples after WHAT than %s (...)".
	what, warning string
}

var (
	voidKind = rerunKind{
		cause: func(s *results.Sample) string { return s.VoidRerun },
		lead:  "re-run after a void first attempt",
		what:  "a void first attempt",
		warning: fmt.Sprintf("a kernel whose measurements are broken off more often hides a finding in its re-runs; see the samples' %q warnings",
			strings.TrimSuffix(results.VoidRerunNote, ": ")),
	}
	faultKind = rerunKind{
		cause: func(s *results.Sample) string { return s.FaultRerun },
		lead:  "re-run after a TCG guest kernel fault",
		what:  "a guest kernel fault under TCG",
		warning: fmt.Sprintf("a kernel that faults more often under TCG may be at fault itself, not the emulator; see the samples' %q warnings and kept consoles",
			results.FaultRerunNote),
	}
)

// reruns sets Report.VoidReruns and Report.FaultReruns, every column's
// count of each, when a column has such a re-run, and warns when one
// column has significantly more than another (rerunWarning): a kernel
// whose measurements are broken off more often hides a finding in its
// re-runs.
func (b *builder) reruns() {
	b.r.VoidReruns = b.countReruns(voidKind)
	b.r.FaultReruns = b.countReruns(faultKind)
}

// countReruns is every column's count of k's re-runs, nil when no column
// has one; it adds k's warning when the columns differ.
func (b *builder) countReruns(k rerunKind) []Reruns {
	by := map[string]*Reruns{}
	for _, col := range b.r.Columns {
		by[col] = &Reruns{Column: col}
	}
	some := false
	for i := range b.set.Samples {
		s := &b.set.Samples[i]
		v := by[s.Kernel]
		if v == nil {
			continue
		}
		v.Samples++
		if c := k.cause(s); c != "" {
			if v.Causes == nil {
				v.Causes = map[string]int{}
			}
			v.Reruns, v.Causes[c], some = v.Reruns+1, v.Causes[c]+1, true
		}
	}
	if !some {
		return nil
	}
	var out []Reruns
	for _, col := range b.r.Columns {
		out = append(out, *by[col])
	}
	if w := rerunWarning(out, k); w != "" {
		b.r.Warnings = append(b.r.Warnings, w)
	}
	return out
}

// RerunAlpha is the level below which Fisher's exact test on two
// columns' re-run counts makes their difference a warning.
const RerunAlpha = 0.05

// rerunWarning names the column with the largest share of k's re-runs
// against the one with the smallest when the difference is significant,
// else "". Significant is a two-sided Fisher exact test (FisherExact)
// below RerunAlpha: two-sided because either kernel may be the one whose
// measurements break off, and exact because re-runs are few (1 of 12
// against 0 of 12 is p = 1, chance; 5 of 12 against 0 of 12 is p =
// 0.037). Only the two extreme columns are tested, so with more columns
// the warning comes a little more readily than its level says.
func rerunWarning(vs []Reruns, k rerunKind) string {
	share := func(a, b Reruns) int { return cmp.Compare(a.Reruns*b.Samples, b.Reruns*a.Samples) }
	most, least := slices.MaxFunc(vs, share), slices.MinFunc(vs, share)
	p := FisherExact(most.Reruns, most.Samples, least.Reruns, least.Samples)
	if share(most, least) == 0 || p >= RerunAlpha {
		return ""
	}
	return fmt.Sprintf("%s re-ran more samples after %s than %s (%s; %s; Fisher's exact test, two-sided p = %.3g): %s",
		most.Column, k.what, least.Column, most.count(), least.count(), p, k.warning)
}

// count is "3 of 12, connection reset by peer" or "0 of 12".
func (v Reruns) count() string {
	s := fmt.Sprintf("%d of %d", v.Reruns, v.Samples)
	if v.Reruns > 0 {
		s += ", " + v.causes()
	}
	return s
}

// causes is the one cause, or each with its count, most first:
// "2 connection reset by peer, 1 the server terminated".
func (v Reruns) causes() string {
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
func (r *Report) VoidRerunNote() string { return rerunNote(voidKind, r.VoidReruns) }

// FaultRerunNote is the report's line on re-runs after a TCG guest kernel
// fault, "" when no column has one: "re-run after a TCG guest kernel
// fault: stock: 1 of 12 samples (Kernel panic - ...); patched: 0 of 12".
func (r *Report) FaultRerunNote() string { return rerunNote(faultKind, r.FaultReruns) }

func rerunNote(k rerunKind, vs []Reruns) string {
	if len(vs) == 0 {
		return ""
	}
	var parts []string
	for _, v := range vs {
		p := fmt.Sprintf("%s: %d of %d samples", v.Column, v.Reruns, v.Samples)
		if v.Reruns > 0 {
			p += " (" + v.causes() + ")"
		}
		parts = append(parts, p)
	}
	return k.lead + ": " + strings.Join(parts, "; ")
}

// LabRetryNotes are the report's lines on the columns whose lab VM was
// booted again (results.Env.LabRetry), in column order: "patched: its lab
// VM was booted again after its kernel failed under TCG (LINE); the first
// lab VM's console is lab/patched/console-1.log".
func (r *Report) LabRetryNotes() []string {
	var out []string
	for _, col := range r.Columns {
		if e := r.Env[col]; e != nil && e.LabRetry != nil {
			out = append(out, fmt.Sprintf("%s: its lab VM was booted again after its kernel failed under TCG (%s); the samples the first had finished are kept; the first lab VM's console is %s",
				col, e.LabRetry.Why, e.LabRetry.Console))
		}
	}
	return out
}

// rerunNotes are the report's lines on second attempts (void, TCG guest
// fault, lab VM booted again), for the text and markdown notes.
func (r *Report) rerunNotes() []string {
	var out []string
	for _, n := range []string{r.VoidRerunNote(), r.FaultRerunNote()} {
		if n != "" {
			out = append(out, n)
		}
	}
	return append(out, r.LabRetryNotes()...)
}
