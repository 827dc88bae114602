package history

import (
	"bytes"
	"strings"
	"testing"
)

// A series of one point (a first run) says "1 point", not "1 points".
func TestWriteTextPoints(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{1, "tx_pps: 1 point\n"}, {2, "tx_pps: 2 points\n"}} {
		pts := make([]Point, tc.n)
		for i := range pts {
			pts[i] = Point{Label: "r", Value: 452000, Emulated: NotEmulated} // no emulation line before the title
		}
		var b bytes.Buffer
		if err := WriteText(&b, Analyze([]Series{{Metric: "tx_pps", Better: HigherIsBetter, Points: pts}}, Default)); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), tc.want) {
			t.Errorf("%d points: %q, want it to start %q", tc.n, b.String(), tc.want)
		}
	}
}

// A change from a median of 0 (Lost appearing) says "from 0", as the
// report tables and the gate line do; it said "n/a".
func TestWriteTextChangeFromZero(t *testing.T) {
	var pts []Point
	for i := range 30 {
		v := 0.0
		if i >= 20 {
			v = 1000 + float64(i%3)
		}
		pts = append(pts, Point{Label: "c", Value: v})
	}
	var b bytes.Buffer
	if err := WriteText(&b, Analyze([]Series{{Metric: "lost_pps", Better: LowerIsBetter, Points: pts}}, Default)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " from 0 ") || strings.Contains(b.String(), "n/a") {
		t.Errorf("change from 0:\n%s", b.String())
	}
}
