package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/history"
	"github.com/vnetbench/vnetbench/internal/history/store"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/textsafe"
	"github.com/vnetbench/vnetbench/internal/units"
	"github.com/vnetbench/vnetbench/report"
)

const defaultHistoryDB = "vnetbench-history.db"

// cmdHistory finds change points in the history of runs: from run
// directories, benchfmt or CSV files given, or from the index that
// 'history add' fills.
func cmdHistory(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "add":
			return cmdHistoryAdd(ctx, cl, args[1:], stdout, stderr)
		case "rebuild":
			return cmdHistoryRebuild(ctx, cl, args[1:], stdout, stderr)
		}
	}
	fs := newFlagSet("history", "[RUN_DIR|BENCHFMT_FILE|CSV_FILE...] [flags]\n       vnetbench history add RUN_DIR...\n       vnetbench history rebuild [RUN_DIR...]", stderr)
	var o historyOpts
	fs.StringVar(&o.db, "db", defaultHistoryDB, "history index read when no inputs are given (see 'history add')")
	format := fs.String("format", "", "output format: text|html|json (default text, or from -o's extension)")
	fs.StringVar(&o.out, "o", "", "write to `FILE` instead of stdout")
	order := fs.String("order", "time", "point order of run directories and benchfmt files: time (as recorded) or given (as listed or added); a CSV's rows stay in file order")
	fs.IntVar(&o.failOnNew, "fail-on-new", 0, "exit 1 when a regression's change point lies in the last `N` points of a series, printing the range to bisect")
	sensitivity := fs.String("sensitivity", "default", "how readily a change is reported: "+levelNames(levelWithP)+", or a p-value `P` in (0, 0.1]")
	fs.BoolVar(&o.all, "all", false, "also show the diagnostics (busy fractions, overheads, perf counters; JSON always has them)")
	fs.Var(&o.metrics, "metric", "only these metrics (repeatable, comma-separated)")
	fs.Var(&o.cells, "cell", "only these cells (repeatable, comma-separated)")
	fs.Var(&o.higher, "higher-is-better", "these metrics improve upwards (repeatable, comma-separated; for CSV columns the catalogue and the name do not tell)")
	fs.Var(&o.lower, "lower-is-better", "these metrics improve downwards (repeatable, comma-separated)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if o.format, err = historyFormat(*format, o.out); err != nil {
		return err
	}
	if err := checkOutputDir(o.out); err != nil {
		return err
	}
	if *order != "time" && *order != "given" {
		return usageErrorf("history: --order %q: want time or given", *order)
	}
	// A CSV's rows have no recorded time: they stay in file order, so a
	// --order time that sorts nothing would pass for one that did.
	if *order == "time" && given(fs, "order") && len(paths) > 0 && !slices.ContainsFunc(paths, func(p string) bool { return !strings.EqualFold(filepath.Ext(p), ".csv") }) {
		return usageErrorf("history: --order time: CSV rows have no recorded time and stay in file order; sort the file by time, or leave --order out")
	}
	if o.failOnNew < 0 || o.failOnNew == 0 && given(fs, "fail-on-new") { // 0 given: no gate, where the job asked for one
		return usageErrorf("history: --fail-on-new %d: want a number of points, 1 or more", o.failOnNew)
	}
	if both := slices.DeleteFunc(slices.Clone(o.higher), func(m string) bool { return !slices.Contains(o.lower, m) }); len(both) > 0 {
		return usageErrorf("history: %s is both --higher-is-better and --lower-is-better; name it in one", both[0])
	}
	if o.params, err = historyParams(*sensitivity); err != nil {
		return err
	}
	series, err := store.Inputs(ctx, paths, o.db, *order == "time", store.GuessBetter)
	if err != nil {
		return err
	}
	return historyRun(series, o, stdout, stderr)
}

// historyOpts are history's settings once its flags are read.
type historyOpts struct {
	db, out, format string
	failOnNew       int
	all             bool
	metrics, cells  listFlag
	higher, lower   listFlag
	params          history.Params
}

// historyRun selects and orders series, finds their change points and
// writes them out; the gate looks at the series shown.
func historyRun(series []history.Series, o historyOpts, stdout, stderr io.Writer) error {
	if err := checkDirections(series, o); err != nil {
		return err
	}
	series, why := history.Select(series, o.metrics, o.cells)
	if why != "" {
		return usageErrorf("history: %s", why)
	}
	for i := range series {
		switch m := series[i].Metric; {
		case slices.Contains(o.higher, m):
			series[i].Better = history.HigherIsBetter
		case slices.Contains(o.lower, m):
			series[i].Better = history.LowerIsBetter
		}
	}
	series = store.ResultsFirst(series)
	shown := series
	if !o.all && len(o.metrics) == 0 {
		shown = slices.DeleteFunc(slices.Clone(series), func(s history.Series) bool { return store.Diagnostic(s.Metric) })
	}
	note := ""
	if hidden := len(series) - len(shown); hidden > 0 {
		note = fmt.Sprintf("%d diagnostic series (busy fractions, overheads, perf counters) not shown; --all shows them", hidden)
	}
	if o.format == "json" {
		shown = series
	}
	rs := history.Analyze(shown, o.params)
	var buf bytes.Buffer
	var err error
	switch o.format {
	case "json":
		b, merr := history.MarshalResults(rs)
		if merr != nil {
			return merr
		}
		buf.Write(append(b, '\n'))
	case "html":
		err = history.WriteHTML(&buf, rs, note)
	default:
		if err = history.WriteText(&buf, rs); err == nil && note != "" {
			fmt.Fprintf(&buf, "\n(%s)\n", note)
		}
	}
	if err != nil {
		return err
	}
	if err := writeOutput(o.out, buf.Bytes(), stdout); err != nil {
		return err
	}
	if o.failOnNew > 0 {
		if o.format == "json" && !o.all && len(o.metrics) == 0 {
			rs = slices.DeleteFunc(rs, func(r history.Result) bool { return store.Diagnostic(r.Metric) })
		}
		return gateNew(rs, o.failOnNew, stderr)
	}
	return nil
}

// checkDirections refuses a --higher-is-better or --lower-is-better
// name that no series has: a mistyped column (latency-ms for latency_ms)
// left its direction to the name's guess, silently.
func checkDirections(series []history.Series, o historyOpts) error {
	var has []string
	for _, s := range series {
		if !slices.Contains(has, s.Metric) {
			has = append(has, s.Metric)
		}
	}
	for _, f := range []struct {
		flag  string
		names listFlag
	}{{"higher-is-better", o.higher}, {"lower-is-better", o.lower}} {
		for _, m := range f.names {
			if slices.Contains(has, m) {
				continue
			}
			list := has
			if len(list) > 8 {
				list = append(slices.Clone(list[:8]), fmt.Sprintf("and %d more", len(has)-8))
			}
			return usageErrorf("history: --%s %s names no metric of the history; it has %s", f.flag, m, strings.Join(list, ", "))
		}
	}
	return nil
}

// historyParams is the detector's parameter set for --sensitivity: a
// name of history.Levels or a p-value.
func historyParams(sensitivity string) (history.Params, error) {
	p := history.Default
	if sensitivity == "" {
		return p, nil
	}
	if i := slices.IndexFunc(history.Levels, func(l history.Level) bool { return l.Name == sensitivity }); i >= 0 {
		p.Alpha = history.Levels[i].Alpha
		return p, nil
	}
	a, err := strconv.ParseFloat(sensitivity, 64)
	if err != nil || !(a > 0 && a <= 0.1) {
		return p, usageErrorf("history: --sensitivity %q: want %s or a p-value in (0, 0.1], e.g. --sensitivity 0.01", sensitivity, levelNames(levelName))
	}
	p.Alpha = a
	return p, nil
}

// levelNames lists history.Levels as label writes each: their names for
// --sensitivity's error ("low, default, high"), with their p for its
// help ("low (p <= 0.0002), default (p <= 0.001), ...").
func levelNames(label func(history.Level) string) string {
	ns := make([]string, len(history.Levels))
	for i, l := range history.Levels {
		ns[i] = label(l)
	}
	return strings.Join(ns, ", ")
}

func levelName(l history.Level) string { return l.Name }

func levelWithP(l history.Level) string { return fmt.Sprintf("%s (p <= %g)", l.Name, l.Alpha) }

// historyFormats are history's output formats, the default first.
var historyFormats = []string{"text", "html", "json"}

func historyFormat(format, out string) (string, error) {
	return report.OutputFormat("history", format, out, historyFormats)
}

// gateNew fails when a regression lies in the last n points of a series
// and says which points to bisect between.
func gateNew(rs []history.Result, n int, stderr io.Writer) error {
	found, short, longest := 0, 0, 0
	for _, r := range rs {
		longest = max(longest, len(r.Points))
		if len(r.Points) < history.Default.MinPoints() {
			short++
		}
		for _, c := range r.NewRegressions(n) {
			found++
			prev := r.Points[c.Index-1].Label
			fmt.Fprintf(stderr, "vnetbench: new regression: %s: %s (%s -> %s, p %.1e) first at point %d %q; bisect between %q (last good) and %q (first bad)\n",
				r.Title(), historyPct(c.Change), r.Format(c.Before), r.Format(c.After), c.P, c.Index, c.Label, prev, c.Label)
			if c.EmulationChanged {
				fmt.Fprintf(stderr, "vnetbench: note: %s\n", c.EmulationNote())
			}
		}
	}
	switch {
	case found == 1:
		return fmt.Errorf("history: 1 regression in the last %d points; bisect the range above", n)
	case found > 1:
		return fmt.Errorf("history: %d regressions in the last %d points; bisect the ranges above", found, n)
	case len(rs) > 0 && short == len(rs):
		// A gate that can find nothing must not pass as if it had
		// looked: undecided, as compare's UNKNOWN (exit 3).
		return fmt.Errorf("history: --fail-on-new: %w: no series has the %d points a change point needs (the longest has %d); add runs (history add) and gate again",
			fault.ErrUndecided, history.Default.MinPoints(), longest)
	case short > 0:
		fmt.Fprintf(stderr, "vnetbench: warning: --fail-on-new: %d of %d series have fewer than the %d points a change point needs: not gated yet\n",
			short, len(rs), history.Default.MinPoints())
	}
	return nil
}

func historyPct(c *float64) string {
	if c == nil {
		return "change " + units.PctFromZero
	}
	return fmt.Sprintf("%+.1f%%", 100**c)
}

func cmdHistoryAdd(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("history add", "RUN_DIR... [--db FILE]", stderr)
	db := fs.String("db", defaultHistoryDB, "history index to record the runs in (created when missing)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fs.Usage()
		return usageErrorf("history add: no run directories given; e.g. vnetbench history add runs/2026-12-01")
	}
	// The index records run directories (and benchfmt files); a CSV is a
	// history of its own, which was refused as "no benchmark results".
	for _, p := range paths {
		if strings.EqualFold(filepath.Ext(p), ".csv") {
			return usageErrorf("history add: %s: the index records run directories and benchfmt files, not CSV series; read a CSV's series with 'vnetbench history %s'", p, p)
		}
	}
	// A run given twice is one record (by its absolute path): the count
	// said "recorded 2 runs" for one.
	distinct := map[string]bool{}
	for _, p := range paths {
		if filepath.Base(p) == results.ResultsFile { // the run directory's record
			p = filepath.Dir(p)
		}
		a, aerr := filepath.Abs(p)
		if aerr != nil {
			a = p
		}
		distinct[filepath.Clean(a)] = true
	}
	runs, err := store.ReadRuns(paths)
	if err != nil {
		return err
	}
	for _, r := range runs {
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "vnetbench: warning: %s\n", textsafe.Terminal(w))
		}
	}
	x, err := store.Open(*db)
	if err != nil {
		return err
	}
	err = x.Add(ctx, runs...)
	if cerr := x.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "recorded %s in %s\n", units.Plural(len(distinct), "run"), *db)
	return nil
}

func cmdHistoryRebuild(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("history rebuild", "[RUN_DIR...] [--db FILE]", stderr)
	db := fs.String("db", defaultHistoryDB, "history index to recreate")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	n, err := store.Rebuild(ctx, *db, paths)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rebuilt %s from %s\n", *db, units.Plural(n, "run"))
	return nil
}
