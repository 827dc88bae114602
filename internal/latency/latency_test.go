package latency

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aclements/go-moremath/stats"

	"github.com/vnetbench/vnetbench/internal/metric"
)

// The 95% interval of a median of 100 draws is the 40th to the 61st
// order statistic (tables of the sign-test interval, e.g. Conover,
// Practical Nonparametric Statistics, table A3).
func TestRankBoundsMedian100(t *testing.T) {
	l, u := rankBounds(100, 0.5, 0.025)
	if l != 40 || u != 61 {
		t.Fatalf("median of 100: ranks %d..%d, want 40..61", l, u)
	}
}

func TestPercentileTooFewForP999(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	v, iv := Percentile(xs, 0.999)
	if v != 999 {
		t.Errorf("p99.9 of 1..1000 = %v, want 999", v)
	}
	if !math.IsNaN(iv.Hi) || math.IsNaN(iv.Lo) || iv.Lo > v {
		t.Errorf("p99.9 of 1000 values: interval %v, want a lower bound <= 999 and no upper bound", iv)
	}
	if got := iv.String(); !strings.HasSuffix(got, "..?") {
		t.Errorf("String() = %q, want a missing upper bound shown as ?", got)
	}
}

// The interval covers the true quantile at least as often as it says:
// exponential draws (a latency-like tail), p99 of 2000, 400 trials.
func TestPercentileCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, trials, q = 2000, 400, 0.99
	truth := -math.Log(1 - q) // exponential(1) quantile
	covered := 0
	for range trials {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.ExpFloat64()
		}
		slices.Sort(xs)
		_, iv := Percentile(xs, q)
		if math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) {
			t.Fatalf("p99 of %d: interval %v has a missing bound", n, iv)
		}
		if iv.Lo <= truth && truth <= iv.Hi {
			covered++
		}
	}
	if frac := float64(covered) / trials; frac < 0.93 || frac > 0.995 {
		t.Errorf("coverage %.3f over %d trials, want about %.2f (at least, by construction)", frac, trials, Confidence)
	}
}

func rec(seq uint32, phase string, rttUS int64, lost bool) Record {
	r := Record{Seq: seq, Phase: phase, Size: 64, Sent: 1_000_000_000 + int64(seq)*5_000_000, Lost: lost}
	if !lost {
		r.Sched = r.Sent + 10_000
		r.Soft = r.Sched + int64(seq%4)*1_000
		r.Recv = r.Sent + rttUS*1000
	}
	return r
}

func TestSummarize(t *testing.T) {
	var recs []Record
	for i := range 10 {
		recs = append(recs, rec(uint32(i), PhaseIdle, 100, false))
	}
	for i := 10; i < 20; i++ {
		recs = append(recs, rec(uint32(i), PhaseWarmup, 9000, false)) // left out
	}
	for i := 20; i < 120; i++ {
		recs = append(recs, rec(uint32(i), PhaseLoad, int64(200+i), i%25 == 0))
	}
	s := Summarize(recs)
	if s.Sent != 100 || s.Answered != 96 {
		t.Errorf("sent %d answered %d, want 100 and 96", s.Sent, s.Answered)
	}
	want := map[metric.Key]float64{
		"probe_loss_frac": 0.04, "rtt_idle_p50_s": 100e-6, "rtt_max_s": 319e-6,
		"rtt_p50_s":        269e-6, // 48th of the 96 answered RTTs 220..319 without 225, 250, 275, 300
		"qdisc_wait_p99_s": 3e-6,
	}
	for k, v := range want {
		if got, ok := s.Metrics[k]; !ok || math.Abs(got-v) > 1e-12 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if got := s.Metrics["rtt_inflation_s"]; math.Abs(got-169e-6) > 1e-12 {
		t.Errorf("rtt_inflation_s = %v, want p50 - idle p50 = 169µs", got)
	}
	if s.Metrics["rtt_p99_s"] < s.Metrics["rtt_p50_s"] || s.Metrics["rtt_max_s"] < s.Metrics["rtt_p999_s"] {
		t.Errorf("percentiles out of order: %v", s.Metrics)
	}
	if _, ok := s.Labels()["rtt_p99_s_ci95"]; !ok {
		t.Errorf("labels %v lack rtt_p99_s_ci95", s.Labels())
	}
}

func TestSummarizeNoLoad(t *testing.T) {
	s := Summarize([]Record{rec(0, PhaseIdle, 50, false)})
	if _, ok := s.Metrics["rtt_p50_s"]; ok {
		t.Errorf("metrics %v: a probe without load phase has no loaded RTT", s.Metrics)
	}
	if _, ok := s.Metrics["probe_loss_frac"]; ok {
		t.Errorf("metrics %v: no load probes sent, so no loss fraction", s.Metrics)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	recs := []Record{rec(0, PhaseIdle, 80, false), rec(1, PhaseWarmup, 90, false), rec(2, PhaseLoad, 0, true)}
	var b bytes.Buffer
	if err := WriteCSV(&b, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "seq,phase,size,sent_ns,sched_ns,soft_ns,recv_ns,lost\n") {
		t.Errorf("header: %q", strings.SplitN(b.String(), "\n", 2)[0])
	}
	got, err := ReadCSV(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, recs) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, recs)
	}
}

func TestReadCSVBadLine(t *testing.T) {
	in := "seq,phase,size,sent_ns,sched_ns,soft_ns,recv_ns,lost\n0,idle,64,1,2,3,4,0\n1,busy,64,1,2,3,4,0\n"
	_, err := ReadCSV(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "probes.csv:3: phase \"busy\"") {
		t.Errorf("err = %v, want one naming line 3 and the bad phase", err)
	}
}

// One 60 s sample at the default 5 ms (12,000 probes) gives a p99.9 with
// both bounds (the goal); 15 s (3,000) gives none above: an upper
// bound needs 1 - 0.999^n >= 0.975, n >= 3,687.
func TestP999BoundsFrom60s(t *testing.T) {
	for n, wantHi := range map[int]bool{12000: true, 3700: true, 3600: false, 3000: false} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i)
		}
		_, iv := Percentile(xs, 0.999)
		if math.IsNaN(iv.Lo) || math.IsNaN(iv.Hi) == wantHi {
			t.Errorf("p99.9 of %d probes: interval %v, want an upper bound: %v", n, iv, wantHi)
		}
	}
}

// A long run's probes (a tcp_rr sample of a few hundred thousand round
// trips) get an interval: go-moremath's binomial CDF panicked there
// ("betainc: a or b too big") near the median of 233,000. The ranks are
// the normal approximation's within a rank or two: n q ± 1.96 sqrt(n q (1-q)).
func TestRankBoundsLargeN(t *testing.T) {
	for _, n := range []int{233000, 1000000} {
		for _, q := range []float64{0.5, 0.99, 0.999} {
			l, u := rankBounds(n, q, 0.025)
			half := 1.959964 * math.Sqrt(float64(n)*q*(1-q))
			wantL, wantU := float64(n)*q-half, float64(n)*q+half+1
			if math.Abs(float64(l)-wantL) > 3 || math.Abs(float64(u)-wantU) > 3 {
				t.Errorf("n %d q %g: ranks %d..%d, want about %.0f..%.0f", n, q, l, u, wantL, wantU)
			}
		}
	}
}

// The table agrees with go-moremath's binomial CDF wherever that converges.
func TestRankBoundsMatchBetaInc(t *testing.T) {
	for _, n := range []int{1, 2, 5, 30, 100, 1000, 3700, 20000} {
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
			below := func(j int) float64 { return stats.BinomialDist{N: n, P: q}.CDF(float64(j - 1)) }
			wl := sort.Search(n+1, func(i int) bool { return below(i+1) > 0.025 })
			wu := min(sort.Search(n+1, func(i int) bool { return below(i+1) >= 0.975 })+1, n+1)
			if l, u := rankBounds(n, q, 0.025); l != wl || u != wu {
				t.Errorf("n %d q %g: ranks %d..%d, the incomplete beta's %d..%d", n, q, l, u, wl, wu)
			}
		}
	}
}

// The interval's cost at a long tcp_rr sample's size (the table of
// binomial probabilities is O(n), like the sort before it).
func BenchmarkPercentile233k(b *testing.B) {
	xs := make([]float64, 233000)
	for i := range xs {
		xs[i] = float64(i)
	}
	for b.Loop() {
		Percentile(xs, 0.99)
	}
}

// Quantile is Percentile's value, without the interval's O(n) table.
func TestQuantileIsPercentilesValue(t *testing.T) {
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("no values: want NaN")
	}
	for _, n := range []int{1, 2, 7, 100, 1001} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i)
		}
		for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999} {
			if v, _ := Percentile(xs, q); Quantile(xs, q) != v {
				t.Errorf("n %d q %g: Quantile %v, Percentile %v", n, q, Quantile(xs, q), v)
			}
		}
	}
}

// At q 0 and 1 the count below is 0 or n for sure: the table is 0s and
// 1s, not NaN (0 × log 0).
func TestBinomialBelowEdges(t *testing.T) {
	for q, want := range map[float64][]float64{0: {0, 1, 1, 1, 1}, 1: {0, 0, 0, 0, 1}} {
		if got := binomialBelow(3, q); !slices.Equal(got, want) {
			t.Errorf("binomialBelow(3, %g) = %v, want %v", q, got, want)
		}
	}
}
