package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// initTrace is what GODEBUG=inittrace=1 printed for one start of a
// binary: the inits' clock time and allocations summed, those of the
// module's own packages apart, and when the last init ended (since the
// runtime started: the start of main, less the runtime's own set-up).
type initTrace struct {
	inits, ownInits   int
	ms, ownMS, lastMS float64
	allocs, ownAllocs int
}

// parseInitTrace reads "init PKG @START ms, CLOCK ms clock, N bytes, M
// allocs" lines; own is the import path prefix of the module's packages.
func parseInitTrace(stderr []byte, own string) (initTrace, error) {
	var tr initTrace
	for _, l := range strings.Split(string(stderr), "\n") {
		var pkg string
		var at, clock float64
		var bytes, allocs int
		if _, err := fmt.Sscanf(l, "init %s @%g ms, %g ms clock, %d bytes, %d allocs", &pkg, &at, &clock, &bytes, &allocs); err != nil {
			continue
		}
		tr.inits++
		tr.ms += clock
		tr.allocs += allocs
		tr.lastMS = max(tr.lastMS, at+clock)
		if strings.HasPrefix(pkg, own) {
			tr.ownInits++
			tr.ownMS += clock
			tr.ownAllocs += allocs
		}
	}
	if tr.inits < 10 {
		return tr, fmt.Errorf("%d init lines in the output; is GODEBUG=inittrace=1 understood?\n%s", tr.inits, stderr)
	}
	return tr, nil
}

// BenchmarkStartup starts `vnetbench version` with GODEBUG=inittrace=1:
// ns/op is the whole process (fork, exec, runtime, inits, main, exit);
// init-ms/op and init-allocs/op the sum over every package's init,
// own-init-ms/op and own-init-allocs/op those of this module's packages,
// premain-ms/op the runtime's clock when the last init ended.
// VNETBENCH_BIN names the binary to measure (else the tree's is built).
func BenchmarkStartup(b *testing.B) {
	bin := testenv.VnetbenchBinary(b, "../cmd/vnetbench")
	var sum initTrace
	for b.Loop() {
		cmd := exec.Command(bin, "version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s version: %v\n%s", bin, err, stderr.Bytes())
		}
		tr, err := parseInitTrace(stderr.Bytes(), "github.com/vnetbench/vnetbench")
		if err != nil {
			b.Fatal(err)
		}
		sum.ms += tr.ms
		sum.allocs += tr.allocs
		sum.ownMS += tr.ownMS
		sum.ownAllocs += tr.ownAllocs
		sum.lastMS += tr.lastMS
	}
	n := float64(b.N)
	b.ReportMetric(sum.ms/n, "init-ms/op")
	b.ReportMetric(float64(sum.allocs)/n, "init-allocs/op")
	b.ReportMetric(sum.ownMS/n, "own-init-ms/op")
	b.ReportMetric(float64(sum.ownAllocs)/n, "own-init-allocs/op")
	b.ReportMetric(sum.lastMS/n, "premain-ms/op")
}

// The parser reads the runtime's lines and counts the module's own.
func TestParseInitTrace(t *testing.T) {
	out := []byte("init runtime @0.033 ms, 0.044 ms clock, 0 bytes, 0 allocs\n" +
		strings.Repeat("init os @6.2 ms, 0.036 ms clock, 432 bytes, 9 allocs\n", 9) +
		"init github.com/vnetbench/vnetbench/scenarios @25 ms, 1.1 ms clock, 520368 bytes, 7058 allocs\n" +
		"vnetbench dev go1.26.8 linux/amd64\n")
	tr, err := parseInitTrace(out, "github.com/vnetbench/vnetbench")
	if err != nil {
		t.Fatal(err)
	}
	got := strconv.Itoa(tr.inits) + " " + strconv.Itoa(tr.allocs) + " " + strconv.Itoa(tr.ownAllocs) + " " + strconv.FormatFloat(tr.lastMS, 'f', 1, 64)
	if want := "11 7139 7058 26.1"; got != want {
		t.Errorf("inits, allocs, own allocs, last ms = %s, want %s", got, want)
	}
	if _, err := parseInitTrace([]byte("vnetbench dev\n"), "x"); err == nil {
		t.Error("no init lines parsed without an error")
	}
}
