// Package bisect finds the first commit whose measurements differ from the
// good endpoint's, with a judge that decides each candidate (a verdict of
// internal/verdict, usually from an adaptive run against the good commit)
// and skips commits that do not build, as git bisect does. The package is
// the search and its evidence; cmd/vnetbench's bisect supplies the judge.
package bisect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// Outcome is the judgment of one commit against the good endpoint.
type Outcome struct {
	Commit string `json:"commit"`
	// Bad: the commit measures as the bad endpoint does (DIFFERENT from
	// good in the bad direction). Skip: it could not be judged (a build
	// failure, or UNKNOWN at the plan's last look).
	Bad  bool `json:"bad"`
	Skip bool `json:"skip"`
	// Verdict, Pct (change of the median vs good, percent) and Reps (runs
	// per side) are the evidence; Why says what skipped it.
	Verdict verdict.Verdict `json:"verdict,omitempty"`
	Pct     float64         `json:"pct"`
	Reps    int             `json:"reps"`
	Why     string          `json:"why,omitempty"`
	// Seconds is the step's wall time: the build and the runs.
	Seconds float64 `json:"seconds,omitempty"`
}

// ErrBuild marks a judge's error as a build failure: the commit is
// skipped (git bisect's 125), not the search ended.
var ErrBuild = errors.New("build failed")

// Judge decides one commit. An error wrapping ErrBuild skips it; any other
// error ends the search (it can be resumed).
type Judge func(ctx context.Context, commit string) (Outcome, error)

// Result is what Run found.
type Result struct {
	// Culprit is the first bad commit, "" when skipped commits hide it;
	// Candidates then lists the commits it is one of.
	Culprit    string    `json:"culprit"`
	Candidates []string  `json:"candidates,omitempty"`
	Steps      []Outcome `json:"steps"`
	// Left, when a judge's error stopped the search, are the commits
	// the first bad one is still among (after the last good, up to the
	// first bad so far): a stopped search names neither a culprit nor
	// candidates.
	Left []string `json:"left,omitempty"`
}

// Run bisects commits, oldest first: commits[0] is the good endpoint and
// the last the bad one, neither judged. done holds the outcomes of an
// earlier, interrupted search (by commit); save is called after each step
// with every outcome so far, for resuming.
func Run(ctx context.Context, commits []string, judge Judge, done map[string]Outcome, save func([]Outcome) error) (*Result, error) {
	if len(commits) < 2 {
		return nil, fmt.Errorf("bisect needs a good and a bad commit, got %d commits", len(commits))
	}
	res := &Result{}
	skipped := map[int]bool{}
	lo, hi := 0, len(commits)-1 // lo good, hi bad
	for hi-lo > 1 {
		i := pick(lo, hi, skipped)
		if i < 0 {
			for j := lo + 1; j <= hi; j++ {
				res.Candidates = append(res.Candidates, commits[j])
			}
			return res, nil
		}
		o, ok := done[commits[i]]
		if !ok {
			var err error
			start := time.Now()
			o, err = judge(ctx, commits[i])
			switch {
			case errors.Is(err, ErrBuild):
				o = Outcome{Commit: commits[i], Skip: true, Why: err.Error()}
			case err != nil:
				res.Left = commits[lo+1 : hi+1]
				return res, fmt.Errorf("judge %s: %w", commits[i], err)
			}
			o.Commit, o.Seconds = commits[i], time.Since(start).Seconds()
		}
		res.Steps = append(res.Steps, o)
		if save != nil {
			if err := save(res.Steps); err != nil {
				res.Left = commits[lo+1 : hi+1]
				return res, err
			}
		}
		switch {
		case o.Skip:
			skipped[i] = true
		case o.Bad:
			hi = i
		default:
			lo = i
		}
	}
	res.Culprit = commits[hi]
	return res, nil
}

// pick is the untested commit between lo and hi nearest their middle, or
// -1 when all are skipped.
func pick(lo, hi int, skipped map[int]bool) int {
	mid := (lo + hi) / 2
	for d := 0; d < hi-lo; d++ {
		for _, i := range []int{mid - d, mid + d} {
			if i > lo && i < hi && !skipped[i] {
				return i
			}
		}
	}
	return -1
}

// WriteEvidence prints the steps as a table and the result.
func WriteEvidence(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s %-14s %-10s %10s %6s %8s  %s\n", "step", "commit", "verdict", "change", "runs", "time", "judged")
	for i, o := range r.Steps {
		judged, v, pct := "good", string(o.Verdict), units.Pct(o.Pct)
		switch {
		case o.Skip:
			judged, pct = "skip: "+o.Why, "-"
		case o.Bad:
			judged = "bad"
		}
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(&b, "%-4d %-14s %-10s %10s %6d %8s  %s\n", i+1, short(o.Commit), v, pct, o.Reps, minutes(o.Seconds), judged)
	}
	switch {
	case r.Culprit != "":
		fmt.Fprintf(&b, "first bad commit: %s (%d steps)\n", r.Culprit, len(r.Steps))
	case len(r.Left) > 0:
		// Not "skipped commits hide it": the search stopped, nothing
		// was concluded.
		fmt.Fprintf(&b, "stopped after %d steps; the first bad commit is one of the %d from %s to %s\n", len(r.Steps), len(r.Left), short(r.Left[0]), short(r.Left[len(r.Left)-1]))
	default:
		fmt.Fprintf(&b, "skipped commits hide the first bad commit; it is one of: %s\n", strings.Join(r.Candidates, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// minutes is a step's wall time as 12m34s ("-" when not measured).
func minutes(secs float64) string {
	if secs <= 0 {
		return "-"
	}
	return (time.Duration(secs) * time.Second).Round(time.Second).String()
}

func short(c string) string {
	if len(c) > 14 {
		return c[:12] + ".."
	}
	return c
}
