package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
)

func TestParseGates(t *testing.T) {
	g, err := ParseGates("tx_pps<-3%, lost_pps>+0%,perf.cycles@vhost>5.5%")
	if err != nil {
		t.Fatal(err)
	}
	want := []Gate{{"tx_pps", '<', -3}, {"lost_pps", '>', 0}, {"perf.cycles@vhost", '>', 5.5}}
	if len(g) != len(want) {
		t.Fatalf("got %v", g)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("gate %d = %+v, want %+v", i, g[i], want[i])
		}
	}
	if _, err := ParseGates("tx_pps<-3%,tx_pps>+20%,lost_pps<-99.5%"); err != nil {
		t.Errorf("a gate each way: %v", err)
	}
	for _, bad := range []string{"tx_pps", "tx_pps<-3", "tx_pps<<3%", "<3%", "tx_pps=3%", ",", "tx_pps<-3%,tx_pps<-5%", "tx_pps<-200%", "tx_pps<-100%"} {
		_, err := ParseGates(bad)
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("ParseGates(%q) = %v, want bad input", bad, err)
		}
	}
}

func loadSet(t *testing.T, dirs ...string) *results.Set {
	t.Helper()
	s, err := results.Load(run(dirs...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// repeated is set with every sample k times (as k runs of the same
// values): the generated fixtures' 5 runs are below the 10 per side a
// DIFFERENT verdict needs.
func repeated(set *results.Set, k int) *results.Set {
	out := *set
	out.Samples = nil
	for i := range k {
		for _, s := range set.Samples {
			s.Rep += i * 1000
			out.Samples = append(out.Samples, s)
		}
	}
	return &out
}

// firstRuns is set with the first k runs of each cell and kernel.
func firstRuns(set *results.Set, k int) *results.Set {
	out := *set
	out.Samples = nil
	for _, s := range set.Samples {
		if s.Rep < k {
			out.Samples = append(out.Samples, s)
		}
	}
	return &out
}

func TestCompareRunsGates(t *testing.T) {
	gates, _ := ParseGates("tx_pps<-3%,lost_pps>+0%")
	// patched -> stock is a regression: tx_pps drops 5-20%, lost_pps rises.
	res, err := CompareRuns(repeated(loadSet(t, "patched"), 2), repeated(loadSet(t, "stock"), 2), CompareOptions{Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	err = res.Err()
	var ge *GateError
	if !errors.As(err, &ge) || errors.Is(err, fault.ErrInput) || errors.Is(err, fault.ErrCapability) {
		t.Fatalf("regression: err %v, want a GateError (a measured failure, not bad input)", err)
	}
	if len(ge.Tripped) != 8 {
		t.Errorf("%d tripped decisions, want 8 (2 metrics x 4 cells)", len(ge.Tripped))
	}

	// stock -> patched improves both: nothing trips.
	res, err = CompareRuns(repeated(loadSet(t, "stock"), 2), repeated(loadSet(t, "patched"), 2), CompareOptions{Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Errorf("improvement tripped a gate: %v", err)
	}
	if len(res.Decisions) != 8 {
		t.Errorf("%d decisions, want 8", len(res.Decisions))
	}

	// A run against itself: no change, exit 0 (default gates).
	// SAME needs more runs than a change does: 10 copies of 5 runs.
	res, err = CompareRuns(repeated(loadSet(t, "stock"), 10), repeated(loadSet(t, "stock"), 10), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil || !res.DefaultGates || len(res.Decisions) == 0 {
		t.Errorf("no change: err %v, default gates %v, %d decisions", err, res.DefaultGates, len(res.Decisions))
	}

	// A threshold wider than the change: tap+vhost t1 drops ~5%, gate at -30%.
	wide, _ := ParseGates("tx_pps<-30%")
	res, err = CompareRuns(repeated(loadSet(t, "patched"), 10), repeated(loadSet(t, "stock"), 10), CompareOptions{Gates: wide})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Errorf("change within threshold tripped: %v", err)
	}
}

func TestCompareRunsTooFew(t *testing.T) {
	gates, _ := ParseGates("tx_pps<-3%")
	// few-b is 15% slower: 3 vs 3 runs call it at the early look.
	res, err := CompareRuns(loadSet(t, "few-a"), loadSet(t, "few-b"), CompareOptions{Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	var ge *GateError
	if err := res.Err(); !errors.As(err, &ge) || !strings.Contains(res.Decisions[0].String(), "-15.35% [") {
		t.Fatalf("3 runs per side, -15%%: error %v (%s), want a GateError", err, res.Decisions[0].String())
	}
	// 2 runs per side are too few for any verdict: UNKNOWN, an error of
	// its own, never a silent ok.
	res, err = CompareRuns(firstRuns(loadSet(t, "few-a"), 2), firstRuns(loadSet(t, "few-b"), 2), CompareOptions{Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	var ue *UndecidedError
	if err := res.Err(); !errors.As(err, &ue) || !errors.Is(err, fault.ErrUndecided) {
		t.Fatalf("too few samples: error %v, want an UndecidedError", err)
	}
	d := res.Decisions[0]
	if !d.Undecided() || !strings.HasSuffix(d.Delta.DeltaString(), "% (2 runs)") || !strings.Contains(d.String(), "run at least 3 per side") {
		t.Errorf("decision %q (%q), want UNKNOWN asking for 3 runs per side", d.String(), d.Delta.DeltaString())
	}
	var b strings.Builder
	WriteDecisions(&b, res)
	if !strings.Contains(b.String(), "tx_pps<-3%: tap/pktgen-t1 ") || !strings.Contains(b.String(), "n=2: UNKNOWN") || !strings.Contains(b.String(), "verdict: UNKNOWN") {
		t.Errorf("decisions output:\n%s", b.String())
	}
}

func TestCompareRunsBadInput(t *testing.T) {
	for _, opt := range []CompareOptions{
		{Metrics: []string{"tx_ppz"}},
		{Gates: []Gate{{"nope", '<', -1}}},
	} {
		_, err := CompareRuns(loadSet(t, "stock"), loadSet(t, "patched"), opt)
		if !errors.Is(err, fault.ErrInput) {
			t.Errorf("CompareRuns(%+v) = %v, want bad input", opt, err)
		}
	}
}

// Go benchmark files compare like run directories: a per-op cost that fell
// is significantly better.
func TestBuildFromBenchfmt(t *testing.T) {
	set, err := results.Load("testdata/handwritten/gotest.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(repeated(set, 3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range r.Comparisons {
		if c.Metric == "ns/op" {
			found = true
			if c.Verdict != "better" || !c.Delta.Significant {
				t.Errorf("ns/op comparison %+v, want a significant improvement", c)
			}
		}
	}
	if !found {
		t.Error("no ns/op comparison")
	}
}
