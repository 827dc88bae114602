package runner

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// BenchmarkHarnessOverhead measures the harness itself with the real loop
// (netns, tap, qdisc replace and reset, vCPU pinning, QEMU via QMP, perf
// stat on QEMU, counters, results fsync) around a fake 1 s generator:
// overhead-s/cell is cell_overhead_s, the sample's wall time outside its
// window, warmup, guest boot and perf report (goal <= 1 s),
// harness-cpu-frac the harness's own CPU inside the window (goal <= 0.01).
func BenchmarkHarnessOverhead(b *testing.B) {
	if !hostReady() {
		testenv.Skip(b, "needs root, /dev/net/tun, qemu and perf")
	}
	reps := min(max(b.N, 2), 50)
	yaml := strings.Replace(loopScenario, "repetitions: 2", "repetitions: "+strconv.Itoa(reps), 1)
	yaml = strings.Replace(yaml, "targets: [qemu, vcpu, generator]", "targets: [qemu]", 1)
	cells := loadCells(b, yaml)
	h := newHarness(b)
	h.mkGen = func(int) *fakeGen { return &fakeGen{d: time.Second} }
	b.ResetTimer()
	sum, err := Run(b.Context(), cells, h.opts)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	var over, cpu float64
	samples := readSamples(b, h.opts.Dir)
	for _, s := range samples {
		over += s.Metrics["cell_overhead_s"]
		cpu += s.Metrics["harness_cpu_frac"]
	}
	n := float64(len(samples))
	b.ReportMetric(over/n, "overhead-s/cell")
	b.ReportMetric(cpu/n, "harness-cpu-frac")
	b.ReportMetric(float64(sum.Samples), "samples")
}
