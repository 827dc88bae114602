package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/history"
)

type runRow struct {
	id   int64
	time int64
	pos  int // position in point order
}

// Series returns every recorded series, points ordered by the runs'
// recorded time (byTime) or in the order the runs were added.
func (x *Index) Series(ctx context.Context, byTime bool) ([]history.Series, error) {
	runs, err := x.runs(ctx, byTime)
	if err != nil {
		return nil, err
	}
	labels, err := x.labels(ctx)
	if err != nil {
		return nil, err
	}
	out, byID, err := x.seriesRows(ctx)
	if err != nil {
		return nil, err
	}
	type pt struct {
		run *runRow
		v   float64
	}
	pts := make([][]pt, len(out))
	rows, err := x.db.QueryContext(ctx, "SELECT run, series, value FROM points")
	if err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var run, series int64
		var v float64
		if err := rows.Scan(&run, &series, &v); err != nil {
			return nil, err
		}
		i, ok := byID[series]
		if r := runs[run]; ok && r != nil {
			pts[i] = append(pts[i], pt{r, v})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	for i := range out {
		p := pts[i]
		slices.SortFunc(p, func(a, b pt) int { return a.run.pos - b.run.pos })
		out[i].Points = make([]history.Point, len(p))
		for j, q := range p {
			var t time.Time
			if q.run.time != 0 {
				t = time.Unix(0, q.run.time).UTC()
			}
			out[i].Points[j] = history.Point{Label: labels[labelKey{q.run.id, out[i].Kernel}], Time: t, Value: q.v}
		}
	}
	return out, nil
}

func (x *Index) runs(ctx context.Context, byTime bool) (map[int64]*runRow, error) {
	order := "id"
	if byTime {
		order = "time, id"
	}
	rows, err := x.db.QueryContext(ctx, "SELECT id, time FROM runs ORDER BY "+order)
	if err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	out := map[int64]*runRow{}
	for rows.Next() {
		r := &runRow{pos: len(out)}
		if err := rows.Scan(&r.id, &r.time); err != nil {
			return nil, err
		}
		out[r.id] = r
	}
	return out, rows.Err()
}

type labelKey struct {
	run    int64
	kernel string
}

func (x *Index) labels(ctx context.Context) (map[labelKey]string, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT run, kernel, label FROM labels")
	if err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	out := map[labelKey]string{}
	for rows.Next() {
		var k labelKey
		var l string
		if err := rows.Scan(&k.run, &k.kernel, &l); err != nil {
			return nil, err
		}
		out[k] = l
	}
	return out, rows.Err()
}

func (x *Index) seriesRows(ctx context.Context) ([]history.Series, map[int64]int, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT id, scenario, cell, kernel, metric FROM series ORDER BY scenario, cell, kernel, metric")
	if err != nil {
		return nil, nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	var out []history.Series
	byID := map[int64]int{}
	for rows.Next() {
		var id int64
		var s history.Series
		if err := rows.Scan(&id, &s.Scenario, &s.Cell, &s.Kernel, &s.Metric); err != nil {
			return nil, nil, err
		}
		s.Better = Better(s.Metric)
		byID[id] = len(out)
		out = append(out, s)
	}
	return out, byID, rows.Err()
}

// Rebuild recreates the index at path from run directories alone: the
// given paths, or when none are given those the old index recorded.
func Rebuild(ctx context.Context, path string, paths []string) (int, error) {
	if len(paths) == 0 {
		if _, err := os.Stat(path); err != nil {
			return 0, fault.Input("no run directories given and no index at %s to take them from; run 'vnetbench history rebuild RUN_DIR...'", path)
		}
		old, err := Open(path)
		if err != nil {
			return 0, err
		}
		paths, err = old.Paths(ctx)
		old.Close()
		if err != nil {
			return 0, err
		}
	}
	var runs []*Run
	for _, p := range paths {
		r, err := ReadRun(p)
		if err != nil {
			return 0, err
		}
		runs = append(runs, r)
	}
	tmp := path + ".rebuild"
	for _, f := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
		os.Remove(f)
	}
	x, err := Open(tmp)
	if err != nil {
		return 0, err
	}
	err = x.Add(ctx, runs...)
	if cerr := x.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	for _, f := range []string{path + "-wal", path + "-shm"} {
		os.Remove(f)
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("replace history index %s: %w", path, err)
	}
	return len(runs), nil
}
