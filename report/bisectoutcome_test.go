package report

import (
	"testing"

	"github.com/vnetbench/vnetbench/internal/bisect"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// The evidence of a step is the decision that judged it, with its change:
// a good step's SAME shows its change too (not +0.00%), a DIFFERENT the
// other way is shown as DIFFERENT, and an UNKNOWN cell skips unless
// another cell tripped.
func TestBisectOutcomeOf(t *testing.T) {
	dec := func(v verdict.Verdict, pct float64, tripped bool, n int) Decision {
		d := Decision{Verdict: v, Tripped: tripped}
		d.Delta.Pct, d.Delta.Verdict.Verdict, d.Delta.Verdict.NBase, d.Delta.Verdict.NNew = pct, v, n, n
		return d
	}
	for _, tc := range []struct {
		name string
		ds   []Decision
		want bisect.Outcome
	}{
		{"same", []Decision{dec(verdict.Same, 15.9, false, 10)}, bisect.Outcome{Verdict: verdict.Same, Pct: 15.9, Reps: 10}},
		{"the other way", []Decision{dec(verdict.Same, 1, false, 10), dec(verdict.Different, 30, false, 14)},
			bisect.Outcome{Verdict: verdict.Different, Pct: 30, Reps: 14}},
		{"tripped over unknown", []Decision{dec(verdict.Unknown, -5, false, 18), dec(verdict.Different, -100, true, 10)},
			bisect.Outcome{Verdict: verdict.Different, Pct: -100, Reps: 18, Bad: true}},
		{"unknown", []Decision{dec(verdict.Same, 2, false, 24), dec(verdict.Unknown, -7, false, 24)},
			bisect.Outcome{Verdict: verdict.Unknown, Pct: -7, Reps: 24, Skip: true, Why: "UNKNOWN within the budget"}},
	} {
		if got := (&Progress{Decisions: tc.ds}).BisectOutcome(); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
