package perfparse

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func openT(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestPktgenDrainOK(t *testing.T) {
	d, err := ParsePktgen(openT(t, "testdata/pktgen/pktgen-tap0-L1-drain-ok.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Result
	if d.Device != "tap0" || d.Count != 100000 || d.MinPktSize != 60 || d.Params["dst_min"] != "10.0.0.2" || d.Params["dst_max"] != "" {
		t.Errorf("params: %+v", d)
	}
	if d.Current.PacketsSoFar != 100000 || d.Current.Errors != 0 || d.Current.StartedUsec != 4720620 || d.Current.IdleUsec != 84596 {
		t.Errorf("current: %+v", d.Current)
	}
	if !r.OK || !r.Run || r.Usec != 642086 || r.CPUUsec != 557490 || r.IdleUsec != 84596 || r.Packets != 100000 ||
		r.PktSize != 60 || r.Frags != 0 || r.PPS != 155742 || r.BitsPerSec != 74756160 || r.MbPerSec != 74 || r.Errors != 0 || r.Bytes != 6000000 {
		t.Errorf("result: %+v", r)
	}
}

func TestPktgenNoCarrier(t *testing.T) {
	d, err := ParsePktgen(openT(t, "testdata/pktgen/pktgen-tap0-L1-nocarrier.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Result; !r.OK || r.Frags != -1 || r.Packets != 0 || r.PPS != 0 || r.Usec != 143 {
		t.Errorf("result: %+v", r)
	}
}

func TestPktgenErrorsCounted(t *testing.T) {
	d, err := ParsePktgen(openT(t, "testdata/pktgen/pktgen-tap0-L1-with-L2-vhost-off.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Current.Errors != 2537342 || d.Result.Errors != 2537342 || d.Result.PPS != 7598 {
		t.Errorf("got current %+v result %+v", d.Current, d.Result)
	}
}

func TestPktgenResults(t *testing.T) {
	base, err := os.ReadFile("testdata/pktgen/pktgen-tap0-L1-drain-ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(base), "Result:")
	for _, tc := range []struct {
		result string
		status string
		run    bool
	}{
		{"Result: Idle\n", "idle", false},
		{"Result: OK: count=100000\n", "ok", false},
		{"Result: No such parameter \"foo\"\n", "error", false},
		{"Result: Unknown error 524\n", "error", false},
		{"Result: OK: 642086(c557490+d84596) usec, 100000 (60byte,0frags) 155742pps 74Mb/sec (74756160bps) errors: 0\n", "ok", true},
	} {
		d, err := ParsePktgen(strings.NewReader(head + tc.result))
		if err != nil {
			t.Errorf("%q: %v", tc.result, err)
			continue
		}
		if d.Result.Status != tc.status || d.Result.Run != tc.run || d.Result.OK != (tc.status == "ok") {
			t.Errorf("%q: got %+v", tc.result, d.Result)
		}
	}
}

func TestPktgenMailPaste(t *testing.T) {
	base, err := os.ReadFile("testdata/pktgen/pktgen-tap0-L1-drain-ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(string(base), "\n"), "\n") {
		b.WriteString("> " + strings.Join(strings.Fields(l), " ") + "\n")
	}
	d, err := ParsePktgen(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d.Result.PPS != 155742 || d.Current.PacketsSoFar != 100000 || d.Params["dst_max"] != "" || d.Params["src_min"] != "" {
		t.Errorf("got %+v %+v", d.Params, d.Result)
	}
}

func TestPktgenBad(t *testing.T) {
	for _, in := range []string{
		"",
		"hello\n",
		"Params: count 10\nResult: OK: 1(c1+d0) usec, 1 (60byte,0frags)\n  garbage\n",
		"Params: count x\nResult: Idle\n",
	} {
		_, err := ParsePktgen(strings.NewReader(in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a *SyntaxError", in, err)
		}
	}
	_, err := Parse("pktgen", "x.txt", strings.NewReader("Params: count 10\nCurrent:\n pkts-sofar: 1 errors: 0\nResult: OK: 1(c1+d0) usec, 1 (60byte,0frags)\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "perfparse: x.txt:4: ") {
		t.Errorf("missing rate line: got %v, want perfparse: x.txt:4: ...", err)
	}
}
