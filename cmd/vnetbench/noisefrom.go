package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vnetbench/vnetbench/internal/history/store"
	"github.com/vnetbench/vnetbench/internal/verdict"
)

// noiseFromUsage is the help of --noise-from, for compare and run.
const noiseFromUsage = "history index (`HISTORY_DB`, filled by 'vnetbench history add') whose past runs of the same cells give the noise: the early looks (3 and 6 runs per side) then call changes the runs alone cannot (docs/compare.md)"

// noiseFrom reads the within-run noise of every cell and metric recorded
// in the history index at path ("" for none: nil) and returns the lookup
// compare's gates and tables take. A cell of a comparison of several
// kernels ("label:cell") is looked up as itself, then as the cell alone.
// An index without spreads (its runs were added before the index kept
// them) is named on stderr.
func noiseFrom(ctx context.Context, path string, stderr io.Writer) (func(cell, metric string) *verdict.Scale, error) {
	if path == "" {
		return nil, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, usageErrorf("--noise-from %s: no history index there; record runs with 'vnetbench history add RUN_DIR --db %s'", path, path)
	}
	x, err := store.Open(path)
	if err != nil {
		return nil, err
	}
	nz, err := x.Noise(ctx)
	if cerr := x.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if nz.Empty() {
		fmt.Fprintf(stderr, "vnetbench: --noise-from %s: no run there has 2 or more repetitions of a metric with its spread; the early looks use the runs alone ('vnetbench history rebuild --db %s' reads the spreads of runs added by an older vnetbench)\n", path, path)
	}
	return func(cell, metric string) *verdict.Scale {
		if s := nz.Scale(cell, metric); s != nil {
			return s
		}
		if _, c, ok := strings.Cut(cell, ":"); ok {
			return nz.Scale(c, metric)
		}
		return nil
	}, nil
}
