package bisect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vnetbench/vnetbench/internal/verdict"
)

// realNoise is the standardized residuals ((value - median) / IQR) of the
// result metrics of internal/verdict's real TCG capture: the noise of the
// simulated measurements.
var realNoise = sync.OnceValue(func() []float64 {
	f, err := os.ReadFile("../verdict/testdata/real/noise-tcg/results.jsonl")
	if err != nil {
		panic(err)
	}
	by := map[string][]float64{}
	for _, line := range bytes.Split(bytes.TrimSpace(f), []byte("\n")) {
		var s struct {
			Cell    string             `json:"cell"`
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			panic(err)
		}
		for _, k := range []string{"throughput_bps", "tx_pps", "lost_pps"} {
			if v, ok := s.Metrics[k]; ok {
				by[s.Cell+" "+k] = append(by[s.Cell+" "+k], v)
			}
		}
	}
	var pool []float64
	for _, k := range slices.Sorted(maps.Keys(by)) {
		v := slices.Sorted(slices.Values(by[k]))
		med, iqr := verdict.Quantile(v, 0.5), verdict.IQR(v)
		if iqr == 0 {
			continue
		}
		for _, x := range v {
			pool = append(pool, (x-med)/iqr)
		}
	}
	return pool
})

// history is a simulated series of commits: the metric steps up by one IQR
// at culprit; broken commits do not build.
type history struct {
	commits []string
	culprit int
	broken  map[int]bool
	rng     *rand.Rand
}

func newHistory(n int, brokenFrac float64, r *rand.Rand) *history {
	h := &history{culprit: 1 + r.IntN(n-1), broken: map[int]bool{}, rng: r}
	for i := range n {
		h.commits = append(h.commits, fmt.Sprintf("c%04d", i))
		if i > 0 && i < n-1 && r.Float64() < brokenFrac {
			h.broken[i] = true
		}
	}
	return h
}

func (h *history) sample(i int) float64 {
	pool := realNoise()
	v := 100 + pool[h.rng.IntN(len(pool))]
	if i >= h.culprit {
		v++ // one IQR
	}
	return v
}

// judge compares commit i with a fresh sample of the good endpoint at the
// plan's looks, as a step of vnetbench bisect does.
func (h *history) judge(_ context.Context, commit string) (Outcome, error) {
	i := slices.Index(h.commits, commit)
	if h.broken[i] {
		return Outcome{}, fmt.Errorf("make: error 2: %w", ErrBuild)
	}
	var good, cand []float64
	for _, n := range verdict.Default.Looks {
		for len(good) < n {
			good = append(good, h.sample(0))
			cand = append(cand, h.sample(i))
		}
		sort.Float64s(good)
		sort.Float64s(cand)
		v := verdict.DecideFast(good, cand, verdict.DefaultMinEffect, verdict.Default)
		pct := 100 * (verdict.Quantile(cand, 0.5)/verdict.Quantile(good, 0.5) - 1)
		switch v {
		case verdict.Different:
			// The bad endpoint is higher: only a rise is "bad".
			return Outcome{Verdict: v, Bad: pct > 0, Pct: pct, Reps: n}, nil
		case verdict.Same:
			return Outcome{Verdict: v, Pct: pct, Reps: n}, nil
		}
	}
	return Outcome{Verdict: verdict.Unknown, Skip: true, Why: "UNKNOWN at the last look", Reps: verdict.Default.MaxN()}, nil
}

type bisectStats struct {
	trials, named, within int
	cands                 int // not named, but among the candidates skips left
	steps                 []int
	reps                  int
}

func simulateBisect(trials, n int, brokenFrac float64, seed uint64) bisectStats {
	r := rand.New(rand.NewPCG(seed, 1024))
	limit := int(math.Log2(float64(n))) + 4
	var s bisectStats
	for range trials {
		h := newHistory(n, brokenFrac, r)
		res, err := Run(context.Background(), h.commits, h.judge, nil, nil)
		if err != nil {
			panic(err)
		}
		s.trials++
		s.steps = append(s.steps, len(res.Steps))
		for _, o := range res.Steps {
			s.reps += o.Reps
		}
		if slices.Contains(res.Candidates, h.commits[h.culprit]) {
			s.cands++
		}
		if res.Culprit == h.commits[h.culprit] {
			s.named++
			if len(res.Steps) <= limit {
				s.within++
			}
		}
	}
	return s
}

func (s bisectStats) histogram() string {
	count := map[int]int{}
	for _, n := range s.steps {
		count[n]++
	}
	out := ""
	for _, k := range slices.Sorted(maps.Keys(count)) {
		out += fmt.Sprintf(" %d:%d", k, count[k])
	}
	return out
}

// A 1-IQR step among 1,024 commits, real TCG noise: the culprit is named
// within log2(N)+4 = 14 steps in at least 95% of the histories. With 3%
// of the commits not building, the culprit is named or among the
// candidates the skipped commits leave (git bisect's "one of these") as
// often. Seeded.
func TestBisectFindsCulprit(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation of 2x300 bisections")
	}
	for _, broken := range []float64{0, 0.03} {
		s := simulateBisect(300, 1024, broken, 1)
		t.Logf("%.0f%% not building: named %d/%d, within 14 steps %d, among candidates %d; steps:%s; mean runs per side per step %.1f",
			100*broken, s.named, s.trials, s.within, s.cands, s.histogram(), float64(s.reps)/float64(len(s.steps))/meanSteps(s))
		if float64(s.within+s.cands) < 0.95*float64(s.trials) {
			t.Errorf("%.0f%% not building: culprit named within 14 steps (or among the candidates) in %d of %d histories, want >= 95%%",
				100*broken, s.within+s.cands, s.trials)
		}
	}
}

// docRow is s as a row of docs/bisect.md's simulation table, of
// histories in which a share broken of the commits does not build.
func (s bisectStats) docRow(broken float64) string {
	pct := func(n int) string { return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(s.trials)) }
	count := map[int]int{}
	for _, n := range s.steps {
		count[n]++
	}
	var hist []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		hist = append(hist, fmt.Sprintf("%d: %d", k, count[k]))
	}
	return fmt.Sprintf("| %.0f%% | %s | %s | %s | %s | %.1f |", 100*broken, pct(s.named), pct(s.within), pct(s.cands),
		strings.Join(hist, ", "), float64(s.reps)/float64(len(s.steps))/meanSteps(s))
}

// docs/bisect.md's simulation table is what BenchmarkBisectSimulation
// measures with -benchtime 1x (500 histories a row, seed 1): a change to
// bisect or verdict that moves it shows here, and the failure prints
// the row to paste.
func TestBisectDocTable(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation of 2x500 bisections")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "bisect.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, broken := range []float64{0, 0.03} {
		if row := simulateBisect(500, 1024, broken, 1).docRow(broken); !strings.Contains(string(b), "\n"+row+"\n") {
			t.Errorf("docs/bisect.md's simulation table lacks the row\n%s", row)
		}
	}
}

func meanSteps(s bisectStats) float64 {
	t := 0
	for _, n := range s.steps {
		t += n
	}
	return float64(t) / float64(len(s.steps))
}

// BenchmarkBisectSimulation reports the share of histories whose culprit
// is named (within 14 steps), the mean and 95th percentile of the steps,
// and the runs per side a step takes.
func BenchmarkBisectSimulation(b *testing.B) {
	for _, broken := range []float64{0, 0.03} {
		b.Run(fmt.Sprintf("broken=%.0f%%", 100*broken), func(b *testing.B) {
			var s bisectStats
			for i := 0; b.Loop(); i++ {
				s = simulateBisect(500, 1024, broken, uint64(i)+1)
			}
			steps := slices.Sorted(slices.Values(s.steps))
			b.ReportMetric(100*float64(s.named)/float64(s.trials), "named%")
			b.ReportMetric(100*float64(s.within)/float64(s.trials), "within14%")
			b.ReportMetric(100*float64(s.cands)/float64(s.trials), "candidates%")
			b.ReportMetric(meanSteps(s), "steps")
			b.ReportMetric(float64(steps[len(steps)*95/100]), "p95steps")
			b.ReportMetric(float64(s.reps)/float64(len(s.steps))/meanSteps(s), "runs/step")
			b.ReportMetric(0, "ns/op")
			b.Logf("steps:%s; docs/bisect.md's row:\n%s", s.histogram(), s.docRow(broken))
		})
	}
}
