package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/lazyre"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/textsafe"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// Gate trips when Metric changes significantly beyond Threshold percent in
// the direction of Op: "tx_pps<-3%" trips on a significant drop of more
// than 3%, "lost_pps>+0%" on any significant rise.
type Gate struct {
	Metric    string
	Op        byte    // '<' or '>'
	Threshold float64 // percent, signed
}

// MarshalText writes the gate in --fail-on syntax.
func (g Gate) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

func (g Gate) String() string { return fmt.Sprintf("%s%c%+g%%", g.Metric, g.Op, g.Threshold) }

var gateRE = lazyre.New(`^\s*([A-Za-z0-9_.@:/+-]+?)\s*([<>])\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*%\s*$`)

// ParseGates parses a --fail-on list such as "tx_pps<-3%,lost_pps>+0%".
// Errors are bad input (fault.ErrInput), a list that names no gate ("",
// blank) too: it never means the default gates; so is a metric gated
// twice in one direction (one gate each way, tx_pps<-3%,tx_pps>+20%, is
// fine), and a drop of 100% or more, which no gate can see.
func ParseGates(s string) ([]Gate, error) {
	var out []Gate
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		m := gateRE().FindStringSubmatch(part)
		if m == nil {
			return nil, fault.Input("--fail-on %q: want METRIC<PCT%% or METRIC>PCT%%, e.g. 'tx_pps<-3%%,lost_pps>+0%%'", part)
		}
		th, _ := strconv.ParseFloat(m[3], 64)
		g := Gate{Metric: m[1], Op: m[2][0], Threshold: th}
		// Rates, counts and times fall by 100% at most: such a gate
		// could never trip, and a CI job would pass on anything.
		if g.Op == '<' && g.Threshold <= -100 {
			return nil, fault.Input("--fail-on %s can never trip: a metric falls by 100%% at most; give a threshold above -100%%, e.g. %s<-3%%", g, g.Metric)
		}
		// Two gates of one metric and direction decided every cell
		// twice: each verdict, gate line and JUnit case came out
		// doubled, under the stricter threshold's failure.
		if i := slices.IndexFunc(out, func(o Gate) bool { return o.Metric == g.Metric && o.Op == g.Op }); i >= 0 {
			return nil, fault.Input("--fail-on gates %s twice (%s and %s); keep the one that matters", g.Metric+string(g.Op), out[i], g)
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, fault.Input("--fail-on %q names no gate; name a gate such as 'tx_pps<-3%%', or leave --fail-on out for the default gates", s)
	}
	return out, nil
}

// Decision is one gate applied to one cell.
type Decision struct {
	Gate  Gate   `json:"gate"`
	Cell  string `json:"cell"`
	Delta Delta  `json:"delta"`
	// Verdict is Delta.Verdict.Verdict: SAME, DIFFERENT or UNKNOWN.
	Verdict verdict.Verdict `json:"verdict"`
	// Tripped: the verdict is DIFFERENT and the change is beyond the
	// threshold in the gate's direction.
	Tripped bool `json:"tripped"`
	// Missing, when not "", says why a side has no values of the gated
	// metric in this cell (the cell is absent, its runs failed, or it is
	// n/a there): the verdict is MISSING, a failure unless Allowed
	// (CompareOptions.AllowMissing names the metric or the cell).
	Missing string `json:"missing,omitempty"`
	Allowed bool   `json:"allowed,omitempty"`
}

// Undecided reports whether the runs could not decide the gate.
func (d *Decision) Undecided() bool { return d.Verdict == verdict.Unknown }

// Failed reports whether the decision fails the gate: a regression
// (Tripped) or a gated metric MISSING on a side and not allowed.
func (d *Decision) Failed() bool { return d.Tripped || d.Verdict == verdict.Missing && !d.Allowed }

// String is one line: the gate, the cell, the change of the median with
// the interval of the shift, the runs, the verdict and what it means.
func (d *Decision) String() string {
	if d.Verdict == verdict.Missing {
		state := "FAIL"
		if d.Allowed {
			state = "ok (--allow-missing)"
		}
		return oneLine(fmt.Sprintf("%s: %s: MISSING: %s: %s", d.Gate, d.Cell, d.Missing, state))
	}
	v := &d.Delta.Verdict
	change := units.Pct(d.Delta.Pct)
	if math.IsNaN(d.Delta.Pct) {
		change = "-"
	}
	// An interval that prints as the change itself (">999x [>999x,
	// >999x]") says nothing more.
	if lo, hi := units.Pct(v.PctLo), units.Pct(v.PctHi); !math.IsNaN(v.PctLo) && !math.IsInf(v.PctLo, 0) && !math.IsInf(v.PctHi, 0) && (lo != change || hi != change) {
		change += fmt.Sprintf(" [%s, %s]", lo, hi)
	}
	n := fmt.Sprintf("n=%d", v.NBase)
	if v.NBase != v.NNew {
		n = fmt.Sprintf("n=%d+%d", v.NBase, v.NNew)
	}
	state := "ok"
	switch {
	case d.Tripped:
		state = "FAIL"
	case d.Verdict == verdict.Unknown && v.NextN > 0:
		state = fmt.Sprintf("undecided: run at least %d per side", v.NextN)
	case d.Verdict == verdict.Unknown:
		state = "undecided at the plan's last look: the change is smaller than the noise can show"
	}
	return oneLine(fmt.Sprintf("%s: %s %s %s: %s: %s", d.Gate, d.Cell, change, n, d.Verdict, state))
}

// GateError means a gate failed: it tripped on a regression, or a gated
// metric is MISSING on a side (no fault class; the CLI exits 1).
type GateError struct{ Tripped, Missing []Decision }

func (e *GateError) Error() string {
	var parts []string
	if len(e.Tripped) > 0 {
		var cells []string
		for _, d := range e.Tripped {
			cells = append(cells, oneLine(fmt.Sprintf("%s %s in %s", d.Gate.Metric, units.Pct(d.Delta.Pct), d.Cell)))
		}
		parts = append(parts, "regression: "+strings.Join(cells, ", "))
	}
	if len(e.Missing) > 0 {
		var cells []string
		for _, d := range e.Missing {
			cells = append(cells, oneLine(fmt.Sprintf("%s in %s (%s)", d.Gate.Metric, d.Cell, d.Missing)))
		}
		parts = append(parts, "MISSING: "+strings.Join(cells, ", ")+"; rerun the cells (vnetbench run --resume) or name them with --allow-missing")
	}
	return strings.Join(parts, "; ")
}

// UndecidedError means no gate tripped but some gate's verdict is UNKNOWN:
// the runs cannot tell yet (fault.ErrUndecided; the CLI exits 3).
type UndecidedError struct{ Undecided []Decision }

func (e *UndecidedError) Error() string {
	var cells []string
	for _, d := range e.Undecided {
		cells = append(cells, oneLine(fmt.Sprintf("%s in %s", d.Gate.Metric, d.Cell)))
	}
	return fmt.Sprintf("undecided (UNKNOWN): %s; add repetitions (vnetbench run --resume --until-decided) or set a larger --min-effect", strings.Join(cells, ", "))
}

// Is makes errors.Is(err, fault.ErrUndecided) true.
func (e *UndecidedError) Is(target error) bool { return target == fault.ErrUndecided }

// CompareOptions configure CompareRuns.
type CompareOptions struct {
	Metrics []string // metrics to show (nil = all in both); gates add theirs
	Gates   []Gate   // nil = default gates (see CompareRuns)
	// MinEffect is the smallest change that matters: a verdict of SAME
	// means the change is shown smaller (DefaultMinEffect when zero). A
	// gate with a non-zero threshold uses its threshold.
	MinEffect MinEffect
	// Details shows the harness and diagnostics table in text and
	// markdown (Options.Details).
	Details bool
	// ProfileTop is Options.ProfileTop.
	ProfileTop int
	// AllowMissing names gated metrics or cells that may be MISSING on a
	// side without failing the gate (--allow-missing).
	AllowMissing []string
	// Noise is the noise of each cell's metrics from past runs
	// (Options.Noise; compare --noise-from), for the early looks of the
	// tables and the gates.
	Noise func(cell, metric string) *verdict.Scale
}

// CompareResult is what CompareRuns decided.
type CompareResult struct {
	Report       *Report
	Decisions    []Decision
	DefaultGates bool
}

// Err returns a *GateError when any decision tripped or is MISSING (and
// not allowed), else an *UndecidedError when any verdict is UNKNOWN, else
// nil.
func (c *CompareResult) Err() error {
	var tripped, missing, undecided []Decision
	for _, d := range c.Decisions {
		switch {
		case d.Tripped:
			tripped = append(tripped, d)
		case d.Failed():
			missing = append(missing, d)
		case d.Undecided():
			undecided = append(undecided, d)
		}
	}
	switch {
	case len(tripped) > 0 || len(missing) > 0:
		return &GateError{Tripped: tripped, Missing: missing}
	case len(undecided) > 0:
		return &UndecidedError{undecided}
	}
	return nil
}

// CompareRuns compares the set new against base cell by cell (per kernel
// label when the sets hold several: the cell is then "label:cell") and
// applies the gates. Without gates, every shown result metric that has a
// direction is gated at 0% in its bad direction (see DefaultGated): perf
// counters, the CPU per packet derived from them and Diagnostics (the
// harness's self-measurements and cross-checks) only when opt.Metrics
// names them. Unknown metrics are bad input.
func CompareRuns(base, new *Runs, opt CompareOptions) (*CompareResult, error) {
	if err := comparable(base, new); err != nil {
		return nil, err
	}
	failed := sideFailures(base, new)
	joined := joinSides(base, new)
	idx := newIndex(joined)
	keys, named := idx.keys, metric.Keys(opt.Metrics)
	for _, m := range named {
		if !slices.Contains(keys, m) {
			return nil, fault.Input("unknown metric %q; the results have: %s", m, metric.Join(keys, ", "))
		}
	}
	res := &CompareResult{}
	gates := opt.Gates
	if gates == nil {
		res.DefaultGates = true
		gates = defaultGates(named, keys)
	}
	for _, g := range gates {
		if !slices.Contains(keys, metric.Key(g.Metric)) {
			return nil, fault.Input("--fail-on %s: unknown metric %q; the results have: %s", g, g.Metric, metric.Join(keys, ", "))
		}
	}
	kinds := []string{KindThread, KindSenders, KindVersus, KindSweep, KindPerfSyms, KindCompare, KindHarness}
	if opt.Metrics != nil {
		kinds = []string{KindCompare, KindHarness}
	}
	baseCol := "base"
	if len(base.Samples) == 0 {
		baseCol = "" // every run failed there: the tables show NEW alone
	}
	r, err := Build(joined, Options{MinEffect: opt.MinEffect, Base: baseCol, Metrics: gatedMetrics(opt.Metrics, gates), Kinds: kinds, Details: opt.Details, ProfileTop: opt.ProfileTop, Noise: opt.Noise})
	if err != nil {
		return nil, err
	}
	res.Report = r
	res.Decisions = decideGates(idx, failed, gates, opt)
	return res, nil
}

// comparable returns bad input when a side holds no runs at all, or no
// side measured anything. A side whose every run failed (a kernel that
// never boots) is not bad input: its gated metrics are MISSING.
func comparable(base, new *Runs) error {
	switch {
	case len(base.Samples)+len(base.Failed) == 0 || len(new.Samples)+len(new.Failed) == 0:
		return fault.Input("nothing to compare: a side has no samples")
	case len(base.Samples)+len(new.Samples) == 0:
		return fault.Input("nothing to compare: every run failed on both sides (%s)", firstLine(new.Failed[0].Error))
	case !measured(base) && !measured(new):
		return fault.Input("nothing to compare: no run of either side measured anything: %s", unmeasured(base, new))
	}
	return nil
}

// measured reports whether a sample of set has a metric.
func measured(set *Runs) bool {
	return slices.ContainsFunc(set.Samples, func(s results.Sample) bool { return len(s.Metrics) > 0 || len(s.Threads) > 0 })
}

// unmeasured says why two sides that measured nothing did not: the first
// n/a reason, else the first failure.
func unmeasured(base, new *Runs) string {
	for _, set := range []*Runs{base, new} {
		for _, s := range set.Samples {
			if s.Unsupported != "" {
				return "n/a (" + firstLine(s.Unsupported) + ")"
			}
		}
	}
	for _, set := range []*Runs{base, new} {
		if len(set.Failed) > 0 {
			return "failed (" + firstLine(set.Failed[0].Error) + ")"
		}
	}
	return "no metrics"
}

// joinSides returns one set holding the samples of base under the kernel
// label "base" and those of new under "new". When a side holds several
// kernels, each sample's cell is prefixed with its kernel ("label:cell")
// and the kernel becomes an axis. The samples are changed in place.
func joinSides(base, new *results.Set) *results.Set {
	multi := len(base.Kernels()) > 1 || len(new.Kernels()) > 1
	joined := &results.Set{Env: map[string]*results.Env{}, Warnings: append(slices.Clone(base.Warnings), new.Warnings...)}
	for _, side := range []struct {
		label string
		set   *results.Set
	}{{"base", base}, {"new", new}} {
		for _, s := range side.set.Samples {
			if multi {
				s.Cell = s.Kernel + ":" + s.Cell
				axes := map[string]string{"kernel": s.Kernel}
				for k, v := range s.Axes {
					axes[k] = v
				}
				s.Axes = axes
			}
			joined.Env[side.label] = side.set.Env[s.Kernel]
			s.Kernel = side.label
			joined.Samples = append(joined.Samples, s)
		}
		joined.Sources = append(joined.Sources, side.set.Sources...)
	}
	return joined
}

// defaultGates gates every shown metric (named, or else all of keys) that
// has a direction at 0% in its bad direction: those DefaultGated accepts
// and those named.
func defaultGates(named, keys []metric.Key) []Gate {
	show := named
	if show == nil {
		show = keys
	}
	var gates []Gate
	for _, k := range show {
		if !defaultGated(k) && !slices.Contains(named, k) {
			continue
		}
		if op := badOp(k); op != 0 {
			gates = append(gates, Gate{string(k), op, 0})
		}
	}
	return gates
}

// badOp is the gate operator of key's bad direction: '<' when higher is
// better, '>' when lower is, 0 for a neutral metric or one whose
// direction is unknown.
func badOp(key metric.Key) byte {
	switch results.Describe(key).Better {
	case metric.HigherIsBetter:
		return '<'
	case metric.LowerIsBetter:
		return '>'
	}
	return 0
}

// Backwards reports whether g trips in its metric's better direction
// (tx_pps>-3% trips on a rise of tx_pps, which is higher-is-better: an
// improvement) and returns the gate it probably meant: the bad direction,
// the threshold's size (tx_pps<-3%). A neutral metric, or one whose
// direction is unknown, is never backwards.
func (g Gate) Backwards() (meant Gate, ok bool) {
	op := badOp(metric.Key(g.Metric))
	if op == 0 || op == g.Op {
		return Gate{}, false
	}
	th := math.Abs(g.Threshold)
	if op == '<' && th != 0 {
		th = -th
	}
	return Gate{Metric: g.Metric, Op: op, Threshold: th}, true
}

// GateWarnings are the warnings of the gates as written, for stderr: each
// gate that trips in its metric's better direction (it calls an
// improvement a regression; it still decides, as the user wrote it,
// and the warning names the gate probably meant), then each allowMissing
// name that is neither a gated metric nor a gated cell of decisions (it
// lets nothing through, and a gate failing closed on MISSING would not
// say why).
func GateWarnings(gates []Gate, allowMissing []string, decisions []Decision) []string {
	var w []string
	for _, g := range gates {
		meant, ok := g.Backwards()
		if !ok {
			continue
		}
		moves, better, want := "rises", "higher", "drop"
		if g.Op == '<' {
			moves, better, want = "falls", "lower", "rise"
		}
		w = append(w, fmt.Sprintf("--fail-on %s fails when %s %s, but %s %s is better: an improvement is called a regression; for a %s write %s", g, g.Metric, moves, better, g.Metric, want, meant))
	}
	known := map[string]bool{}
	for _, d := range decisions {
		known[d.Gate.Metric], known[d.Cell] = true, true
	}
	for _, n := range allowMissing {
		if !known[n] {
			w = append(w, fmt.Sprintf("--allow-missing %s names no gated metric or cell of these runs (the gate lines name them); it lets nothing through", textsafe.OneLine(n)))
		}
	}
	return w
}

// gatedMetrics returns the named metrics plus those of the gates, or nil
// (all) when none are named.
func gatedMetrics(named []string, gates []Gate) []string {
	metrics := named
	if metrics != nil {
		for _, g := range gates {
			if !slices.Contains(metrics, g.Metric) {
				metrics = append(metrics, g.Metric)
			}
		}
	}
	return metrics
}

// decideGates applies each gate to each cell that has the gated metric on
// a side: a verdict where both sides have values, MISSING where one has
// none (see missingWhy).
func decideGates(idx *index, failed map[cellCol][]string, gates []Gate, opt CompareOptions) []Decision {
	var out []Decision
	for _, g := range gates {
		key := metric.Key(g.Metric)
		for _, cell := range gateCells(idx, failed) {
			b, n := idx.values(cell, "base", key), idx.values(cell, "new", key)
			if len(b) == 0 && len(n) == 0 {
				continue // the metric is not this cell's
			}
			if len(b) == 0 || len(n) == 0 {
				side := "base"
				if len(n) == 0 {
					side = "new"
				}
				out = append(out, Decision{Gate: g, Cell: cell, Verdict: verdict.Missing,
					Missing: missingWhy(idx, failed, cell, side, g.Metric), Allowed: allowed(opt.AllowMissing, g.Metric, cell),
					Delta: Delta{Pct: math.NaN(), Verdict: verdict.Result{Verdict: verdict.Missing, NBase: len(b), NNew: len(n)}}})
				continue
			}
			min := opt.MinEffect
			if g.Threshold != 0 {
				min = MinEffect{Value: math.Abs(g.Threshold)}
			}
			var scale *verdict.Scale
			if opt.Noise != nil {
				scale = opt.Noise(cell, string(key))
			}
			d := CompareScaled(b, n, idx.metric(key).Rate, min, scale)
			dec := Decision{Gate: g, Cell: cell, Delta: d, Verdict: d.Verdict.Verdict}
			if d.Different() && !math.IsNaN(d.Pct) {
				dec.Tripped = (g.Op == '<' && d.Pct < g.Threshold) || (g.Op == '>' && d.Pct > g.Threshold)
			}
			out = append(out, dec)
		}
	}
	return out
}

// DefaultGated reports whether compare gates key when no --fail-on is
// given: the result metrics (Transmitted, Lost, throughput, ...), not perf
// counters (perf.<event>: a patched kpktgend's +1.8% context switches is
// no regression), not the CPU per packet computed from them
// (cpu_per_pkt.<target>), not the drops by reason (drop_pps.REASON@FN:
// they say where Lost went) and not Diagnostics. Naming any of them with
// --metric or --fail-on gates it.
func DefaultGated(key string) bool { return defaultGated(metric.Key(key)) }

func defaultGated(key metric.Key) bool {
	for _, p := range []string{results.PerfPrefix, metric.CPUPerPktPrefix, metric.DropPrefix} {
		if strings.HasPrefix(string(key), p) {
			return false
		}
	}
	return !results.IsDiagnostic(key)
}

// WriteDecisions prints every gate decision and a verdict line.
func WriteDecisions(w io.Writer, c *CompareResult) error {
	var b strings.Builder
	b.WriteString("\ngates")
	if c.DefaultGates {
		b.WriteString(" (default: any DIFFERENT verdict of a result metric in its bad direction; perf counters, CPU/pkt and harness diagnostics only when named; set --fail-on to choose thresholds)")
	}
	b.WriteString(":\n")
	var failed, undecided, decided []string
	for _, d := range c.Decisions {
		fmt.Fprintf(&b, "  %s\n", d.String())
		switch {
		case d.Tripped:
			failed = append(failed, oneLine(d.Gate.Metric+" in "+d.Cell))
		case d.Failed():
			failed = append(failed, oneLine(d.Gate.Metric+" MISSING in "+d.Cell))
		}
		if d.Undecided() {
			undecided = append(undecided, oneLine(d.Gate.Metric+" in "+d.Cell))
		}
		if !slices.Contains(decided, d.Gate.String()) {
			decided = append(decided, d.Gate.String())
		}
	}
	b.WriteString(scaleLines(c.Decisions))
	switch {
	case len(c.Decisions) == 0 && c.DefaultGates:
		// The metrics compared are there, on both sides: none is one
		// the default gates take (it said "no gated metric is present
		// on both sides" of a --metric tx_run_s both sides have).
		b.WriteString("verdict: ok: nothing gated: no metric compared is one the default gates take (one with a better direction; perf counters and diagnostics only when named by --metric); gate one with --fail-on\n")
	case len(c.Decisions) == 0:
		b.WriteString("verdict: ok: no gated metric is present on both sides\n")
	case len(failed) > 0:
		fmt.Fprintf(&b, "verdict: FAIL: %s\n", strings.Join(failed, ", "))
	case len(undecided) > 0:
		fmt.Fprintf(&b, "verdict: UNKNOWN: the runs cannot decide %s yet; add repetitions or set a larger --min-effect\n", strings.Join(undecided, ", "))
	default:
		fmt.Fprintf(&b, "verdict: ok: no change beyond %s\n", strings.Join(decided, ", "))
	}
	_, err := io.WriteString(w, asciiOnly(b.String()))
	return err
}

// scaleLines says which history scales the gates' early looks used, or,
// when a gate is UNKNOWN at an early look without one, that a history
// would let it call smaller changes.
func scaleLines(decs []Decision) string {
	var used []string
	unscaled := false
	for _, d := range decs {
		v := &d.Delta.Verdict
		switch {
		case d.Verdict == verdict.Missing:
		case v.Scale != "":
			if !slices.Contains(used, v.Scale) {
				used = append(used, v.Scale)
			}
		case d.Verdict == verdict.Unknown && v.Look >= 0 && v.Look < verdict.Default.Early:
			unscaled = true
		}
	}
	var b strings.Builder
	for _, s := range used {
		fmt.Fprintf(&b, "early looks with %s\n", s)
	}
	if unscaled && len(used) == 0 {
		b.WriteString("early looks without a history scale: --noise-from HISTORY_DB (the index 'vnetbench history add' fills) lets 3 and 6 runs per side call smaller changes (docs/compare.md)\n")
	}
	return b.String()
}

// WriteCompareJSON writes the comparison model, every gate decision and the
// verdict as one JSON object.
func WriteCompareJSON(w io.Writer, c *CompareResult) error {
	decs := make([]Decision, len(c.Decisions))
	for i, d := range c.Decisions {
		d.Delta.Base, d.Delta.New, d.Delta.Pct = safeStats(d.Delta.Base), safeStats(d.Delta.New), safeFloat(d.Delta.Pct)
		decs[i] = d
	}
	v := struct {
		Report       any        `json:"report"`
		Decisions    []Decision `json:"decisions"`
		DefaultGates bool       `json:"default_gates"`
		Failed       bool       `json:"failed"`
		Undecided    bool       `json:"undecided"`
	}{jsonSafe(c.Report), decs, c.DefaultGates, errors.As(c.Err(), new(*GateError)), errors.As(c.Err(), new(*UndecidedError))}
	b, err := json.MarshalIndent(&v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode comparison: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
