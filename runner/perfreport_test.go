package runner

import (
	"os"
	"testing"
)

// A real `perf report --stdio --no-children --sort dso,symbol` of a TCG
// QEMU (captured by a run on this machine kind): IPC columns trail.
func TestPerfSymbolsTrailingColumns(t *testing.T) {
	out, err := os.ReadFile("testdata/perf-report-qemu-tcg-sortdso.txt")
	if err != nil {
		t.Fatal(err)
	}
	syms := perfSymbols(out, "qemu", 6)
	if len(syms) != 6 {
		t.Fatalf("got %d symbols: %+v", len(syms), syms)
	}
	if s := syms[0]; s.Symbol != "0x00007fcfe8ae8636" || s.DSO != "[JIT] tid 13189" || s.Overhead < 7.0 || s.Overhead > 7.02 {
		t.Errorf("first %+v", s)
	}
	if s := syms[5]; s.Symbol != "qht_lookup_custom" || s.DSO != "qemu-system-x86_64" {
		t.Errorf("sixth %+v", s)
	}
}
