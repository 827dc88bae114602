package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/history"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

type runRow struct {
	id       int64
	time     time.Time
	data     []byte
	labels   []string            // by kernel number
	emulated []history.Emulation // by kernel number
}

// Series returns every recorded series, points ordered by the runs'
// recorded time (byTime) or in the order the runs were added.
func (x *Index) Series(ctx context.Context, byTime bool) ([]history.Series, error) {
	runs, err := x.runs(ctx, byTime)
	if err != nil {
		return nil, err
	}
	out, byID, err := x.seriesRows(ctx)
	if err != nil {
		return nil, err
	}
	// Number the kernels so a point's label is a slice lookup.
	kernelNo := map[string]int{}
	seriesKernel := make([]int, len(out))
	for i, s := range out {
		k, ok := kernelNo[s.Kernel]
		if !ok {
			k = len(kernelNo)
			kernelNo[s.Kernel] = k
		}
		seriesKernel[i] = k
	}
	if err := x.readLabels(ctx, runs, kernelNo); err != nil {
		return nil, err
	}
	if err := x.readValues(ctx, runs); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Points = make([]history.Point, 0, len(runs))
	}
	for _, r := range runs {
		err := decodeValues(r.data, func(series int64, v float64) {
			if series < int64(len(byID)) && byID[series] >= 0 {
				i := byID[series]
				k := seriesKernel[i]
				out[i].Points = append(out[i].Points, history.Point{Label: r.labels[k], Time: r.time, Value: v, Emulated: r.emulated[k]})
			}
		})
		if err != nil {
			return nil, fault.Input("history index %s: run %d: %v; run 'vnetbench history rebuild RUN_DIR...'", x.path, r.id, err)
		}
		r.data = nil
	}
	return out, nil
}

// runs returns the recorded runs in point order.
func (x *Index) runs(ctx context.Context, byTime bool) ([]*runRow, error) {
	order := "id"
	if byTime {
		order = "time, id"
	}
	rows, err := x.db.QueryContext(ctx, "SELECT id, time FROM runs ORDER BY "+order)
	if err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	var out []*runRow
	for rows.Next() {
		r := &runRow{}
		var ns int64
		if err := rows.Scan(&r.id, &ns); err != nil {
			return nil, err
		}
		if ns != 0 {
			r.time = time.Unix(0, ns).UTC()
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func byRunID(runs []*runRow) map[int64]*runRow {
	m := make(map[int64]*runRow, len(runs))
	for _, r := range runs {
		m[r.id] = r
	}
	return m
}

func (x *Index) readValues(ctx context.Context, runs []*runRow) error {
	byID := byRunID(runs)
	rows, err := x.db.QueryContext(ctx, "SELECT run, data FROM run_values")
	if err != nil {
		return fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var run int64
		var data []byte
		if err := rows.Scan(&run, &data); err != nil {
			return fmt.Errorf("history index %s: %w", x.path, err)
		}
		if r := byID[run]; r != nil {
			r.data = data
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("history index %s: %w", x.path, err)
	}
	return nil
}

func (x *Index) readLabels(ctx context.Context, runs []*runRow, kernelNo map[string]int) error {
	byID := byRunID(runs)
	for _, r := range runs {
		r.labels = make([]string, len(kernelNo))
		r.emulated = make([]history.Emulation, len(kernelNo))
	}
	rows, err := x.db.QueryContext(ctx, "SELECT run, kernel, label, emulated FROM labels")
	if err != nil {
		return fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var run int64
		var kernel, label string
		var emulated sql.NullBool
		if err := rows.Scan(&run, &kernel, &label, &emulated); err != nil {
			return fmt.Errorf("history index %s: %w", x.path, err)
		}
		k, ok := kernelNo[kernel]
		if r := byID[run]; r != nil && ok {
			r.labels[k] = label
			r.emulated[k] = history.EmulationOf(emulated.Valid, emulated.Bool)
		}
	}
	return rows.Err()
}

// seriesRows returns the recorded series (without points) and, by series
// id, each one's position in them (-1 for none).
func (x *Index) seriesRows(ctx context.Context) ([]history.Series, []int, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT id, scenario, cell, kernel, metric FROM series ORDER BY scenario, cell, kernel, metric")
	if err != nil {
		return nil, nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	var out []history.Series
	var byID []int
	for rows.Next() {
		var id int64
		var s history.Series
		if err := rows.Scan(&id, &s.Scenario, &s.Cell, &s.Kernel, &s.Metric); err != nil {
			return nil, nil, err
		}
		s.Better = Better(s.Metric)
		s.Unit = results.Describe(metric.Key(s.Metric)).Unit
		for int64(len(byID)) <= id {
			byID = append(byID, -1)
		}
		byID[id] = len(out)
		out = append(out, s)
	}
	return out, byID, rows.Err()
}

// Rebuild recreates the index at path from run directories alone: the
// given ones, else those the index recorded. It replaces the index's
// contents in one immediate transaction, so a concurrent 'history add'
// waits for it and lands before or after it, never in a file the rebuild
// then replaces. An index that SQLite cannot read (corrupt, or not a
// database) is replaced by a new file instead: no writer can use it
// (rebuildFile). A link at the index or its journals is refused, as Open
// refuses it.
func Rebuild(ctx context.Context, path string, paths []string) (int, error) {
	if err := noLink(path); err != nil {
		return 0, err
	}
	fromIndex := len(paths) == 0
	if fromIndex {
		if _, err := os.Stat(path); err != nil {
			return 0, fault.Input("no run directories given and no index at %s to take them from; run 'vnetbench history rebuild RUN_DIR...'", path)
		}
	}
	before := journals(path)
	x, err := open(path)
	if err != nil {
		if !unreadable(err) || fromIndex {
			return 0, openErr(path, err)
		}
		return rebuildFile(ctx, path, paths, before)
	}
	defer x.Close()
	if fromIndex {
		if paths, err = x.Paths(ctx); err != nil {
			return 0, err
		}
	}
	runs, err := ReadRuns(paths)
	if err != nil && fromIndex {
		// ReadRun's "pass a run directory" read as if the user had
		// named it: the index named it, and is left as it was.
		return 0, fault.Input("history rebuild: a run that %s records cannot be read, so the index is left as it was; give the run directories to rebuild from (vnetbench history rebuild --db %s RUN_DIR...): %v", path, path, err)
	}
	if err != nil {
		return 0, err
	}
	n, err := x.replace(ctx, runs, fromIndex)
	if err != nil && unreadable(err) && !fromIndex {
		x.Close()
		return rebuildFile(ctx, path, paths, before)
	}
	return n, err
}

// ReadRuns reads the run directories paths (ReadRun), failing at the
// first that cannot be read.
func ReadRuns(paths []string) ([]*Run, error) {
	var runs []*Run
	for _, p := range paths {
		r, err := ReadRun(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// replace empties the index and records runs in one transaction. With
// again, runs recorded since they were read (by a concurrent add) are
// read and kept too.
func (x *Index) replace(ctx context.Context, runs []*Run, again bool) (int, error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer tx.Rollback()
	if again {
		added, err := pathsSince(ctx, tx, runs)
		if err != nil {
			return 0, fmt.Errorf("history index %s: %w", x.path, err)
		}
		more, err := ReadRuns(added)
		if err != nil {
			return 0, err
		}
		runs = append(runs, more...)
	}
	for _, t := range []string{"run_values", "run_spread", "labels", "runs", "series"} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+t); err != nil {
			return 0, fmt.Errorf("history index %s: %w", x.path, err)
		}
	}
	seriesID := map[[4]string]int64{}
	for _, r := range runs {
		if err := addRun(ctx, tx, r, seriesID); err != nil {
			return 0, fmt.Errorf("history index %s: add %s: %w", x.path, r.Path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("history index %s: %w", x.path, err)
	}
	return len(runs), nil
}

// pathsSince returns the recorded paths that none of runs has.
func pathsSince(ctx context.Context, tx *sql.Tx, runs []*Run) ([]string, error) {
	have := map[string]bool{}
	for _, r := range runs {
		have[absPath(r.Path)] = true
	}
	rows, err := tx.QueryContext(ctx, "SELECT path FROM runs ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		if !have[p] {
			out = append(out, p)
		}
	}
	return out, rows.Err()
}

// unreadable tells whether err is SQLite saying the file is corrupt or
// not a database.
func unreadable(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}
