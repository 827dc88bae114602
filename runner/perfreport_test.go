package runner

import (
	"math"
	"os"
	"testing"

	"github.com/vnetbench/vnetbench/internal/results"
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
