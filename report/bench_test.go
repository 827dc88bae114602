package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/results"
)

// BenchmarkReport measures loading two run directories, building the
// model and rendering text.
func BenchmarkReport(b *testing.B) {
	for b.Loop() {
		_, r := built(b, Options{}, "stock", "patched")
		if err := WriteText(io.Discard, r, ASCII); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReportSamples measures `vnetbench report` on a CI history of
// growing size: load a run directory, build the model, render text. Each
// size has 2 kernels x 5 repetitions per cell, so 1k samples are 100
// cells and 100k samples 10,000 cells; ns/op should grow linearly with the
// samples (ns/sample about constant). cpu-ns/sample is the process's CPU
// time (user + system, all threads, GC included) per sample: on a shared
// machine it stays put when the wall clock does not.
func BenchmarkReportSamples(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("samples=%dk", n/1000), func(b *testing.B) {
			dir := writeHistory(b, n)
			var cpu0 time.Duration
			for b.Loop() {
				if cpu0 == 0 {
					cpu0 = cpuTime(b)
				}
				set, err := results.Load(dir)
				if err != nil || len(set.Samples) != n {
					b.Fatalf("loaded %d samples of %d: %v", len(set.Samples), n, err)
				}
				r, err := Build(set, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteText(io.Discard, r, ASCII); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sample")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/sample")
		})
	}
}

// BenchmarkCompareSamples measures `vnetbench compare` on two halves of
// a history (stock against patched, the default gates): it too should grow
// linearly with the samples.
func BenchmarkCompareSamples(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("samples=%dk", n/1000), func(b *testing.B) {
			set, err := results.Load(writeHistory(b, n))
			if err != nil {
				b.Fatal(err)
			}
			base := set.Filter(func(s *results.Sample) bool { return s.Kernel == "stock" })
			nw := set.Filter(func(s *results.Sample) bool { return s.Kernel == "patched" })
			for b.Loop() {
				res, err := CompareRuns(base, nw, CompareOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Decisions) == 0 {
					b.Fatal("no decisions")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sample")
		})
	}
}

// writeHistory writes a run directory of n samples shaped like the
// pktgen thread scenarios: backends x thread counts x a "commit" axis,
// 2 kernels, 5 repetitions, per-thread numbers, perf counters and perf
// report symbols.
func writeHistory(tb testing.TB, n int) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "history")
	w, err := results.Create(dir, results.Env{Run: "bench", CPUModel: "Test CPU", Accel: "kvm"})
	if err != nil {
		tb.Fatal(err)
	}
	w.Close()
	// The lines are Writer.Append's, written in one go: an fsync per line
	// would make the 100k setup take minutes, and the benchmark measures
	// reading.
	var lines bytes.Buffer
	backends, threads := []string{"tap", "tap+vhost"}, []int{1, 2, 4, 8}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		rep, kernel := i%5, []string{"stock", "patched"}[i/5%2]
		c := i / 10
		be, th, commit := backends[c%2], threads[c/2%4], "c"+strconv.Itoa(c/8)
		tx := 400000 + float64(c%97)*1000 + float64(rep)*500
		if kernel == "patched" {
			tx *= 1.1
		}
		s := results.Sample{Run: "bench", Cell: be + "/pktgen-t" + strconv.Itoa(th) + "/" + commit, Rep: rep, Kernel: kernel,
			Axes:  map[string]string{"backend": be, "generator": "pktgen-t" + strconv.Itoa(th), "commit": commit},
			Start: t0.Add(time.Duration(i) * time.Second), WindowS: 10,
			Metrics: map[metric.Key]float64{"tx_pps": tx, "lost_pps": tx / 3, "tap_tx_pps": tx, "rx_pps": tx * 0.99, "pktgen_errors": tx,
				"harness_cpu_frac": 0.01, "cell_overhead_s": 2, "generator_busy_frac": 0.99,
				"perf.cycles@vhost": 5e10 + tx, "perf.instructions@vhost": 6e10 + tx, "perf.context-switches@vhost": 1000 + float64(rep)},
			Labels: map[string]string{"generator": "pktgen", "count": "10000000", "threads": strconv.Itoa(th), "pin": "vhost:0", "qdisc": "fq_codel"},
			Symbols: []results.Symbol{{Target: "vhost", Symbol: "handle_rx", Overhead: 14 + float64(rep)},
				{Target: "vhost", Symbol: "tun_recvmsg", Overhead: 10}, {Target: "vhost", Symbol: "vhost_get_vq_desc", Overhead: 5}}}
		for t := range th {
			lost := tx / 3 / float64(th)
			s.Threads = append(s.Threads, results.ThreadSample{I: t, TxPPS: tx / float64(th), Errors: uint64(lost), LostPPS: &lost})
		}
		s.Schema = results.SchemaVersion
		line, err := json.Marshal(&s)
		if err != nil {
			tb.Fatal(err)
		}
		lines.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, results.ResultsFile), lines.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// cpuTime is the CPU time the process has used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// distinctSet is n samples whose cells are all distinct, spread over
// kernels kernels (n kernels: every sample its own row and column).
func distinctSet(n, kernels int) *results.Set {
	set := &results.Set{Env: map[string]*results.Env{}}
	for i := range n {
		set.Samples = append(set.Samples, results.Sample{Cell: "tap/c" + strconv.Itoa(i), Kernel: "k" + strconv.Itoa(i%kernels),
			Axes:    map[string]string{"backend": "tap", "commit": "c" + strconv.Itoa(i)},
			Metrics: map[metric.Key]float64{"tx_pps": 1000 + float64(i), "lost_pps": float64(i)}})
	}
	return set
}

// BenchmarkReportDistinct measures `report` (build and text) on n samples
// whose cells are all distinct, over MaxColumns kernels: the tables are
// MaxColumns x n, so ns/sample should stay about constant. (With n
// kernels the tables were n x n: 1,000 samples took 12.6 s and 1.6 GB;
// Build now refuses more than MaxColumns columns, see
// TestReportTooManyColumns.)
func BenchmarkReportDistinct(b *testing.B) {
	for _, n := range []int{250, 500, 1000, 2000} {
		b.Run(fmt.Sprintf("samples=%d", n), func(b *testing.B) {
			set := distinctSet(n, MaxColumns)
			var cpu0 time.Duration
			for b.Loop() {
				if cpu0 == 0 {
					cpu0 = cpuTime(b)
				}
				r, err := Build(set, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteText(io.Discard, r, ASCII); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sample")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/sample")
		})
	}
}

// distinctKeysSet is n single-sample cells, each with a metric key of its
// own, on one kernel: issue 34's input that asked report for a 15 GB block
// (summaries preallocated keys x cells x columns).
func distinctKeysSet(n int) *results.Set {
	set := &results.Set{Env: map[string]*results.Env{}}
	for i := range n {
		set.Samples = append(set.Samples, results.Sample{Cell: "tap/c" + strconv.Itoa(i), Kernel: "k",
			Axes:    map[string]string{"backend": "tap", "commit": "c" + strconv.Itoa(i)},
			Metrics: map[metric.Key]float64{metric.Key("m" + strconv.Itoa(i)): float64(i)}})
	}
	return set
}

// BenchmarkReportDistinctKeys measures `report` (build and text) on n
// single-sample cells with distinct metric keys: memory and time must grow
// linearly with the samples (issue 34 item 6: 8,000 in under 1 GB and
// 10 s). B/op bounds the peak heap.
func BenchmarkReportDistinctKeys(b *testing.B) {
	for _, n := range []int{1000, 2000, 4000, 8000} {
		b.Run(fmt.Sprintf("samples=%d", n), func(b *testing.B) {
			set := distinctKeysSet(n)
			b.ReportAllocs()
			for b.Loop() {
				r, err := Build(set, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteText(io.Discard, r, ASCII); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sample")
		})
	}
}

// A report of cells that each have a metric key of their own allocates
// memory linear in the samples: 2,000 of them allocated 3.4 GB when the
// summaries were sized keys x cells (8,000 ran out of memory); now about
// 50 MB. Bytes allocated, not time: BenchmarkReportDistinctKeys has the
// times.
func TestReportMemoryLinearInKeys(t *testing.T) {
	set := distinctKeysSet(2000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := Build(set, Options{})
	if err == nil {
		err = WriteText(io.Discard, r, ASCII)
	}
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<20 {
		t.Errorf("report of 2,000 cells with a key each allocated %d MB, want under 256 MB (linear in the samples)", got>>20)
	}
	if len(r.Summaries) != 2000 {
		t.Errorf("%d summaries, want 2000 (one per cell)", len(r.Summaries))
	}
}
