package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// encodeSpreads packs a run's spreads: per value its series id (uint32),
// repetitions (uint32), mean and variance of the logs (float64 bits),
// little-endian.
func encodeSpreads(ids []int64, vs []Value) []byte {
	b := make([]byte, 0, spreadSize*len(vs))
	for i, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(ids[i]))
		b = binary.LittleEndian.AppendUint32(b, uint32(v.Spread.N))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Spread.Mean))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Spread.Var))
	}
	return b
}

const spreadSize = 24

// decodeSpreads calls f for each series id and spread of data.
func decodeSpreads(data []byte, f func(series int64, s verdict.Spread)) error {
	if len(data)%spreadSize != 0 {
		return fmt.Errorf("run spreads of %d bytes, not a multiple of %d", len(data), spreadSize)
	}
	for i := 0; i < len(data); i += spreadSize {
		f(int64(binary.LittleEndian.Uint32(data[i:])), verdict.Spread{
			N:    int(binary.LittleEndian.Uint32(data[i+4:])),
			Mean: math.Float64frombits(binary.LittleEndian.Uint64(data[i+8:])),
			Var:  math.Float64frombits(binary.LittleEndian.Uint64(data[i+16:]))})
	}
	return nil
}

// Noise is the within-run noise of every cell and metric of an index:
// the spreads of the recorded runs, oldest first (by recorded time),
// pooled over scenarios and kernel labels.
type Noise struct {
	From    string
	spreads map[[2]string][]verdict.Spread
}

// Noise reads the spreads of every recorded run. Runs recorded before
// the index kept spreads have none: 'history rebuild' reads them again.
func (x *Index) Noise(ctx context.Context) (*Noise, error) {
	series, byID, err := x.seriesRows(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := x.runs(ctx, true)
	if err != nil {
		return nil, err
	}
	rows, err := x.db.QueryContext(ctx, "SELECT run, data FROM run_spread")
	if err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	defer rows.Close()
	data := map[int64][]byte{}
	for rows.Next() {
		var run int64
		var d []byte
		if err := rows.Scan(&run, &d); err != nil {
			return nil, fmt.Errorf("history index %s: %w", x.path, err)
		}
		data[run] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history index %s: %w", x.path, err)
	}
	nz := &Noise{From: x.path, spreads: map[[2]string][]verdict.Spread{}}
	for _, r := range runs {
		err := decodeSpreads(data[r.id], func(id int64, s verdict.Spread) {
			if id < int64(len(byID)) && byID[id] >= 0 {
				k := [2]string{series[byID[id]].Cell, series[byID[id]].Metric}
				nz.spreads[k] = append(nz.spreads[k], s)
			}
		})
		if err != nil {
			return nil, fault.Input("history index %s: run %d: %v; run 'vnetbench history rebuild RUN_DIR...'", x.path, r.id, err)
		}
	}
	return nz, nil
}

// Empty reports whether no recorded run has a spread of 2 or more
// repetitions.
func (nz *Noise) Empty() bool {
	for _, ss := range nz.spreads {
		for _, s := range ss {
			if s.N >= 2 && !math.IsNaN(s.Var) {
				return false
			}
		}
	}
	return true
}

// Scale is the pooled noise of metric in cell (verdict.PoolScale of its
// most recent runs), or nil when no recorded run has 2 or more
// repetitions of it with positive values.
func (nz *Noise) Scale(cell, metric string) *verdict.Scale {
	if nz == nil {
		return nil
	}
	return verdict.PoolScale(nz.spreads[[2]string{cell, metric}], nz.From)
}
