package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/latency"
	"github.com/vnetbench/vnetbench/internal/safefs"
	"github.com/vnetbench/vnetbench/internal/units"
)

// The HTML report's latency plots are hand-written SVG like its bar
// charts: the report stays one self-contained file without scripts or
// fonts, and the three panels need a shared time axis, a log axis and
// marks that a general plotting library would make us build anyway
// (gonum.org/v1/plot would add its font and image dependencies to the
// binary for two chart types).

// LatencyRun is one sample's raw probes and qdisc readings (its
// probes.csv and qdisc.csv), for the HTML plots.
type LatencyRun struct {
	Cell, Column, Qdisc, Load string
	Rep                       int
	Probes                    []latency.Record
	Series                    []latency.Point
}

// loadLatencyRuns reads the probe artifacts of the samples that have
// them (samples loaded from a run directory). A missing or bad file is
// a warning: the tables do not need it.
func (b latencyKind) loadLatencyRuns() {
	for i := range b.set.Samples {
		s := &b.set.Samples[i]
		if s.Dir == "" {
			continue
		}
		run := LatencyRun{Cell: s.Cell, Column: s.Kernel, Rep: s.Rep, Qdisc: orDash(s.Labels["qdisc"]), Load: loadName(s.Cell, s.Labels["qdisc"])}
		for _, a := range s.Artifacts {
			var err error
			switch filepath.Base(a) {
			case latency.ArtifactName:
				err = readArtifact(s.Dir, a, func(r io.Reader) (e error) { run.Probes, e = latency.ReadCSV(r); return })
			case latency.SeriesName:
				err = readArtifact(s.Dir, a, func(r io.Reader) (e error) { run.Series, e = latency.ReadSeries(r); return })
			}
			if err != nil {
				b.r.Warnings = append(b.r.Warnings, fmt.Sprintf("latency plots: %s: %v", a, err))
			}
		}
		if len(run.Probes) > 0 {
			b.r.LatencyRuns = append(b.r.LatencyRuns, run)
		}
	}
}

// readArtifact reads the artifact rel of the run directory dir: a regular
// file under it (no link followed, nothing outside), up to maxArtifact.
func readArtifact(dir, rel string, read func(io.Reader) error) error {
	d, err := safefs.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := d.Open(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	return read(safefs.Reader(f, maxArtifact, d.Join(rel)))
}

// maxArtifact bounds an artifact report reads (probes.csv of a sample).
const maxArtifact = 256 << 20

// writeLatencyPlots draws the RTT distributions (one CDF per load, a line
// per qdisc and column) and a three-panel time plot per sample.
func writeLatencyPlots(b *bytes.Buffer, r *Report) {
	if len(r.LatencyRuns) == 0 {
		return
	}
	b.WriteString("<h3>RTT distribution under load</h3>\n")
	var loads []string
	for _, run := range r.LatencyRuns {
		if !slices.Contains(loads, run.Load) {
			loads = append(loads, run.Load)
		}
	}
	for _, load := range loads {
		writeCDF(b, r, load)
	}
	b.WriteString("<h3>Time series per sample</h3>\n<p class=\"notes\">Top: the tap's transmitted bit/s (100 ms bins). Middle: every probe's round trip (log axis), rolling p50 (black) and p99 (red) over the last 200 probes, lost probes as red ticks at the top, the load's start as a dashed line. Bottom: the qdisc's largest backlog per 100 ms bin, drops (tap tx_dropped or qdisc) as red ticks. Raw data: probes.csv and qdisc.csv in each sample's artifacts.</p>\n")
	for _, run := range r.LatencyRuns {
		writeTimePlot(b, run)
	}
}

// rtts returns the answered load-phase round trips, sorted.
func rtts(recs []latency.Record) []float64 {
	var out []float64
	for _, rec := range recs {
		if v, ok := rec.RTT(); ok && rec.Phase == latency.PhaseLoad {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// logAxis maps [lo, hi] seconds (lo > 0) to [a, b] pixels on a log
// scale widened to whole decades, and returns its decade ticks.
func logAxis(lo, hi, a, b float64) (func(float64) float64, []float64) {
	l0, l1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if l1 <= l0 {
		l1 = l0 + 1
	}
	f := func(v float64) float64 { return a + (b-a)*(math.Log10(math.Max(v, lo))-l0)/(l1-l0) }
	var ticks []float64
	for e := l0; e <= l1; e++ {
		ticks = append(ticks, math.Pow(10, e))
	}
	return f, ticks
}

func writeCDF(b *bytes.Buffer, r *Report, load string) {
	type line struct {
		name string
		xs   []float64
	}
	var lines []line
	lo, hi := math.Inf(1), 0.0
	for _, run := range r.LatencyRuns {
		if run.Load != load {
			continue
		}
		name := run.Qdisc + " " + run.Column
		i := slices.IndexFunc(lines, func(l line) bool { return l.name == name })
		if i < 0 {
			lines = append(lines, line{name: name})
			i = len(lines) - 1
		}
		lines[i].xs = append(lines[i].xs, rtts(run.Probes)...)
	}
	for i := range lines {
		slices.Sort(lines[i].xs)
		if n := len(lines[i].xs); n > 0 {
			lo, hi = math.Min(lo, lines[i].xs[0]), math.Max(hi, lines[i].xs[n-1])
		}
	}
	if hi <= 0 {
		return
	}
	const W, H, left, top, plotW, plotH = 720, 260, 50, 20, 650, 200
	x, ticks := logAxis(lo, hi, left, left+plotW)
	y := func(p float64) float64 { return top + plotH*(1-p) }
	fmt.Fprintf(b, "<p>%s</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"RTT CDF %s\">\n", htmlText(load), W, H+20, htmlText(load))
	for _, t := range ticks {
		fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x(t), x(t), top, top+plotH, x(t), top+plotH+14, units.Latency.Format(t))
	}
	for _, p := range []float64{0, 0.5, 0.9, 0.99, 1} {
		fmt.Fprintf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", left, left+plotW, y(p), y(p), left-4, y(p)+4, p)
	}
	for i, l := range lines {
		var pts []string
		n := float64(len(l.xs))
		for j, v := range l.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(v), y(float64(j+1)/n)))
		}
		c := barColors[i%len(barColors)]
		fmt.Fprintf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", c, strings.Join(pts, " "))
		fmt.Fprintf(b, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s (%d probes)</text>\n", left+10, top+8+16*i, c, left+24, top+17+16*i, htmlText(l.name), len(l.xs))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">round trip (log scale); y: fraction of answered probes at or below</text>\n</svg>\n", left+plotW/2, H+16)
}

// rolling returns the q-quantile of the last n values at each index.
func rolling(vals []float64, n int, q float64) []float64 {
	out := make([]float64, len(vals))
	win := make([]float64, 0, n)
	for i := range vals {
		win = append(win[:0], vals[max(0, i-n+1):i+1]...)
		slices.Sort(win)
		out[i] = latency.Quantile(win, q)
	}
	return out
}

func writeTimePlot(b *bytes.Buffer, run LatencyRun) {
	if len(run.Probes) == 0 {
		return
	}
	t0 := run.Probes[0].Sent
	end := run.Probes[len(run.Probes)-1].Sent
	if len(run.Series) > 0 {
		end = max(end, run.Series[len(run.Series)-1].T)
	}
	const W, left, plotW, panelH, gap = 720, 60, 640, 90, 18
	span := math.Max(float64(end-t0)/1e9, 0.001)
	x := func(ns int64) float64 { return left + plotW*float64(ns-t0)/1e9/span }
	fmt.Fprintf(b, "<p>%s, %s, run %d</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"time series %s\">\n",
		htmlText(run.Cell), htmlText(run.Column), run.Rep+1, W, 3*(panelH+gap)+30, htmlText(run.Cell))
	panel := func(i int) (top, bottom float64) {
		top = float64(10 + i*(panelH+gap))
		return top, top + panelH
	}
	for i := range 3 {
		tp, _ := panel(i)
		fmt.Fprintf(b, "<rect x=\"%d\" y=\"%.0f\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", left, tp, plotW, panelH)
	}
	bins := latency.Bins(run.Series, 100*time.Millisecond)
	// Panel 1: throughput.
	tp, bt := panel(0)
	maxBps := 0.0
	for _, bn := range bins {
		maxBps = math.Max(maxBps, bn.TxBps)
	}
	if maxBps > 0 {
		var pts []string
		for _, bn := range bins {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(bn.Start), bt-(bt-tp)*bn.TxBps/maxBps))
		}
		fmt.Fprintf(b, "<polyline fill=\"none\" stroke=\"%s\" points=\"%s\"/>\n", barColors[0], strings.Join(pts, " "))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">%s</text><text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">tap tx</text>\n", left-4, tp+10, units.BitRate.Format(maxBps), left-4, tp+24)
	writeRTTPanel(b, run, x, panel)
	// Panel 3: backlog and drops.
	tp, bt = panel(2)
	var maxBl uint32
	for _, bn := range bins {
		maxBl = max(maxBl, bn.BacklogMax)
	}
	var pts []string
	for _, bn := range bins {
		h := 0.0
		if maxBl > 0 {
			h = (bt - tp) * float64(bn.BacklogMax) / float64(maxBl)
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(bn.Start), bt-h))
		if bn.TapDropPPS > 0 || bn.QDropPPS > 0 {
			fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#e15759\"/>", x(bn.Start), x(bn.Start), bt, bt-6)
		}
	}
	fmt.Fprintf(b, "<polyline fill=\"none\" stroke=\"%s\" points=\"%s\"/>\n", barColors[2], strings.Join(pts, " "))
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">%d B</text><text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">backlog</text>\n", left-4, tp+10, maxBl, left-4, tp+24)
	for s := 0.0; s <= span; s += niceStep(span / 8) {
		xv := x(t0 + int64(s*1e9))
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%gs</text>", xv, bt+14, s)
	}
	b.WriteString("\n</svg>\n")
}

// writeRTTPanel draws panel 2: every probe's round trip on a log axis,
// rolling p50 and p99, lost probes and the load's start.
func writeRTTPanel(b *bytes.Buffer, run LatencyRun, x func(int64) float64, panel func(int) (float64, float64)) {
	tp, bt := panel(1)
	var ts []int64
	var vs []float64
	lo, hi := math.Inf(1), 0.0
	for _, rec := range run.Probes {
		if v, ok := rec.RTT(); ok {
			ts, vs = append(ts, rec.Sent), append(vs, v)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi <= 0 {
		return
	}
	y, ticks := logAxis(lo, hi, bt, tp)
	for _, t := range ticks {
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", 56, y(t)+4, units.Latency.Format(t))
	}
	for i, v := range vs {
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1\" fill=\"%s\" fill-opacity=\"0.5\"/>", x(ts[i]), y(v), barColors[0])
	}
	for _, q := range []struct {
		q     float64
		color string
	}{{0.5, "#000"}, {0.99, "#e15759"}} {
		roll := rolling(vs, 200, q.q)
		var pts []string
		for i, v := range roll {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(ts[i]), y(v)))
		}
		fmt.Fprintf(b, "\n<polyline fill=\"none\" stroke=\"%s\" points=\"%s\"/>\n", q.color, strings.Join(pts, " "))
	}
	loadStart := int64(0)
	for _, rec := range run.Probes {
		if rec.Lost {
			fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#e15759\"/>", x(rec.Sent), x(rec.Sent), tp, tp+6)
		}
		if loadStart == 0 && rec.Phase == latency.PhaseLoad {
			loadStart = rec.Sent
		}
	}
	if loadStart > 0 {
		fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#333\" stroke-dasharray=\"4 3\"/>\n", x(loadStart), x(loadStart), tp, bt)
	}
}
