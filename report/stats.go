package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aclements/go-moremath/stats"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// Confidence is the least confidence level of the median intervals: the
// order statistics give only some levels, so an interval's own level,
// Stats.CILevel, is the smallest they give at or above it for its n
// (96.9% at 6 runs, 98.4% at 7, 96.1% at 8 and 9, 97.9% at 10).
// Every output names CILevel, never Confidence (CIName, ciPct).
const Confidence = 0.95

// Stats summarizes the values of one metric over repetitions.
type Stats struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Stddev float64 `json:"stddev"` // sample standard deviation (n-1)
	CV     float64 `json:"cv"`     // Stddev / Mean, 0 when Mean is 0
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Lo and Hi bound the confidence interval of the median at level
	// CILevel, its coverage under any continuous noise (>=
	// Confidence). When n is too small for one, Lo and Hi are ±Inf and
	// CILevel is 0: there is no interval to have a level.
	Lo      float64 `json:"ci_lo"`
	Hi      float64 `json:"ci_hi"`
	CILevel float64 `json:"ci_level"`
	// Finite is CIFinite(), for JSON readers (which see 0 for ±Inf).
	Finite bool `json:"ci_finite"`
	// HMean is the harmonic mean, for rate metrics with positive values
	// (0 otherwise).
	HMean    float64   `json:"hmean,omitempty"`
	Values   []float64 `json:"values"`
	Warnings []string  `json:"warnings,omitempty"`
}

// CIFinite reports whether the median's confidence interval is finite.
func (s *Stats) CIFinite() bool { return !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) }

// Summarize computes Stats of values (which it does not modify) with
// go-moremath. rate asks for the harmonic mean too. The median's
// confidence interval is the distribution-free order-statistic interval
// (moremath's QuantileCI, as benchstat's AssumeNothing).
func Summarize(values []float64, rate bool) Stats {
	v := slices.Clone(values)
	slices.Sort(v)
	st := Stats{N: len(v), Values: v}
	if len(v) == 0 {
		st.Warnings = []string{"no samples"}
		st.Lo, st.Hi = math.Inf(-1), math.Inf(1)
		return st // CILevel 0: no interval
	}
	s := stats.Sample{Xs: v, Sorted: true}
	st.Mean = s.Mean()
	st.Min, st.Max = v[0], v[len(v)-1]
	if len(v) > 1 {
		st.Stddev = s.StdDev()
	}
	if st.Mean != 0 {
		st.CV = st.Stddev / math.Abs(st.Mean)
	}
	if rate && st.Min > 0 {
		inv := 0.0
		for _, x := range v {
			inv += 1 / x
		}
		st.HMean = float64(len(v)) / inv
	}
	ci := stats.QuantileCI(len(v), 0.5, Confidence)
	st.Median, st.Lo, st.Hi = ci.SampleCI(s)
	st.CILevel = ci.Confidence
	st.Finite = st.CIFinite()
	if !st.Finite {
		st.CILevel = 0
		st.Warnings = append(st.Warnings, fmt.Sprintf("need >= %d samples for confidence interval at level %v", minCIRuns, Confidence))
	}
	return st
}

// ciPct is the name of a median interval's level: its coverage in
// percent, rounded ("97%" at 6 runs).
func ciPct(level float64) string { return fmt.Sprintf("%.0f%%", 100*level) }

// CIName names the confidence intervals of the median in sts (the finite
// ones) by their own levels: "97% confidence interval of the median"
// when those round to one, else "confidence interval of the median (97%
// at 6 runs, 98% at 7 and 10 runs)"; "" when none is finite.
func CIName(sts []*Stats) string {
	byPct := map[string][]int{} // runs that give each level
	var pcts []string           // in the order of their fewest runs
	for _, st := range sts {
		if st == nil || !st.CIFinite() {
			continue
		}
		p := ciPct(st.CILevel)
		if !slices.Contains(byPct[p], st.N) {
			byPct[p] = append(byPct[p], st.N)
		}
	}
	for p, ns := range byPct {
		slices.Sort(ns)
		pcts = append(pcts, p)
	}
	slices.SortFunc(pcts, func(a, b string) int { return byPct[a][0] - byPct[b][0] })
	switch len(pcts) {
	case 0:
		return ""
	case 1:
		return pcts[0] + " confidence interval of the median"
	}
	parts := make([]string, len(pcts))
	for i, p := range pcts {
		ns := make([]string, len(byPct[p]))
		for j, n := range byPct[p] {
			ns[j] = fmt.Sprint(n)
		}
		parts[i] = p + " at " + units.AndList(ns) + " runs"
	}
	return "confidence interval of the median (" + strings.Join(parts, ", ") + ")"
}

// Delta compares two samples of one metric.
type Delta struct {
	Base Stats `json:"base"`
	New  Stats `json:"new"`
	// Pct is the change of the median in percent ((new/base - 1) * 100);
	// ±Inf when the base median is 0 and the new one is not.
	Pct float64 `json:"pct"`
	// P is the verdict's own p-value (Verdict.P: the two-sided rank test
	// of no shift) and Alpha the level of the look the runs reached (0
	// below the first look): P <= Alpha exactly when DIFFERENT.
	P     float64 `json:"p"`
	Alpha float64 `json:"alpha"`
	// Significant is DIFFERENT (P <= Alpha).
	Significant bool `json:"significant"`
	// TooFew means fewer runs per side than the plan's first look: the
	// verdict is UNKNOWN by construction, whatever the values.
	TooFew bool `json:"too_few"`
	// Verdict is SAME, DIFFERENT or UNKNOWN by the sequential plan
	// (verdict.Default) with the shift's confidence interval: the rule of
	// every change column and of compare's gates.
	Verdict  verdict.Result `json:"verdict"`
	Warnings []string       `json:"warnings,omitempty"`
}

// Compare summarizes base and new and gives the verdict with minimum
// effect min (DefaultMinEffect when zero).
func Compare(base, new []float64, rate bool, min MinEffect) Delta {
	return compareStats(Summarize(base, rate), Summarize(new, rate), min, nil)
}

// CompareScaled is Compare whose early looks use scale, the noise of the
// metric's past runs (nil: none; see verdict.Scale).
func CompareScaled(base, new []float64, rate bool, min MinEffect, scale *verdict.Scale) Delta {
	return compareStats(Summarize(base, rate), Summarize(new, rate), min, scale)
}

// compareStats is CompareScaled of two summaries (their sorted Values).
func compareStats(base, new Stats, min MinEffect, scale *verdict.Scale) Delta {
	d := Delta{Base: base, New: new}
	d.Verdict = verdict.DecideWith(base.Values, new.Values, min.verdict(), nil, scale)
	d.P, d.Significant = d.Verdict.P, d.Verdict.Verdict == verdict.Different
	if d.Verdict.Look >= 0 {
		d.Alpha = 1 - d.Verdict.Level
	}
	switch {
	case d.Base.Median == d.New.Median:
		d.Pct = 0
	case d.Base.Median == 0:
		d.Pct = math.Inf(int(math.Copysign(1, d.New.Median)))
	default:
		d.Pct = (d.New.Median/d.Base.Median - 1) * 100
	}
	if base.N == 0 || new.N == 0 {
		d.Warnings = append(d.Warnings, "nothing to compare: one side has no samples")
		d.TooFew = true
		return d
	}
	// Too few runs get the table's "? = UNKNOWN" note (fewRunsNotes).
	d.TooFew = d.Verdict.Look < 0
	return d
}

// DeltaString is the change column's text, one rule for every table: the
// signed percent change of the median when the verdict is DIFFERENT,
// "same" when SAME (the change is shown smaller than the minimum effect),
// "?" before the change so far when UNKNOWN at a look of the plan,
// "? -3.10%", and the change with the runs per side below the first look,
// "-100.00% (1 run)": too few runs for any verdict, which the change
// column says rather than a bare "?"; "-" when a side has no runs (no
// change from or to nothing).
func (d *Delta) DeltaString() string {
	if d.Base.N == 0 || d.New.N == 0 {
		return "-"
	}
	switch d.Verdict.Verdict {
	case verdict.Different:
		return units.Pct(d.Pct)
	case verdict.Same:
		return "same"
	}
	pct := d.pctText()
	if n := min(d.Base.N, d.New.N); d.TooFew && n > 0 {
		return pct + " (" + units.Plural(n, "run") + ")"
	}
	if pct == "?" {
		return pct
	}
	return "? " + pct
}

// pctText is the change of the medians, "from 0" from a base of 0, "?"
// when there is none.
func (d *Delta) pctText() string {
	return units.Pct(d.Pct)
}

// changeLegend explains the change column's marks (DeltaString) in a
// table's notes.
const changeLegend = "a bare change is DIFFERENT, \"same\" SAME (shown smaller than the minimum effect), \"? \" UNKNOWN (the runs cannot decide yet); docs/compare.md"

// Different reports whether the verdict is DIFFERENT.
func (d *Delta) Different() bool { return d.Verdict.Verdict == verdict.Different }

// PString is "p=0.008 n=5" (or "n=5+4" for unequal sizes), like
// benchstat.
func (d *Delta) PString() string {
	n := fmt.Sprintf("n=%d", d.Base.N)
	if d.Base.N != d.New.N {
		n = fmt.Sprintf("n=%d+%d", d.Base.N, d.New.N)
	}
	return fmt.Sprintf("p=%.3f %s", d.P, n)
}

// FisherExact is the two-sided p-value of Fisher's exact test on the 2×2
// table of a of n1 samples against b of n2: the probability, with a+b
// counted among n1+n2 samples at random, of a split as unlikely as this
// one or less likely (go-moremath's hypergeometric distribution). 1 when
// a side has no samples.
func FisherExact(a, n1, b, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	d := stats.HypergeometicDist{N: n1 + n2, K: a + b, Draws: n1}
	lo, hi := d.Bounds()
	// Tables as likely as the observed one count too: 1e-7 absorbs the
	// rounding of their log-space probabilities.
	at := d.PMF(float64(a)) * (1 + 1e-7)
	p := 0.0
	for k := lo; k <= hi; k++ {
		if pk := d.PMF(k); pk <= at {
			p += pk
		}
	}
	return min(p, 1)
}
