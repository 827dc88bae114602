package bisect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/verdict"
)

// An exact judge: commits from first on are bad, broken ones do not build.
func exact(commits []string, first int, broken map[int]bool, calls *[]string) Judge {
	return func(_ context.Context, c string) (Outcome, error) {
		*calls = append(*calls, c)
		i := 0
		fmt.Sscanf(c, "c%d", &i)
		if broken[i] {
			return Outcome{}, fmt.Errorf("make: %w", ErrBuild)
		}
		if i >= first {
			return Outcome{Verdict: verdict.Different, Bad: true, Pct: 10, Reps: 10}, nil
		}
		return Outcome{Verdict: verdict.Same, Pct: 0.1, Reps: 30}, nil
	}
}

func commits(n int) []string {
	var c []string
	for i := range n {
		c = append(c, fmt.Sprintf("c%d", i))
	}
	return c
}

func TestRunFindsAndResumes(t *testing.T) {
	cs := commits(17)
	var calls []string
	var saved []Outcome
	res, err := Run(t.Context(), cs, exact(cs, 11, map[int]bool{8: true}, &calls), nil, func(o []Outcome) error { saved = o; return nil })
	if err != nil || res.Culprit != "c11" || len(saved) != len(res.Steps) {
		t.Fatalf("Run = %+v, %v; want c11 with every step saved", res, err)
	}
	if !res.Steps[0].Skip || res.Steps[0].Commit != "c8" || !strings.Contains(res.Steps[0].Why, "build failed") {
		t.Errorf("first step %+v, want c8 skipped as a build failure", res.Steps[0])
	}
	// Resumed from the saved outcomes: no commit is judged again.
	done := map[string]Outcome{}
	for _, o := range saved {
		done[o.Commit] = o
	}
	calls = nil
	res2, err := Run(t.Context(), cs, exact(cs, 11, nil, &calls), done, nil)
	if err != nil || res2.Culprit != "c11" || len(calls) != 0 {
		t.Errorf("resumed: %+v, %v, judged %v again", res2, err, calls)
	}
	var b strings.Builder
	res.Steps[1].Seconds = 754.4
	WriteEvidence(&b, res)
	if !strings.Contains(b.String(), "first bad commit: c11") || !strings.Contains(b.String(), "skip: make: build failed") {
		t.Errorf("evidence:\n%s", b.String())
	}
	// Each step's line: verdict, change, runs, time, judgment.
	if lines := strings.Split(b.String(), "\n"); len(lines) < 3 || !strings.Contains(lines[2], "12m34s") || !strings.Contains(lines[0], "time") {
		t.Errorf("no step time in the evidence:\n%s", b.String())
	}
}

func TestRunSkippedHideCulprit(t *testing.T) {
	cs := commits(5)
	var calls []string
	res, err := Run(t.Context(), cs, exact(cs, 2, map[int]bool{1: true, 2: true}, &calls), nil, nil)
	if err != nil || res.Culprit != "" || strings.Join(res.Candidates, ",") != "c1,c2,c3" {
		t.Errorf("Run = %+v, %v; want candidates c1,c2,c3 (the skipped and the first bad)", res, err)
	}
}

func TestRunStopsOnJudgeError(t *testing.T) {
	boom := errors.New("lab VM died")
	res, err := Run(t.Context(), commits(4), func(context.Context, string) (Outcome, error) { return Outcome{}, boom }, nil, nil)
	if !errors.Is(err, boom) {
		t.Errorf("err %v, want the judge's", err)
	}
	// A stopped search concludes nothing: it printed "skipped commits
	// hide the first bad commit; it is one of: " with an empty list.
	var b strings.Builder
	WriteEvidence(&b, res)
	if !strings.Contains(b.String(), "stopped after 0 steps; the first bad commit is one of the 3 from c1 to c3") || strings.Contains(b.String(), "skipped") {
		t.Errorf("evidence of a stopped search:\n%s", b.String())
	}
}
