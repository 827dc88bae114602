package latency

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

// 10 ms readings over 300 ms: the tap sends 1250 bytes per reading (1
// Mbit/s) and drops 1 packet per reading from 100 ms on; the backlog
// grows by 100 bytes per reading under load.
func series() []Point {
	var pts []Point
	for i := range 31 {
		p := Point{T: 5e9 + int64(i)*10e6, Phase: PhaseIdle, TapTxBytes: uint64(i) * 1250, TapTxPackets: uint64(i)}
		if i >= 10 {
			p.Phase = PhaseLoad
			p.TapTxDropped = uint64(i - 10)
			p.Backlog, p.Qlen = uint32(100*(i-10)), uint32(i-10)
		}
		pts = append(pts, p)
	}
	return pts
}

func TestBins(t *testing.T) {
	bins := Bins(series(), 100*time.Millisecond)
	if len(bins) != 4 { // 0-100, 100-200, 200-300 ms and the reading at 300 ms
		t.Fatalf("%d bins, want 4: %+v", len(bins), bins)
	}
	for i, b := range bins {
		if b.TxBps < 0.999e6 || b.TxBps > 1.001e6 {
			t.Errorf("bin %d: %g bit/s, want 1 Mbit/s", i, b.TxBps)
		}
	}
	if bins[0].TapDropPPS != 0 || bins[2].TapDropPPS < 99.9 || bins[2].TapDropPPS > 100.1 {
		t.Errorf("drop rates %g, %g: want 0 while idle, then 100/s", bins[0].TapDropPPS, bins[2].TapDropPPS)
	}
	if bins[2].BacklogMax != 1900 || bins[2].QlenMax != 19 {
		t.Errorf("bin 2: backlog max %d qlen max %d, want 1900 and 19 (the reading at 290 ms)", bins[2].BacklogMax, bins[2].QlenMax)
	}
}

func TestSeriesMetricsAndCSV(t *testing.T) {
	pts := series()
	m := SeriesMetrics(pts)
	if m["qdisc_backlog_max"] != 2000 || m["qdisc_backlog_p50"] != 1000 {
		t.Errorf("metrics %v, want max 2000, p50 1000 (load phase only)", m)
	}
	var b bytes.Buffer
	if err := WriteSeries(&b, pts); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSeries(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, pts) {
		t.Errorf("round trip differs")
	}
}
