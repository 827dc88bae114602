package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/history"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/internal/safefs"
)

// Inputs reads the series of run directories, benchfmt and CSV files
// (paths), or of the index at db when there are none. byTime orders the
// runs as recorded rather than as given; better is a CSV column's
// direction (GuessBetter).
func Inputs(ctx context.Context, paths []string, db string, byTime bool, better func(string) history.Better) ([]history.Series, error) {
	if len(paths) == 0 {
		if _, err := os.Stat(db); err != nil {
			return nil, fault.Input("history: no inputs given and no history index at %s; pass run directories, benchfmt or CSV files, or record runs with 'vnetbench history add RUN_DIR...'", db)
		}
		x, err := Open(db)
		if err != nil {
			return nil, err
		}
		defer x.Close()
		return x.Series(ctx, byTime)
	}
	var series []history.Series
	var runs []*Run
	for _, p := range paths {
		if strings.EqualFold(filepath.Ext(p), ".csv") {
			s, err := readCSV(p, better)
			if err != nil {
				return nil, err
			}
			series = append(series, s...)
			continue
		}
		r, err := ReadRun(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if byTime {
		SortRuns(runs)
	}
	return append(Series(runs), series...), nil
}

func readCSV(path string, better func(string) history.Better) ([]history.Series, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fault.Input("history: %s does not exist", path)
		}
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	s, err := history.ReadCSV(safefs.Reader(f, safefs.MaxCSV, path), path, better)
	for i := range s {
		if m, ok := results.Lookup(metric.Key(s[i].Metric)); ok {
			s[i].Unit = m.Unit
		}
	}
	if tl := (*safefs.TooLargeError)(nil); errors.As(err, &tl) {
		return nil, tl // names the file itself
	}
	if errors.Is(err, history.ErrCSV) {
		return nil, fault.Input("history: %v", err)
	}
	return s, err
}

// Diagnostic tells whether a metric tells how the harness measured (its
// CPU, busy fractions, overheads, cross-checks) or counts events (perf
// counters) rather than how the datapath performs.
func Diagnostic(m string) bool {
	return results.IsDiagnostic(metric.Key(m)) || strings.HasPrefix(m, results.PerfPrefix) || strings.HasSuffix(m, "_busy_frac")
}

// resultRank orders the result metrics people read first: packet rates,
// losses, throughput, then latency.
var resultRank = []metric.Key{metric.TxPPS, metric.LostPPS, metric.RxPPS, metric.QdiscDropPPS, metric.ThroughputBPS, "vsock_recv_bps",
	metric.RTTP50S, metric.RTTP99S, metric.RTTP999S, metric.RTTMaxS, metric.RTTInflationS, metric.RTTIdleP50S}

// ResultsFirst orders series stably: result metrics in resultRank's
// order, other result metrics, then diagnostics.
func ResultsFirst(series []history.Series) []history.Series {
	rank := func(m string) int {
		if Diagnostic(m) {
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

// GuessBetter is a CSV column's direction: the catalogue's for a metric
// it knows, else from the name: losses (also "lost"), drops and errors are
// lower-is-better, also as rates ("drop_pps", "errors_per_s"); other
// rates (ending in /s, _per_s, _per_sec, ops, pps, bps, iops, qps, rps,
// tps) and throughput or bandwidth are higher-is-better; times (ending in
// _s, _ms, _us, _ns, /op, or naming latency, duration, time, rtt, jitter) are
// lower-is-better; other names neutral.
func GuessBetter(name string) history.Better {
	if _, ok := results.Lookup(metric.Key(name)); ok {
		return Better(name)
	}
	m := strings.ToLower(name)
	has := func(subs ...string) bool {
		return slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(m, s) })
	}
	ends := func(sufs ...string) bool {
		return slices.ContainsFunc(sufs, func(s string) bool { return strings.HasSuffix(m, s) })
	}
	switch {
	case has("loss", "lost", "drop", "error"):
		return history.LowerIsBetter
	case ends("/s", "_per_s", "_per_sec", "persec", "ops", "pps", "bps", "iops", "qps", "rps", "tps") || has("throughput", "bandwidth"):
		return history.HigherIsBetter
	case ends("_s", "_ms", "_us", "_ns", "/op", "_sec", "_secs", "_seconds") || has("latency", "duration", "time", "rtt", "jitter"):
		return history.LowerIsBetter
	}
	return history.Neutral
}
