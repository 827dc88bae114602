package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/results"
	"github.com/vnetbench/vnetbench/scenarios"
)

// A real `perf report --stdio --no-children --sort dso,symbol` of a TCG
// QEMU (captured by a run on this machine kind): IPC columns trail. Its
// 244 unresolved JIT addresses and 54 of qemu-system-x86_64 (no symbols)
// add up to one row per module, so the top 6 shows named symbols too
// (before: 5 of 6 rows were JIT addresses).
func TestPerfSymbolsTrailingColumns(t *testing.T) {
	out, err := os.ReadFile("testdata/perf-report-qemu-tcg-sortdso.txt")
	if err != nil {
		t.Fatal(err)
	}
	syms := perfSymbols(out, "qemu", 6)
	if len(syms) != 6 {
		t.Fatalf("got %d symbols: %+v", len(syms), syms)
	}
	want := []results.Symbol{
		{Target: "qemu", Symbol: "[JIT] unresolved", DSO: "[JIT]", Overhead: 55.59, Addresses: 244},
		{Target: "qemu", Symbol: "qemu-system-x86_64 unresolved", DSO: "qemu-system-x86_64", Overhead: 18.46, Addresses: 54},
		{Target: "qemu", Symbol: "finish_task_switch.isra.0", DSO: "[kernel.kallsyms]", Overhead: 4.89},
		{Target: "qemu", Symbol: "qht_lookup_custom", DSO: "qemu-system-x86_64", Overhead: 1.96},
		{Target: "qemu", Symbol: "g_main_context_check", DSO: "libglib-2.0.so.0.7400.6", Overhead: 1.14},
		{Target: "qemu", Symbol: "tun_do_read", DSO: "[kernel.kallsyms]", Overhead: 0.98},
	}
	for i, w := range want {
		g := syms[i]
		if g.Symbol != w.Symbol || g.DSO != w.DSO || g.Addresses != w.Addresses || math.Abs(g.Overhead-w.Overhead) > 0.005 {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
}

// addPerf's perf report: it runs under the run's context (a SIGINT
// cancels it; before, context.Background()), and a report it cannot write
// is a warning and no artifact (before, the write error was ignored and
// the missing file listed).
func TestAddPerfReportContextAndWriteError(t *testing.T) {
	report, err := os.ReadFile("testdata/perf-report-stdio.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fake := &proc.Fake{Handler: func(proc.Cmd) (string, bool, error) { return string(report), false, nil }}
	r := &runState{dir: dir, exec: fake}
	c := &scenarios.Cell{}
	run := func(ctx context.Context, file string) *results.Sample {
		s := &results.Sample{Metrics: map[metric.Key]float64{}, Labels: map[string]string{}}
		r.addPerf(ctx, s, c, []*perfRun{{target: "qemu", record: true, file: file}})
		return s
	}

	s := run(context.Background(), filepath.Join(dir, "perf-qemu.data"))
	if want := []string{"perf-qemu.data", "perf-qemu-report.txt"}; !slices.Equal(s.Artifacts, want) || len(s.Symbols) == 0 {
		t.Fatalf("artifacts %q (want %q), %d symbols", s.Artifacts, want, len(s.Symbols))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = run(ctx, filepath.Join(dir, "perf-vhost.data"))
	if len(s.Artifacts) != 0 || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "perf report qemu") {
		t.Errorf("cancelled run: artifacts %q, warnings %q; want none and one perf report warning", s.Artifacts, s.Warnings)
	}

	// The report's name is a directory: its write fails.
	if err := os.Mkdir(filepath.Join(dir, "perf-x-report.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	s = run(context.Background(), filepath.Join(dir, "perf-x.data"))
	if !slices.Equal(s.Artifacts, []string{"perf-x.data"}) || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "perf-x-report.txt") {
		t.Errorf("failed write: artifacts %q, warnings %q; want only the record and a warning naming the report", s.Artifacts, s.Warnings)
	}
}

// A real `perf report --children -g none` of kpktgend in a Debian 6.1 lab
// VM (TCG): the top 3 by self (memset_erms, pktgen_thread_worker,
// finish_task_switch.isra.0) and the top 3 by children (kthread,
// ret_from_fork, pktgen_thread_worker: 99.28% each, then pktgen_alloc_skb
// at 46.33% is 4th) make 5 rows, in order of self, each with both shares.
func TestPerfSymbolsChildren(t *testing.T) {
	out, err := os.ReadFile("testdata/perf-report-kpktgend-lab61-children.txt")
	if err != nil {
		t.Fatal(err)
	}
	syms := perfSymbols(out, "kpktgend", 3)
	var got []string
	for _, s := range syms {
		if s.Children == nil {
			t.Fatalf("%s has no children share", s.Symbol)
		}
		got = append(got, fmt.Sprintf("%s %.2f %.2f", s.Symbol, s.Overhead, *s.Children))
	}
	want := []string{
		"memset_erms 29.72 31.53",
		"pktgen_thread_worker 14.80 99.28",
		"finish_task_switch.isra.0 6.50 6.62",
		"kthread 0.00 99.28",
		"ret_from_fork 0.00 99.28",
	}
	if !slices.Equal(got, want) {
		t.Errorf("symbols:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
