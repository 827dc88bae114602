package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The scale of docs/history.md: 10,000 runs of 50 cells and 10 metrics.
const (
	benchRuns    = 10000
	benchCells   = 50
	benchMetrics = 10
)

func benchRun(r *rand.Rand, i int) *Run {
	run := &Run{Path: fmt.Sprintf("/runs/%05d", i), Time: time.Unix(int64(i)*3600, 0), Scenario: "ci",
		Labels: map[string]string{"running": fmt.Sprintf("c%011d", i)}}
	for c := range benchCells {
		for m := range benchMetrics {
			run.Values = append(run.Values, Value{Cell: fmt.Sprintf("tap/pktgen-t%d", c), Kernel: "running", Metric: fmt.Sprintf("m%d", m), Value: 1e6 * (1 + 0.02*r.NormFloat64())})
		}
	}
	return run
}

var (
	bigOnce sync.Once
	bigDir  string
	bigErr  error
)

// bigIndex builds the index of the full scale once per process.
func bigIndex(b *testing.B) string {
	bigOnce.Do(func() {
		bigDir, bigErr = os.MkdirTemp("", "vnetbench-history-bench-")
		if bigErr != nil {
			return
		}
		x, err := Open(filepath.Join(bigDir, "h.db"))
		if err != nil {
			bigErr = err
			return
		}
		defer x.Close()
		r := rand.New(rand.NewPCG(1, 2))
		start := time.Now()
		for i := 0; i < benchRuns; i += 500 {
			var batch []*Run
			for j := i; j < i+500; j++ {
				batch = append(batch, benchRun(r, j))
			}
			if bigErr = x.Add(context.Background(), batch...); bigErr != nil {
				return
			}
		}
		fmt.Fprintf(os.Stderr, "built an index of %d runs x %d values in %v\n", benchRuns, benchCells*benchMetrics, time.Since(start))
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return filepath.Join(bigDir, "h.db")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		os.RemoveAll(bigDir)
	}
	os.Exit(code)
}

// BenchmarkAddOneRun: history add of one run of 500 values to an index
// of 10,000 runs (opening and closing the index, as the command does).
func BenchmarkAddOneRun(b *testing.B) {
	path := bigIndex(b)
	r := rand.New(rand.NewPCG(3, 4))
	i := benchRuns
	cpu := cpuTime(b)
	for b.Loop() {
		x, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := x.Add(b.Context(), benchRun(r, i)); err != nil {
			b.Fatal(err)
		}
		x.Close()
		i++
	}
	b.ReportMetric((cpuTime(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkSeriesLoad: reading every series (500 series of 10,000
// points) out of the index.
func BenchmarkSeriesLoad(b *testing.B) {
	path := bigIndex(b)
	x, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	cpu := cpuTime(b)
	for b.Loop() {
		s, err := x.Series(b.Context(), true)
		if err != nil {
			b.Fatal(err)
		}
		if len(s) != benchCells*benchMetrics || len(s[0].Points) < benchRuns {
			b.Fatalf("%d series of %d points", len(s), len(s[0].Points))
		}
	}
	b.ReportMetric((cpuTime(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's user and system CPU time so far (wall time
// overstates a benchmark's cost when other work shares the machine).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
