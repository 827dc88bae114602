package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/report"
)

// cmdCompare compares two runs (or the two kernels of one run) and gates
// on regressions: each gated metric gets a verdict (SAME, DIFFERENT or
// UNKNOWN, see docs/compare.md, or MISSING when a side lacks it); exit 1
// when one is DIFFERENT in its bad direction beyond its threshold or
// MISSING (unless --allow-missing names it), else 3 when one is UNKNOWN,
// 2 on bad input, 0 otherwise.
func cmdCompare(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare", "BASE NEW|RUN [--metric M] [--fail-on 'tx_pps<-3%,lost_pps>+0%'] [--min-effect 0.5iqr] [--allow-missing M] [--noise-from HISTORY_DB]", stderr)
	failOn := fs.String("fail-on", "", "gates, e.g. 'tx_pps<-3%,lost_pps>+0%' (default: every shown result metric with a direction, at 0% in its bad direction; harness diagnostics only when named by --metric)")
	alpha := retiredAlpha(fs)
	minEffect := fs.String("min-effect", report.DefaultMinEffect.String(), "smallest change that matters: SAME means the change is shown smaller; a percent of the base median (\"2%\") or a multiple of the interquartile range (\"0.5iqr\"); a gate's non-zero threshold replaces it")
	format := fs.String("format", "text", "output format of the comparison: text|mail|markdown|json|csv|html|junit (the gate decisions; mail, csv, html and junit write the gate lines to stderr)")
	style := fs.String("style", "ascii", "text table borders: ascii or unicode")
	details := fs.Bool("details", false, "text/markdown: also the harness and diagnostics table")
	profileTop := fs.Int("profile-top", report.DefaultProfileTop, "symbols per profile delta (both runs with perf record: the largest changes of each side's share, self and children)")
	junit := fs.String("junit", "", "also write the gate decisions as JUnit XML to `FILE` (one test case per gated metric and cell; a tripped gate is a failure)")
	noisePath := fs.String("noise-from", "", noiseFromUsage)
	var metrics, allowMissing listFlag
	fs.Var(&metrics, "metric", "metrics to compare (repeatable, comma-separated; default all)")
	fs.Var(&allowMissing, "allow-missing", "gated metrics or cells that may be MISSING on a side (absent, failed or n/a) without failing (repeatable, comma-separated; default none: a gate fails closed)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := alpha.check("compare"); err != nil {
		return err
	}
	if err := checkSymbolCounts(fs, "profile-top"); err != nil {
		return err
	}
	if len(pos) != 1 && len(pos) != 2 {
		fs.Usage()
		return usageErrorf("compare: want BASE and NEW (run directories or benchfmt files), or RUN (one run of two kernels, a lab run's), got %d arguments", len(pos))
	}
	if *format == "benchfmt" || *format == "kcidb" || *format == "lava" {
		return usageErrorf("compare: --format %s is not a comparison; use 'vnetbench report --format %s NEW'", *format, *format)
	}
	if !slices.Contains(compareFormats, *format) { // report's list named the three above too
		return usageErrorf("compare: unknown --format %q; use one of %s", *format, strings.Join(compareFormats, ", "))
	}
	st, err := report.ParseStyle(*style)
	if err != nil {
		return err
	}
	me, err := report.ParseMinEffect(*minEffect)
	if err != nil {
		return usageErrorf("compare: --min-effect: %v", err)
	}
	if err := checkOutputDir(*junit); err != nil {
		return err
	}
	var gates []report.Gate   // nil: the default gates
	if given(fs, "fail-on") { // even empty: an unset CI variable is no request for the default gates
		if gates, err = report.ParseGates(*failOn); err != nil {
			return err
		}
	}
	base, nw, names, err := loadSides(pos)
	if err != nil {
		return err
	}
	if same := results.SameRun(base, nw); len(pos) == 2 && same != "" {
		// A run against itself has no difference to find: every gated
		// metric came out UNKNOWN, exit 3, whose remedy (more runs) is
		// no remedy. report refuses one path given twice, exit 2; so
		// does compare, for a copy too.
		return usageErrorf("compare: BASE and NEW are the same run (%s): a run compared with itself decides nothing; give the other run as NEW, or the one run alone to compare its kernels", same)
	}
	if err := checkCommonCell(base, nw, names); err != nil {
		return err
	}
	noise, err := noiseFrom(ctx, *noisePath, stderr)
	if err != nil {
		return err
	}
	res, err := report.CompareRuns(base, nw, report.CompareOptions{Metrics: metrics, Gates: gates, MinEffect: me, Details: *details, AllowMissing: allowMissing, ProfileTop: *profileTop, Noise: noise})
	if err != nil {
		return err
	}
	for _, w := range report.GateWarnings(gates, allowMissing, res.Decisions) {
		fmt.Fprintln(stderr, "vnetbench: warning: "+w)
	}
	var buf bytes.Buffer
	if err := writeComparison(&buf, stderr, res, *format, st, names[0], names[1]); err != nil {
		return err
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if *junit != "" {
		var jb bytes.Buffer
		if err := report.WriteJUnitDecisions(&jb, "compare", res.Decisions); err != nil {
			return err
		}
		if err := writeOutput(*junit, jb.Bytes(), stdout); err != nil {
			return err
		}
	}
	return res.Err()
}

// compareFormats are the formats of a comparison (--format).
var compareFormats = []string{"text", "mail", "markdown", "json", "csv", "html", "junit"}

// writeComparison writes res to buf in format: the tables and the gate
// decisions (text, markdown), or the document with the decisions on
// stderr (junit, csv, html), or the JSON of both. base and nw are the
// sides' paths.
func writeComparison(buf *bytes.Buffer, stderr io.Writer, res *report.CompareResult, format string, st report.Style, base, nw string) error {
	switch format {
	case "text", "markdown":
		buf.WriteString("base: " + base + "\nnew:  " + nw + "\n")
		if err := report.Render(buf, nil, res.Report, format, st); err != nil {
			return err
		}
		if err := report.WriteDecisions(buf, res); err != nil {
			return err
		}
	case "json":
		if err := report.WriteCompareJSON(buf, res); err != nil {
			return err
		}
	case "junit": // the decisions as test cases; the text of them on stderr
		if err := report.WriteJUnitDecisions(buf, "compare", res.Decisions); err != nil {
			return err
		}
		if err := report.WriteDecisions(stderr, res); err != nil {
			return err
		}
	default: // csv, html: the document on stdout, the decisions on stderr
		if err := report.Render(buf, nil, res.Report, format, st); err != nil {
			return err
		}
		if err := report.WriteDecisions(stderr, res); err != nil {
			return err
		}
	}
	return nil
}

// checkCommonCell refuses two sides without a cell in common (runs of
// different scenarios, a wrong directory): every gate was MISSING and
// compare exited 1, a regression, where nothing was compared.
func checkCommonCell(base, nw *results.Set, names [2]string) error {
	cells := func(s *results.Set) (out []string, scen []string) {
		for _, x := range append(slices.Clip(s.Samples), s.Failed...) {
			if !slices.Contains(out, x.Cell) {
				out = append(out, x.Cell)
			}
		}
		for _, e := range s.Env {
			if e != nil && e.Scenario != "" && !slices.Contains(scen, e.Scenario) {
				scen = append(scen, e.Scenario)
			}
		}
		slices.Sort(scen)
		return out, scen
	}
	bc, bs := cells(base)
	nc, ns := cells(nw)
	if slices.ContainsFunc(bc, func(c string) bool { return slices.Contains(nc, c) }) {
		return nil
	}
	side := func(name string, c, s []string, set *results.Set) string {
		if len(c) == 0 && len(set.Warnings) > 0 { // a torn only line: say what was read
			return name + " has no samples (" + strings.Join(set.Warnings, "; ") + ")"
		}
		if len(c) == 0 {
			return name + " has no samples"
		}
		what := "cells " + strings.Join(c, ", ")
		if len(c) > 3 {
			what = fmt.Sprintf("cells %s, ... (%d)", strings.Join(c[:3], ", "), len(c))
		}
		if len(s) > 0 {
			what = "scenario " + strings.Join(s, ", ") + ", " + what
		}
		return name + " has " + what
	}
	return usageErrorf("compare: %s and %s have no cell in common (%s; %s): nothing to compare; give two runs of one scenario", names[0], names[1], side("BASE", bc, bs, base), side("NEW", nc, ns, nw))
}

// loadSides reads the sides of a comparison: two runs, BASE and NEW, or
// one run of two kernels (a lab run's stock and patched), the first
// kernel the base. names say what each side is.
func loadSides(pos []string) (base, nw *results.Set, names [2]string, err error) {
	if len(pos) == 2 {
		if base, err = loadSide("BASE", pos[0]); err != nil {
			return nil, nil, names, err
		}
		nw, err = loadSide("NEW", pos[1])
		return base, nw, [2]string{pos[0], pos[1]}, err
	}
	set, err := loadSide("RUN", pos[0])
	if err != nil {
		return nil, nil, names, err
	}
	base, nw, ks, err := report.KernelSides(set)
	if err != nil {
		return nil, nil, names, fmt.Errorf("compare: %s has %w; give BASE and NEW to compare two runs", pos[0], err)
	}
	return base, nw, [2]string{pos[0] + " (kernel " + ks[0] + ")", pos[0] + " (kernel " + ks[1] + ")"}, nil
}

// loadSide loads one side of a comparison. Any input it cannot read is bad
// input (exit 2), never exit 1: that code means a regression.
func loadSide(which, path string) (*results.Set, error) {
	set, err := results.Load(path)
	if err == nil || errors.Is(err, fault.ErrInput) {
		return set, err
	}
	return nil, &fault.InputError{Msg: fmt.Sprintf("compare: cannot read %s %s; pass a readable run directory or benchfmt file", which, path), Err: err}
}
