package history

import (
	"bytes"
	"strings"
	"testing"
)

// A step where the runs move from TCG to KVM is an environment change:
// the change point says so (JSON, text), where it read as a kernel's
// improvement.
func TestChangeAcrossEmulationFlagged(t *testing.T) {
	var pts []Point
	for i := range 40 {
		p := Point{Label: "c" + string(rune('a'+i%26)), Value: 12000 + float64(i%3*100), Emulated: Emulated}
		if i >= 30 {
			p.Value, p.Emulated = 450000+float64(i%3*1000), NotEmulated
		}
		pts = append(pts, p)
	}
	rs := Analyze([]Series{{Metric: "tx_pps", Unit: "pps", Better: HigherIsBetter, Points: pts}}, Default)
	if len(rs[0].Changes) != 1 {
		t.Fatalf("change points %+v, want one at 30", rs[0].Changes)
	}
	c := rs[0].Changes[0]
	if !c.EmulationChanged || c.EmulatedBefore != EmulatedAll || c.EmulatedAfter != EmulatedNone {
		t.Errorf("change %+v, want flagged: all emulated before, none after", c)
	}
	var b bytes.Buffer
	if err := WriteText(&b, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"EMULATED (QEMU TCG, no KVM): 30 of 40 runs (ca, cb, cc, cd, ce and 25 more)",
		"index 30: emulation differs across this change (before: all emulated, after: none): an environment change, not a kernel change",
		"latest 450 Kpps (cn)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	j, err := MarshalResults(rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"emulated": "some"`, `"emulation_changed": true`} {
		if !bytes.Contains(j, []byte(want)) {
			t.Errorf("JSON lacks %s:\n%s", want, j)
		}
	}
}

// A change within one environment is not flagged, and series that all
// agree are said once, first, not per series.
func TestEmulationSaidOnceWhenAllAgree(t *testing.T) {
	var pts []Point
	for i := range 40 {
		v := 12000.0 + float64(i%3*100)
		if i >= 30 {
			v *= 0.7
		}
		pts = append(pts, Point{Label: "c", Value: v, Emulated: Emulated})
	}
	rs := Analyze([]Series{{Metric: "tx_pps", Unit: "pps", Better: HigherIsBetter, Points: pts}, {Metric: "rx_pps", Unit: "pps", Better: HigherIsBetter, Points: pts}}, Default)
	if len(rs[0].Changes) != 1 || rs[0].Changes[0].EmulationChanged {
		t.Fatalf("change points %+v, want one, not flagged", rs[0].Changes)
	}
	var b bytes.Buffer
	if err := WriteText(&b, rs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "EMULATED"); n != 1 || !strings.HasPrefix(b.String(), "EMULATED (QEMU TCG, no KVM): every run of every series;") {
		t.Errorf("EMULATED said %d times, want once, first:\n%s", n, b.String())
	}
}

// Runs of unknown emulation (indexed before the index kept it) beside
// emulated ones do not make an environment change: before a step, 10
// unknown and 20 emulated runs ("some"), after it 10 emulated ("all"),
// no run known to be anything but emulated. It was flagged "before:
// some emulated, after: all", TCG on one side and KVM on the other.
func TestUnknownEmulationIsNoEnvironmentChange(t *testing.T) {
	var pts []Point
	for i := range 40 {
		p := Point{Label: "c", Value: 12000 + float64(i%3*100), Emulated: Emulated}
		if i < 10 {
			p.Emulated = EmulationUnknown
		}
		if i >= 30 {
			p.Value *= 0.7
		}
		pts = append(pts, p)
	}
	rs := Analyze([]Series{{Metric: "tx_pps", Unit: "pps", Better: HigherIsBetter, Points: pts}}, Default)
	if len(rs[0].Changes) != 1 {
		t.Fatalf("change points %+v, want one at 30", rs[0].Changes)
	}
	if c := rs[0].Changes[0]; c.EmulationChanged || c.EmulatedBefore != EmulatedSome || c.EmulatedAfter != EmulatedAll {
		t.Errorf("change %+v, want not flagged (before some emulated, the rest unknown; after all)", c)
	}
}

// A series none of whose runs says whether it was emulated (a CSV's)
// gives both reasons in HTML, as the text's line for all series does: it
// said "indexed before vnetbench recorded it; 'vnetbench history
// rebuild' reads it again" of CSV rows, never indexed, that no rebuild
// reads.
func TestUnknownEmulationReasonInHTML(t *testing.T) {
	pts := make([]Point, 10)
	for i := range pts {
		pts[i] = Point{Label: "c", Value: float64(100 + i%3)}
	}
	rs := Analyze([]Series{{Metric: "ns/op", Points: pts}}, Default)
	var b bytes.Buffer
	if err := WriteHTML(&b, rs, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "emulation unknown for 10 of 10 runs (a CSV row does not say it, nor a run indexed before vnetbench recorded it;") {
		t.Errorf("HTML does not give a CSV as a reason:\n%s", b.String())
	}
}
