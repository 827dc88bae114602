package main

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/verdict"
	"github.com/vnetbench/vnetbench/report"
)

// cmdCompare compares two runs and gates on regressions: each gated metric
// gets a verdict (SAME, DIFFERENT or UNKNOWN, see docs/compare.md); exit 1
// when one is DIFFERENT in its bad direction beyond its threshold, else 3
// when one is UNKNOWN, 2 on bad input, 0 otherwise.
func cmdCompare(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare", "BASE NEW [--metric M] [--fail-on 'tx_pps<-3%,lost_pps>+0%'] [--min-effect 0.5iqr]", stderr)
	failOn := fs.String("fail-on", "", "gates, e.g. 'tx_pps<-3%,lost_pps>+0%' (default: every shown result metric with a direction, at 0% in its bad direction; harness diagnostics only when named by --metric)")
	alpha := retiredAlpha(fs)
	minEffect := fs.String("min-effect", verdict.DefaultMinEffect.String(), "smallest change that matters: SAME means the change is shown smaller; a percent of the base median (\"2%\") or a multiple of the interquartile range (\"0.5iqr\"); a gate's non-zero threshold replaces it")
	format := fs.String("format", "text", "output format of the comparison: text|markdown|json|csv|html|junit (the gate decisions)")
	style := fs.String("style", "ascii", "text table borders: ascii or unicode")
	details := fs.Bool("details", false, "text/markdown: also the harness and diagnostics table")
	profileTop := fs.Int("profile-top", report.DefaultProfileTop, "symbols per profile delta (both runs with perf record: the largest changes of each side's share, self and children)")
	junit := fs.String("junit", "", "also write the gate decisions as JUnit XML to `FILE` (one test case per gated metric and cell; a tripped gate is a failure)")
	var metrics listFlag
	fs.Var(&metrics, "metric", "metrics to compare (repeatable, comma-separated; default all)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := alpha.check("compare"); err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return usageErrorf("compare: want BASE and NEW (run directories or benchfmt files), got %d arguments", len(pos))
	}
	if *format == "benchfmt" || *format == "kcidb" || *format == "lava" {
		return usageErrorf("compare: --format %s is not a comparison; use 'vnetbench report --format %s NEW'", *format, *format)
	}
	if err := report.CheckFormat(*format); err != nil {
		return err
	}
	st, err := report.ParseStyle(*style)
	if err != nil {
		return err
	}
	me, err := verdict.ParseMinEffect(*minEffect)
	if err != nil {
		return usageErrorf("compare: --min-effect: %v", err)
	}
	var gates []report.Gate
	if strings.TrimSpace(*failOn) != "" {
		if gates, err = report.ParseGates(*failOn); err != nil {
			return err
		}
	}
	base, err := results.Load(pos[0])
	if err != nil {
		return err
	}
	nw, err := results.Load(pos[1])
	if err != nil {
		return err
	}
	res, err := report.CompareRuns(base, nw, report.CompareOptions{Metrics: metrics, Gates: gates, MinEffect: me, Details: *details, ProfileTop: *profileTop})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch *format {
	case "text", "markdown":
		buf.WriteString("base: " + pos[0] + "\nnew:  " + pos[1] + "\n")
		if err := report.Render(&buf, nil, res.Report, *format, st); err != nil {
			return err
		}
		if err := report.WriteDecisions(&buf, res); err != nil {
			return err
		}
	case "json":
		if err := report.WriteCompareJSON(&buf, res); err != nil {
			return err
		}
	case "junit": // the decisions as test cases; the text of them on stderr
		if err := report.WriteJUnitDecisions(&buf, "compare", res.Decisions); err != nil {
			return err
		}
		if err := report.WriteDecisions(stderr, res); err != nil {
			return err
		}
	default: // csv, html: the document on stdout, the decisions on stderr
		if err := report.Render(&buf, nil, res.Report, *format, st); err != nil {
			return err
		}
		if err := report.WriteDecisions(stderr, res); err != nil {
			return err
		}
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
