package latprobe

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/latency"
)

// BenchmarkProbeRate sends b.N probes at 100µs intervals to a loopback
// reflector and reports the rate the probe kept (probes/s; the issue's
// goal is at least 200/s, the default interval's rate) and the share
// with both transmit stamps and a reply.
func BenchmarkProbeRate(b *testing.B) {
	dst := echo(b, func(uint32) bool { return false })
	p, err := Open(Config{Dst: dst, Src: netip.MustParseAddr("127.0.0.1"), Interval: 100 * time.Microsecond, Sizes: []int{64}, Timeout: 200 * time.Millisecond}, nil)
	if err != nil {
		b.Fatal(err)
	}
	p.SetPhase(latency.PhaseLoad)
	sent := func() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.recs) }
	b.ResetTimer()
	start := time.Now()
	p.Start()
	for sent() < b.N {
		time.Sleep(200 * time.Microsecond)
	}
	elapsed := time.Since(start)
	recs, _ := p.Stop()
	b.StopTimer()
	complete := 0
	for _, r := range recs {
		if !r.Lost && r.Sched != 0 && r.Soft != 0 {
			complete++
		}
	}
	b.ReportMetric(float64(len(recs))/elapsed.Seconds(), "probes/s")
	b.ReportMetric(float64(complete)/float64(len(recs)), "complete_frac")
}

// BenchmarkSummarize60s summarizes one 60 s sample at the default 5 ms
// interval (12,000 probes): the percentiles with their exact intervals.
func BenchmarkSummarize60s(b *testing.B) {
	recs := make([]latency.Record, 12000)
	for i := range recs {
		s := int64(i) * 5e6
		recs[i] = latency.Record{Seq: uint32(i), Phase: latency.PhaseLoad, Size: 64, Sent: s, Sched: s + 1e3, Soft: s + 2e3, Recv: s + int64(1e5+(i*7919)%100000)}
	}
	for b.Loop() {
		latency.Summarize(recs)
	}
}
