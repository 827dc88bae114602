package perfparse

import (
	"errors"
	"strings"
	"testing"
)

func TestTrafgen(t *testing.T) {
	tg, err := ParseTrafgen(openT(t, "testdata/trafgen/fixture-5s.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Complete || tg.Packets != 437644 || tg.Bytes != 26258640 || len(tg.CPUs) != 1 || tg.CPUs[0].Seconds != 4.995383 || tg.ScheduledPackets != 1 {
		t.Errorf("fixture: %+v", tg)
	}
	if pps := tg.PPS(); pps < 87609 || pps > 87610 { // 437644 packets / 4.995383 s
		t.Errorf("pps %v", pps)
	}
	two, err := ParseTrafgen(openT(t, "testdata/trafgen/real-tap-netns-2cpu.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(two.CPUs) != 2 || *two.CPUs[0].Packets+*two.CPUs[1].Packets != two.Packets {
		t.Errorf("2 cpus: %+v", two)
	}
	failed, err := ParseTrafgen(openT(t, "testdata/trafgen/real-qdisc-path-flush-failed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if failed.Complete || !strings.HasPrefix(failed.Messages[len(failed.Messages)-1], "Flushing TX_RING failed") {
		t.Errorf("failed run: %+v", failed)
	}
	if _, err := ParseTrafgen(strings.NewReader("nothing here\n")); err == nil {
		t.Error("text without a summary parsed")
	}
}

func TestTCQdisc(t *testing.T) {
	q, err := ParseTCQdisc(openT(t, "testdata/tc/real-tap-tbf-overlimits.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 1 || q[0].Kind != "tbf" || q[0].Handle != "8060:" || !q[0].Root || q[0].Packets != 746 || q[0].Overlimits != 920 || q[0].Extra != nil {
		t.Errorf("tbf: %+v", q)
	}
	all, err := ParseTCQdisc(openT(t, "testdata/tc/real-host-all.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 1 || all[0].Dev == "" {
		t.Errorf("all devs: %+v", all)
	}
	for _, in := range []string{"", "{}", "[{\"handle\":\"0:\"}]", "[{\"kind\":5}]"} {
		var se *SyntaxError
		if _, err := ParseTCQdisc(strings.NewReader(in)); !errors.As(err, &se) {
			t.Errorf("%q: %v, want a SyntaxError", in, err)
		}
	}
}

func TestParseKinds(t *testing.T) {
	_, err := all.Parse("nosuch", "", strings.NewReader(""))
	var uk *UnknownKindError
	if !errors.As(err, &uk) || !strings.Contains(err.Error(), "perf-stat, perf-report, netdev, tc, pktgen-script, pktgen, kpktgend, trafgen, iperf3, testpmd, auto") {
		t.Errorf("unknown kind: %v", err)
	}
	_, err = all.Parse("auto", "x.txt", strings.NewReader("just some words\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "perfparse: x.txt: cannot tell what this is") {
		t.Errorf("auto on prose: %v", err)
	}
	if err := WithFile(errors.New("plain"), "f"); err.Error() != "plain" {
		t.Errorf("WithFile changed a plain error: %v", err)
	}
}

// TestTrafgenOldLayouts reads the summaries of trafgen before 0.5.8:
// "frames outgoing" with one total time, and per-CPU times without
// packet counts.
func TestTrafgenOldLayouts(t *testing.T) {
	old, err := ParseTrafgen(openT(t, "testdata/trafgen/written-0.5.7-frames-in-total.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !old.Complete || old.Packets != 1048576 || old.TotalS == nil || *old.TotalS != 2.117052 {
		t.Errorf("0.5.7: %+v", old)
	}
	if pps := old.PPS(); pps < 495300 || pps > 495301 { // 1048576 / 2.117052 s
		t.Errorf("0.5.7 pps %v", pps)
	}
	mp, err := ParseTrafgen(openT(t, "testdata/trafgen/written-2013-percpu-no-packets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mp.CPUs) != 2 || mp.CPUs[1].Packets != nil || mp.CPUs[0].Seconds != 1.052113 {
		t.Errorf("2013: %+v", mp)
	}
	if _, err := ParseTrafgen(strings.NewReader("1 sec, 1000000 usec on CPU0 (5 packets)\n")); err == nil ||
		!strings.Contains(err.Error(), " 1: trafgen") {
		t.Errorf("usec out of range: %v", err)
	}
}
