package history

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far: with other
// work on the machine, wall time overstates a benchmark's cost, so the
// benchmarks report their CPU seconds per operation beside it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDetectAll: change-point detection over every series of a
// history of 10,000 runs of 50 cells and 10 metrics (500 series of
// 10,000 points, each with a few steps), on all CPUs.
func BenchmarkDetectAll(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	series := make([]Series, 500)
	for i := range series {
		xs, _ := stepSeries(r, 10000, randomSizes(r, r.IntN(4)), 200, gaussian)
		pts := make([]Point, len(xs))
		for j, x := range xs {
			pts[j] = Point{Label: fmt.Sprint(j), Value: x}
		}
		series[i] = Series{Metric: fmt.Sprintf("m%d", i%10), Cell: fmt.Sprintf("c%d", i/10), Better: HigherIsBetter, Points: pts}
	}
	cpu := cpuTime(b)
	for b.Loop() {
		rs := Analyze(series, Default)
		if len(rs) != len(series) {
			b.Fatal(len(rs))
		}
	}
	b.ReportMetric((cpuTime(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkDetectOne: one series of 10,000 points.
func BenchmarkDetectOne(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	xs, _ := stepSeries(r, 10000, randomSizes(r, 3), 200, gaussian)
	for b.Loop() {
		Default.Detect(xs)
	}
}
