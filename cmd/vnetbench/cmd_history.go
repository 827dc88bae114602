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
	db := fs.String("db", defaultHistoryDB, "history index read when no inputs are given (see 'history add')")
	format := fs.String("format", "", "output format: text|html|json (default text, or from -o's extension)")
	out := fs.String("o", "", "write to `FILE` instead of stdout")
	order := fs.String("order", "time", "point order of run directories and benchfmt files: time (as recorded) or given (as listed or added)")
	failOnNew := fs.Int("fail-on-new", 0, "exit 1 when a regression's change point lies in the last `N` points of a series, printing the range to bisect")
	sensitivity := fs.String("sensitivity", "default", "how readily a change is reported: low (p <= 0.001), default (p <= 0.005), high (p <= 0.02), or a p-value `P` in (0, 0.1]")
	var metrics, cells listFlag
	fs.Var(&metrics, "metric", "only these metrics (repeatable, comma-separated)")
	fs.Var(&cells, "cell", "only these cells (repeatable, comma-separated)")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	f, err := historyFormat(*format, *out)
	if err != nil {
		return err
	}
	if *order != "time" && *order != "given" {
		return usageErrorf("history: --order %q: want time or given", *order)
	}
	if *failOnNew < 0 {
		return usageErrorf("history: --fail-on-new %d: want a number of points, 1 or more", *failOnNew)
	}
	params, err := historyParams(*sensitivity)
	if err != nil {
		return err
	}
	series, err := historySeries(ctx, paths, *db, *order == "time")
	if err != nil {
		return err
	}
	series = slices.DeleteFunc(series, func(s history.Series) bool {
		return (len(metrics) > 0 && !slices.Contains(metrics, s.Metric)) || (len(cells) > 0 && !slices.Contains(cells, s.Cell))
	})
	if len(series) == 0 {
		return usageErrorf("history: no series match --metric %s --cell %s", metrics.String(), cells.String())
	}
	rs := history.Analyze(series, params)
	var buf bytes.Buffer
	switch f {
	case "json":
		b, err := history.MarshalResults(rs)
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	case "html":
		err = history.WriteHTML(&buf, rs)
	default:
		err = history.WriteText(&buf, rs)
	}
	if err != nil {
		return err
	}
	if err := writeOutput(*out, buf.Bytes(), stdout); err != nil {
		return err
	}
	if *failOnNew > 0 {
		return gateNew(rs, *failOnNew, stderr)
	}
	return nil
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
func historySeries(ctx context.Context, paths []string, db string, byTime bool) ([]history.Series, error) {
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
			s, err := readHistoryCSV(p)
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

func readHistoryCSV(path string) ([]history.Series, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageErrorf("history: %s does not exist", path)
		}
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	s, err := history.ReadCSV(safefs.Reader(f, safefs.MaxResults, path), path, store.Better)
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
			fmt.Fprintf(stderr, "vnetbench: new regression: %s: %s (%.4g -> %.4g, p %.1e) first at point %d %q; bisect between %q (last good) and %q (first bad)\n",
				r.Title(), historyPct(c.Change), c.Before, c.After, c.P, c.Index, c.Label, prev, c.Label)
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
