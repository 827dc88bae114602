package history

import (
	"encoding/json"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Better says which way a metric improves.
type Better int

// Directions of a metric.
const (
	Neutral Better = iota
	HigherIsBetter
	LowerIsBetter
)

// Point is one run's value of a series.
type Point struct {
	// Label names the point: the kernel's commit, release or config, a
	// run id, or a CSV row's first column.
	Label string
	// Time is when the run was recorded (zero when unknown).
	Time time.Time
	// Value is the point's value; NaN means missing.
	Value float64
	// Emulated says whether the run measured it under emulation.
	Emulated Emulation
}

// Emulation says whether a point was measured under emulation (QEMU
// TCG, no KVM), where its numbers measure the emulator, not the kernel.
type Emulation int8

// Emulation of a point: unknown for a CSV row and for a run indexed
// before the index kept it (the zero value, so nothing guesses "no").
const (
	EmulationUnknown Emulation = iota
	NotEmulated
	Emulated
)

// EmulationOf is the Emulation of a point known or not to have been
// emulated.
func EmulationOf(known, emulated bool) Emulation {
	switch {
	case !known:
		return EmulationUnknown
	case emulated:
		return Emulated
	}
	return NotEmulated
}

// Emulation summaries of points (Summarize), as the JSON writes them.
const (
	EmulatedAll     = "all"     // every point emulated
	EmulatedNone    = "none"    // no point emulated
	EmulatedSome    = "some"    // some points emulated, others not or unknown
	EmulatedUnknown = "unknown" // no point emulated, some unknown
)

// Summarize says whether pts were measured under emulation: EmulatedAll,
// EmulatedNone, EmulatedSome or EmulatedUnknown.
func Summarize(pts []Point) string {
	var yes, no int
	for _, p := range pts {
		switch p.Emulated {
		case Emulated:
			yes++
		case NotEmulated:
			no++
		}
	}
	switch {
	case yes > 0 && yes == len(pts):
		return EmulatedAll
	case yes > 0:
		return EmulatedSome
	case no > 0 && no == len(pts):
		return EmulatedNone
	}
	return EmulatedUnknown
}

// Series is one metric of one cell on one kernel label across points, in
// order. A CSV column is a series with an empty Cell and Kernel.
type Series struct {
	Scenario string
	Cell     string
	Kernel   string
	Metric   string
	Better   Better
	// Unit is the metric's base unit ("pps", "bit/s", "s", "fraction",
	// ...) from which values are written as the report tables write
	// them; "" writes plain numbers with an SI prefix ("26.7k").
	Unit   string
	Points []Point
}

// ChangePoint is a change found in a series, in the terms of its points.
type ChangePoint struct {
	// Index is the 0-based position, among the series' non-missing
	// points, of the first point after the change; Label is its label.
	Index int    `json:"index"`
	Label string `json:"label"`
	// Before and After are the medians of the segments before and after
	// the change (up to the neighbouring change points).
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Change is (After-Before)/|Before|; nil when Before is 0.
	Change *float64 `json:"change"`
	// P is the p-value (the larger of the two tests').
	P float64 `json:"p"`
	// Direction is "regression", "improvement" or, for a metric with no
	// better direction, "change".
	Direction string `json:"direction"`
	// EmulatedBefore and EmulatedAfter summarize the emulation of the
	// two segments (Summarize); EmulationChanged says their known points
	// differ (emulationChanged): an environment change (TCG on one
	// side, KVM or a host on the other), not a kernel change.
	EmulatedBefore   string `json:"emulated_before"`
	EmulatedAfter    string `json:"emulated_after"`
	EmulationChanged bool   `json:"emulation_changed"`
}

// Result is a series with its missing points dropped and its change
// points.
type Result struct {
	Series
	Changes []ChangePoint
}

// Regression reports whether c is a change for the worse.
func (c ChangePoint) Regression() bool { return c.Direction == "regression" }

// Analyze detects the change points of every series with p, on all CPUs.
// Results are in the order of series.
func Analyze(series []Series, p Params) []Result {
	out := make([]Result, len(series))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				out[i] = p.analyze(series[i])
			}
		})
	}
	for i := range series {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func (p Params) analyze(s Series) Result {
	pts := make([]Point, 0, len(s.Points))
	for _, pt := range s.Points {
		if !math.IsNaN(pt.Value) && !math.IsInf(pt.Value, 0) {
			pts = append(pts, pt)
		}
	}
	s.Points = pts
	xs := values(pts)
	cps := p.Detect(xs)
	r := Result{Series: s}
	for i, c := range cps {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = cps[i-1].Index
		}
		if i+1 < len(cps) {
			hi = cps[i+1].Index
		}
		cp := ChangePoint{Index: c.Index, Label: pts[c.Index].Label, P: c.P,
			Before: median(xs[lo:c.Index]), After: median(xs[c.Index:hi])}
		if cp.Before != 0 {
			ch := (cp.After - cp.Before) / math.Abs(cp.Before)
			cp.Change = &ch
		}
		cp.Direction = direction(s.Better, cp.After-cp.Before)
		cp.EmulatedBefore, cp.EmulatedAfter = Summarize(pts[lo:c.Index]), Summarize(pts[c.Index:hi])
		cp.EmulationChanged = emulationChanged(pts[lo:c.Index], pts[c.Index:hi])
		r.Changes = append(r.Changes, cp)
	}
	return r
}

func direction(b Better, delta float64) string {
	switch {
	case b == Neutral || delta == 0:
		return "change"
	case (b == HigherIsBetter) == (delta > 0):
		return "improvement"
	}
	return "regression"
}

func values(pts []Point) []float64 {
	xs := make([]float64, len(pts))
	for i, p := range pts {
		xs[i] = p.Value
	}
	return xs
}

// Segment is a stretch of a series between change points, with its
// median and its noise (the median absolute deviation scaled to a normal
// standard deviation).
type Segment struct {
	From, To      int // points From..To-1
	Median, Sigma float64
}

// Segments returns the segments of r between its change points.
func (r *Result) Segments() []Segment {
	xs := values(r.Points)
	bounds := []int{0}
	for _, c := range r.Changes {
		bounds = append(bounds, c.Index)
	}
	bounds = append(bounds, len(xs))
	var out []Segment
	for i := 0; i+1 < len(bounds); i++ {
		seg := xs[bounds[i]:bounds[i+1]]
		if len(seg) == 0 {
			continue
		}
		out = append(out, Segment{From: bounds[i], To: bounds[i+1], Median: median(seg), Sigma: robustSigma(seg)})
	}
	return out
}

// NewRegressions returns the regressions among r's change points whose
// index lies in the last n points.
func (r *Result) NewRegressions(n int) []ChangePoint {
	var out []ChangePoint
	for _, c := range r.Changes {
		if c.Regression() && c.Index >= len(r.Points)-n {
			out = append(out, c)
		}
	}
	return out
}

// jsonSeries is one series in the JSON contract (docs/history.md).
type jsonSeries struct {
	Metric   string        `json:"metric"`
	Cell     string        `json:"cell"`
	Kernel   string        `json:"kernel"`
	Scenario string        `json:"scenario,omitempty"`
	Points   int           `json:"points"`
	Emulated string        `json:"emulated"`
	Changes  []ChangePoint `json:"change_points"`
}

// MarshalResults encodes results in the JSON contract of docs/history.md.
func MarshalResults(rs []Result) ([]byte, error) {
	doc := struct {
		Series []jsonSeries `json:"series"`
	}{Series: make([]jsonSeries, 0, len(rs))}
	for _, r := range rs {
		cps := r.Changes
		if cps == nil {
			cps = []ChangePoint{}
		}
		doc.Series = append(doc.Series, jsonSeries{Metric: r.Metric, Cell: r.Cell, Kernel: r.Kernel,
			Scenario: r.Scenario, Points: len(r.Points), Emulated: Summarize(r.Points), Changes: cps})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// Select returns the series of all whose metric is one of metrics and
// whose cell is one of cells (either empty: any), or, when a name
// matches nothing, why: the first metric no series has, else the first
// cell no series of those metrics has, with what the history has there.
// One name of several that matched nothing was dropped in silence: a
// gate on "tx_pps,lost_ps" gated tx_pps alone.
func Select(all []Series, metrics, cells []string) ([]Series, string) {
	if len(all) == 0 {
		return nil, "the history has no series"
	}
	var has, hasCells []string
	for _, s := range all {
		if !slices.Contains(has, s.Metric) {
			has = append(has, s.Metric)
		}
		if (len(metrics) == 0 || slices.Contains(metrics, s.Metric)) && !slices.Contains(hasCells, s.Cell) {
			hasCells = append(hasCells, s.Cell)
		}
	}
	for _, m := range metrics {
		if !slices.Contains(has, m) {
			return nil, "no series match --metric " + m + ": the history has metrics " + strings.Join(has, ", ")
		}
	}
	for _, c := range cells {
		if !slices.Contains(hasCells, c) {
			return nil, "no series match --cell " + c + ": the history has cells " + strings.Join(hasCells, ", ")
		}
	}
	sel := slices.DeleteFunc(slices.Clone(all), func(s Series) bool {
		return (len(metrics) > 0 && !slices.Contains(metrics, s.Metric)) || (len(cells) > 0 && !slices.Contains(cells, s.Cell))
	})
	return sel, ""
}
