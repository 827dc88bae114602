package xsk

import (
	"fmt"
	"testing"
)

// BenchmarkCopyTx sends b.N frames in copy mode into a tap (the kernel's
// default queue length) drained by a reader goroutine. Reported: pps
// (completions over the generator's run time) and cpu-ns/pkt (the sending
// thread's user+system CPU per completion: copy mode's kernel work is in
// the sendto calls; frames the tap drops when the reader falls behind
// count too, as they do for any generator). ns/op is wall time per frame.
func BenchmarkCopyTx(b *testing.B) {
	needHost(b)
	for _, c := range []struct{ size, batch int }{{64, 32}, {64, 64}, {64, 256}, {1024, 64}} {
		b.Run(fmt.Sprintf("size=%d/batch=%d", c.size, c.batch), func(b *testing.B) {
			ns := testTapQLen(b, 1, 0)
			d := startDrain(b, ns, 1, 0)
			g, err := Open(Config{Dev: testDev, Frame: Frame{Size: c.size}, Batch: c.batch, Count: uint64(b.N), InNetns: ns.Do})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			b.ResetTimer()
			res, err := g.Run(b.Context())
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if res.Packets != uint64(b.N) {
				b.Fatalf("%d completions of %d", res.Packets, b.N)
			}
			b.ReportMetric(res.PPS(), "pps")
			b.ReportMetric(res.CPUPerPacket(), "cpu-ns/pkt")
			d.stop()
		})
	}
}
