package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/history"
	"github.com/vnetbench/vnetbench/internal/history/store"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
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
	order := fs.String("order", "time", "point order of run directories and benchfmt files: time (as recorded) or given (as listed or added)")
	fs.IntVar(&o.failOnNew, "fail-on-new", 0, "exit 1 when a regression's change point lies in the last `N` points of a series, printing the range to bisect")
	sensitivity := fs.String("sensitivity", "default", "how readily a change is reported: low (p <= 0.001), default (p <= 0.005), high (p <= 0.02), or a p-value `P` in (0, 0.1]")
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
	if *order != "time" && *order != "given" {
		return usageErrorf("history: --order %q: want time or given", *order)
	}
	if o.failOnNew < 0 {
		return usageErrorf("history: --fail-on-new %d: want a number of points, 1 or more", o.failOnNew)
	}
	if both := slices.DeleteFunc(slices.Clone(o.higher), func(m string) bool { return !slices.Contains(o.lower, m) }); len(both) > 0 {
		return usageErrorf("history: %s is both --higher-is-better and --lower-is-better; name it in one", both[0])
	}
	if o.params, err = historyParams(*sensitivity); err != nil {
		return err
	}
	series, err := historySeries(ctx, paths, o.db, *order == "time", guessBetter)
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
	series = slices.DeleteFunc(series, func(s history.Series) bool {
		return (len(o.metrics) > 0 && !slices.Contains(o.metrics, s.Metric)) || (len(o.cells) > 0 && !slices.Contains(o.cells, s.Cell))
	})
	if len(series) == 0 {
		return usageErrorf("history: no series match --metric %s --cell %s", o.metrics.String(), o.cells.String())
	}
	for i := range series {
		switch m := series[i].Metric; {
		case slices.Contains(o.higher, m):
			series[i].Better = history.HigherIsBetter
		case slices.Contains(o.lower, m):
			series[i].Better = history.LowerIsBetter
		}
	}
	series = resultsFirst(series)
	shown := series
	if !o.all && len(o.metrics) == 0 {
		shown = slices.DeleteFunc(slices.Clone(series), func(s history.Series) bool { return diagnosticMetric(s.Metric) })
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
			rs = slices.DeleteFunc(rs, func(r history.Result) bool { return diagnosticMetric(r.Metric) })
		}
		return gateNew(rs, o.failOnNew, stderr)
	}
	return nil
}

// diagnosticMetric tells whether a metric tells how the harness measured
// (its CPU, busy fractions, overheads, cross-checks) or counts events
// (perf counters) rather than how the datapath performs.
func diagnosticMetric(m string) bool {
	return results.IsDiagnostic(metric.Key(m)) || strings.HasPrefix(m, results.PerfPrefix) || strings.HasSuffix(m, "_busy_frac")
}

// resultRank orders the result metrics people read first: packet rates,
// losses, throughput, then latency.
var resultRank = []metric.Key{metric.TxPPS, metric.LostPPS, metric.RxPPS, metric.QdiscDropPPS, metric.ThroughputBPS, "vsock_recv_bps",
	metric.RTTP50S, metric.RTTP99S, metric.RTTP999S, metric.RTTMaxS, metric.RTTInflationS, metric.RTTIdleP50S}

// resultsFirst orders series stably: result metrics in resultRank's
// order, other result metrics, then diagnostics.
func resultsFirst(series []history.Series) []history.Series {
	rank := func(m string) int {
		if diagnosticMetric(m) {
			return len(resultRank) + 2
		}
		if i := slices.Index(resultRank, metric.Key(m)); i >= 0 {
			return i
		}
		return len(resultRank) + 1
	}
	slices.SortStableFunc(series, func(a, b history.Series) int { return rank(a.Metric) - rank(b.Metric) })
	return series
}

// guessBetter is a CSV column's direction: the catalogue's for a metric
// it knows, else from the name: rates (ending in /s, _per_s, _per_sec,
// ops, pps, bps, iops, qps, rps, tps) and throughput or bandwidth are
// higher-is-better; times (ending in _s, _ms, _us, _ns, /op, or naming
// latency, duration, time, rtt) and losses, drops and errors are
// lower-is-better; other names neutral.
func guessBetter(name string) history.Better {
	if _, ok := results.Lookup(metric.Key(name)); ok {
		return store.Better(name)
	}
	m := strings.ToLower(name)
	has := func(subs ...string) bool {
		return slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(m, s) })
	}
	ends := func(sufs ...string) bool {
		return slices.ContainsFunc(sufs, func(s string) bool { return strings.HasSuffix(m, s) })
	}
	switch {
	case ends("/s", "_per_s", "_per_sec", "persec", "ops", "pps", "bps", "iops", "qps", "rps", "tps") || has("throughput", "bandwidth"):
		return history.HigherIsBetter
	case ends("_s", "_ms", "_us", "_ns", "/op", "_sec", "_secs", "_seconds") || has("latency", "duration", "time", "rtt", "loss", "drop", "error"):
		return history.LowerIsBetter
	}
	return history.Neutral
}

// historyParams is the detector's parameter set for --sensitivity.
func historyParams(sensitivity string) (history.Params, error) {
	p := history.Default
	switch sensitivity {
	case "low":
		p.Alpha = 0.001
	case "default", "":
	case "high":
		p.Alpha = 0.02
	default:
		a, err := strconv.ParseFloat(sensitivity, 64)
		if err != nil || !(a > 0 && a <= 0.1) {
			return p, usageErrorf("history: --sensitivity %q: want low, default, high or a p-value in (0, 0.1], e.g. --sensitivity 0.01", sensitivity)
		}
		p.Alpha = a
	}
	return p, nil
}

func historyFormat(format, out string) (string, error) {
	if format == "" {
		switch strings.ToLower(filepath.Ext(out)) {
		case ".json":
			return "json", nil
		case ".html", ".htm":
			return "html", nil
		}
		return "text", nil
	}
	if format != "text" && format != "html" && format != "json" {
		return "", usageErrorf("history: --format %q: want text, html or json", format)
	}
	return format, nil
}

// historySeries reads the series of the inputs, or of the index at db
// when there are none.
func historySeries(ctx context.Context, paths []string, db string, byTime bool, better func(string) history.Better) ([]history.Series, error) {
	if len(paths) == 0 {
		if _, err := os.Stat(db); err != nil {
			return nil, usageErrorf("history: no inputs given and no history index at %s; pass run directories, benchfmt or CSV files, or record runs with 'vnetbench history add RUN_DIR...'", db)
		}
		x, err := store.Open(db)
		if err != nil {
			return nil, err
		}
		defer x.Close()
		return x.Series(ctx, byTime)
	}
	var series []history.Series
	var runs []*store.Run
	for _, p := range paths {
		if strings.EqualFold(filepath.Ext(p), ".csv") {
			s, err := readHistoryCSV(p, better)
			if err != nil {
				return nil, err
			}
			series = append(series, s...)
			continue
		}
		r, err := store.ReadRun(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if byTime {
		store.SortRuns(runs)
	}
	return append(store.Series(runs), series...), nil
}

func readHistoryCSV(path string, better func(string) history.Better) ([]history.Series, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageErrorf("history: %s does not exist", path)
		}
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	s, err := history.ReadCSV(safefs.Reader(f, safefs.MaxResults, path), path, better)
	for i := range s {
		if m, ok := results.Lookup(metric.Key(s[i].Metric)); ok {
			s[i].Unit = m.Unit
		}
	}
	if errors.Is(err, history.ErrCSV) {
		return nil, usageErrorf("history: %v", err)
	}
	return s, err
}

// gateNew fails when a regression lies in the last n points of a series
// and says which points to bisect between.
func gateNew(rs []history.Result, n int, stderr io.Writer) error {
	found := 0
	for _, r := range rs {
		for _, c := range r.NewRegressions(n) {
			found++
			prev := r.Points[c.Index-1].Label
			fmt.Fprintf(stderr, "vnetbench: new regression: %s: %s (%s -> %s, p %.1e) first at point %d %q; bisect between %q (last good) and %q (first bad)\n",
				r.Title(), historyPct(c.Change), r.Format(c.Before), r.Format(c.After), c.P, c.Index, c.Label, prev, c.Label)
		}
	}
	if found > 0 {
		return fmt.Errorf("history: %d regressions in the last %d points; bisect the ranges above", found, n)
	}
	return nil
}

func historyPct(c *float64) string {
	if c == nil {
		return "change from 0"
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
	var runs []*store.Run
	for _, p := range paths {
		r, err := store.ReadRun(p)
		if err != nil {
			return err
		}
		runs = append(runs, r)
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
	fmt.Fprintf(stdout, "recorded %d runs in %s\n", len(runs), *db)
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
	fmt.Fprintf(stdout, "rebuilt %s from %d runs\n", *db, n)
	return nil
}
