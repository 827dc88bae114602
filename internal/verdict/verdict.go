package verdict

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aclements/go-moremath/stats"
)

// Verdict is the answer of a comparison.
type Verdict string

const (
	// Same: the change is smaller than the minimum effect that matters
	// (an equivalence test), not merely "not significant".
	Same Verdict = "SAME"
	// Different: the change is significant at the plan's level.
	Different Verdict = "DIFFERENT"
	// Unknown: the runs so far cannot tell; more repetitions may.
	Unknown Verdict = "UNKNOWN"
	// Missing: a side has no values to compare (its cell is absent, failed
	// or n/a). Decide never returns it; report's gates do, and fail on it.
	Missing Verdict = "MISSING"
)

// MinEffect is the smallest change that matters: Value percent of the base
// median, or Value times the pooled interquartile range when IQR.
type MinEffect struct {
	Value float64
	IQR   bool
}

// DefaultMinEffect is half the pooled interquartile range: Pinpoint's unit
// of effect size, and the smallest shift the default plan finds 90% of the
// time in at most 80 runs per side.
var DefaultMinEffect = MinEffect{Value: 0.5, IQR: true}

// ParseMinEffect parses "2%" or "0.5iqr".
func ParseMinEffect(s string) (MinEffect, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	m := MinEffect{}
	switch {
	case strings.HasSuffix(t, "%"):
		t = strings.TrimSuffix(t, "%")
	case strings.HasSuffix(t, "iqr"):
		t, m.IQR = strings.TrimSuffix(t, "iqr"), true
	default:
		return m, fmt.Errorf("minimum effect %q: want a percent of the base median (\"2%%\") or a multiple of the interquartile range (\"0.5iqr\")", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return m, fmt.Errorf("minimum effect %q: want a positive number before %% or iqr, e.g. \"2%%\" or \"0.5iqr\"", s)
	}
	m.Value = v
	return m, nil
}

func (m MinEffect) String() string {
	if m.IQR {
		return strconv.FormatFloat(m.Value, 'g', -1, 64) + "iqr"
	}
	return strconv.FormatFloat(m.Value, 'g', -1, 64) + "%"
}

// Result is a decision with its evidence.
type Result struct {
	Verdict Verdict `json:"verdict"`
	// P is the two-sided p-value of the look's test of no shift: at a
	// rank look the Mann-Whitney z with mid-ranks, tie-corrected variance
	// and continuity correction (normal approximation), at an early look
	// the pooled two-sample t test, or the exact rank test's when the
	// ranges are disjoint and it decides (Plan.DisjointAlpha). DIFFERENT
	// exactly when P is at most 1-Level, the level of the look's test.
	P float64 `json:"p"`
	// Shift is the estimate of new - base, Lo and Hi its confidence
	// interval at Level (the look's, so it excludes 0 exactly when
	// DIFFERENT up to ties): at a rank look the Hodges-Lehmann shift (the
	// median of all pairwise differences) and its Moses interval, at an
	// early look the difference of the means and its t interval (when
	// disjoint ranges decide, the Hodges-Lehmann shift and the range of
	// all pairwise differences). Pct,
	// PctLo and PctHi are the same in percent of the base median.
	Shift float64 `json:"shift"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Level float64 `json:"level"`
	Pct   float64 `json:"pct"`
	PctLo float64 `json:"pct_lo"`
	PctHi float64 `json:"pct_hi"`
	// NBase and NNew are the sample sizes, Look the index in Plan.Looks
	// of the look they reached (-1: fewer runs than the first look; below
	// Plan.Early an early look), NextN the runs per side the next look
	// needs (0 when decided or past the last look).
	NBase int `json:"n_base"`
	NNew  int `json:"n_new"`
	Look  int `json:"look"`
	NextN int `json:"next_n,omitempty"`
	// Min is the minimum effect in the metric's unit.
	Min    float64 `json:"min_effect"`
	Reason string  `json:"reason"`
	// Scale, when not "", says that an early look used a history scale
	// and which (Scale.String): how many past runs, from where.
	Scale string `json:"scale,omitempty"`
}

// Decide compares base and new under plan (Default when nil) with the
// minimum effect min. Only min(len(base), len(new)) decides the look: the
// data of a fixed-size run are judged as if it had stopped at that look,
// which keeps the false-DIFFERENT level whatever produced them.
func Decide(base, new []float64, min MinEffect, plan *Plan) Result {
	return DecideWith(base, new, min, plan, nil)
}

// DecideWith is Decide with the noise scale of the metric's past runs
// (nil: none), which the early looks use (see Scale).
func DecideWith(base, new []float64, min MinEffect, plan *Plan, scale *Scale) Result {
	if plan == nil {
		plan = Default
	}
	b, n := sorted(base), sorted(new)
	r := Result{NBase: len(b), NNew: len(n), Look: plan.Look(min2(len(b), len(n))), P: 1}
	r.Pct, r.PctLo, r.PctHi = math.NaN(), math.NaN(), math.NaN()
	r.Lo, r.Hi = math.Inf(-1), math.Inf(1)
	if len(b) == 0 || len(n) == 0 {
		r.Verdict, r.Reason = Unknown, "a side has no runs"
		return r
	}
	r.Min = min.abs(b, n)
	switch {
	case r.Look < 0:
		r.Shift = hodgesLehmann(b, n)
		r.P = 2 * normalSF(math.Abs(rankZ(b, n, 0)))
		r.Verdict, r.NextN = Unknown, plan.Looks[0]
		r.Reason = fmt.Sprintf("n<%d: fewer runs per side than the first look", plan.Looks[0])
		r.setPct(b)
		return r
	case r.Look < plan.Early:
		r.decideEarly(b, n, plan, scale)
		r.setPct(b)
		return r
	}
	r.Shift = hodgesLehmann(b, n)
	r.P = 2 * normalSF(math.Abs(rankZ(b, n, 0)))
	c := plan.Bound(r.Look)
	r.Level = 2*normalCDF(c) - 1
	r.Lo, r.Hi = mosesCI(b, n, c)
	r.Verdict, r.Reason = decide(b, n, r.Min, c, plan)
	if r.Verdict == Unknown && r.Look < len(plan.Looks)-1 {
		r.NextN = plan.Looks[r.Look+1]
	}
	r.setPct(b)
	return r
}

// decide is the decision at a look with critical |z| c, on sorted samples.
func decide(b, n []float64, min, c float64, plan *Plan) (Verdict, string) {
	z := rankZ(b, n, 0)
	if math.Abs(z) >= c {
		return Different, fmt.Sprintf("|z|=%.2f >= %.2f", math.Abs(z), c)
	}
	if constantEqual(b, n) {
		return Same, "every run of both sides has the same value"
	}
	if min > 0 && same(b, n, z, min, plan) {
		return Same, fmt.Sprintf("the shift is within ±%s (two one-sided tests at %g; estimate within %g of it)", fmtG(min), plan.SameAlpha, plan.SameEstimate)
	}
	return Unknown, "neither a significant change nor one shown smaller than the minimum effect"
}

// DecideFast is Decide's verdict alone, for simulations: it skips the
// estimate and its interval. base and new must be sorted.
func DecideFast(b, n []float64, min MinEffect, plan *Plan) Verdict {
	return DecideFastWith(b, n, min, plan, nil)
}

// DecideFastWith is DecideWith's verdict alone; base and new sorted.
func DecideFastWith(b, n []float64, min MinEffect, plan *Plan, scale *Scale) Verdict {
	k := plan.Look(min2(len(b), len(n)))
	switch {
	case k < 0:
		return Unknown
	case k < plan.Early:
		if constantEqual(b, n) {
			return Same
		}
		if v, _, ok := scaledTest(b, n, plan.scaledAlpha(k), scale, k < plan.ScaledMedian); ok {
			return v
		}
		v, _, _ := earlyTest(b, n, plan.EarlyAlpha[k])
		if v == Unknown && plan.DisjointAlpha > 0 && disjointP(b, n) <= plan.DisjointAlpha {
			return Different
		}
		return v
	}
	v, _ := decide(b, n, min.abs(b, n), plan.Bound(k), plan)
	return v
}

func (r *Result) setPct(b []float64) {
	med := median(b)
	if med == 0 {
		return
	}
	r.Pct = 100 * r.Shift / math.Abs(med)
	r.PctLo = 100 * r.Lo / math.Abs(med)
	r.PctHi = 100 * r.Hi / math.Abs(med)
}

// abs is the minimum effect in the metric's unit for sorted b and n.
func (m MinEffect) abs(b, n []float64) float64 {
	if m.IQR {
		return m.Value * (IQR(b) + IQR(n)) / 2
	}
	return m.Value / 100 * math.Abs(median(b))
}

// IQR is the interquartile range of sorted v (go-moremath's quantiles,
// Hyndman and Fan's R8).
func IQR(v []float64) float64 { return sample(v).IQR() }

// Quantile is the q-quantile of sorted v (go-moremath's, R8; the median is
// the usual one).
func Quantile(v []float64, q float64) float64 { return sample(v).Quantile(q) }

func median(v []float64) float64 { return Quantile(v, 0.5) }

// sample is sorted v as a go-moremath sample.
func sample(v []float64) stats.Sample { return stats.Sample{Xs: v, Sorted: true} }

// sorted returns the values of v that are numbers, sorted.
func sorted(v []float64) []float64 {
	s := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	slices.Sort(s)
	return s
}

func min2(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func constantEqual(b, n []float64) bool {
	return b[0] == b[len(b)-1] && n[0] == n[len(n)-1] && b[0] == n[0]
}

func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// MarshalJSON writes the non-finite numbers (an infinite interval, a change
// of a zero median) as null: JSON has no NaN or infinity.
func (r Result) MarshalJSON() ([]byte, error) {
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		Verdict Verdict  `json:"verdict"`
		P       float64  `json:"p"`
		Shift   *float64 `json:"shift"`
		Lo      *float64 `json:"lo"`
		Hi      *float64 `json:"hi"`
		Level   float64  `json:"level"`
		Pct     *float64 `json:"pct"`
		PctLo   *float64 `json:"pct_lo"`
		PctHi   *float64 `json:"pct_hi"`
		NBase   int      `json:"n_base"`
		NNew    int      `json:"n_new"`
		Look    int      `json:"look"`
		NextN   int      `json:"next_n,omitempty"`
		Min     *float64 `json:"min_effect"`
		Reason  string   `json:"reason"`
		Scale   string   `json:"scale,omitempty"`
	}{r.Verdict, r.P, num(r.Shift), num(r.Lo), num(r.Hi), r.Level, num(r.Pct), num(r.PctLo), num(r.PctHi),
		r.NBase, r.NNew, r.Look, r.NextN, num(r.Min), r.Reason, r.Scale})
}

// same is the equivalence test: the shift is shown above -min and below
// +min by the shifted rank tests at plan.SameAlpha each (TOST), and, with
// plan.SameEstimate, the rank statistic z of no shift is within that
// fraction of half the distance between the two shifted statistics (the
// estimate within SameEstimate*min, on the rank scale).
func same(b, n []float64, z, min float64, plan *Plan) bool {
	zs := -normalQuantile(plan.SameAlpha)
	lo, hi := rankZ(b, n, min), rankZ(b, n, -min)
	if lo > -zs || hi < zs {
		return false
	}
	return plan.SameEstimate <= 0 || math.Abs(z) <= plan.SameEstimate*(hi-lo)/2
}
