package perfparse

import (
	"errors"
	"math"
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
	_, err := all.Parse("pktgen", "x.txt", strings.NewReader("Params: count 10\nCurrent:\n pkts-sofar: 1 errors: 0\nResult: OK: 1(c1+d0) usec, 1 (60byte,0frags)\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "perfparse: x.txt:4: ") {
		t.Errorf("missing rate line: got %v, want perfparse: x.txt:4: ...", err)
	}
}

// Real pktgen outputs from Debian's 6.1 kernel under QEMU (testdata/README.md).
func TestPktgenRealVM(t *testing.T) {
	d, err := ParsePktgen(openT(t, "testdata/pktgen/real-vm-dummy0@0-running-starting.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Device != "dummy0@0" || d.Count != 0 || d.Result.Status != "running" || d.Result.OK || d.Current.PacketsSoFar != 24388 ||
		strings.Join(d.Flags, ",") != "UDPSRC_RND,NO_TIMESTAMP,QUEUE_MAP_CPU" || d.Params["udp_src_max"] != "109" {
		t.Errorf("running: %+v %+v %+v", d, d.Current, d.Result)
	}
	d, err = ParsePktgen(openT(t, "testdata/pktgen/real-vm-lo-ipv6-1500.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Params["daddr"] != "fd00::1" || d.Params["saddr"] != "::" || d.Result.PktSize != 1500 || d.Result.PPS != 29493 || d.Result.BitsPerSec != 353916000 {
		t.Errorf("ipv6: %+v %+v", d.Params, d.Result)
	}
	d, err = ParsePktgen(openT(t, "testdata/pktgen/real-vm-dummy0-no-such-parameter.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Result.Status != "error" || d.Result.Msg != `No such parameter "bogus_param"` {
		t.Errorf("bad param: %+v", d.Result)
	}
	s, err := ParsePktgenScript(openT(t, "testdata/pktgen-script/real-vm-sample02-style-2threads.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Devices) != 2 || s.Devices[1].Device != "dummy0@1" || s.TotalPPS() != 31744+32577 || len(s.Messages) != 2 {
		t.Errorf("sample02: %+v", s)
	}
	crlf, err := ParsePktgenScript(openT(t, "testdata/pktgen-script/real-vm-sample01-style-crlf.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if crlf.Devices[0].File == nil || crlf.Devices[0].Result.PPS != 178931 || crlf.Devices[0].File.Current.PacketsSoFar != 200000 {
		t.Errorf("sample01 crlf: %+v", crlf.Devices[0])
	}
	k, err := ParseKpktgend(openT(t, "testdata/kpktgend/real-vm-kpktgend_0-running.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Running) != 1 || k.Running[0] != "dummy0@0" || len(k.Stopped) != 0 || !k.OK {
		t.Errorf("kpktgend running: %+v", k)
	}
}

// TestPktgenImix reads pktgen's IMIX mode (real files from Debian's 6.1
// kernel): the bytes of a run are the per-size counts' when they are this
// run's, and unknown when the kernel kept earlier runs' counts.
func TestPktgenImix(t *testing.T) {
	d, err := ParsePktgen(openT(t, "testdata/pktgen/real-vm-imix-dummy0-run1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Result
	if len(d.Imix) != 3 || d.Imix[2].SizeBytes != 1500 || d.Imix[2].Weight != 1 || *d.Imix[2].Count != 17884 ||
		!r.Imix || r.BytesUnknown || r.Bytes != 64*116159+576*65957+1500*17884 {
		t.Errorf("run1: imix %+v result %+v", d.Imix, r)
	}
	// The kernel's bps counts the same bytes: 72251408 B × 8 / 2.163957 s.
	// (The kernel divides by nanoseconds, the result prints microseconds.)
	if bps := float64(r.Bytes) * 8 / r.Seconds; math.Abs(bps-r.BitsPerSec) > r.BitsPerSec*1e-6 {
		t.Errorf("bytes %d give %.0f bit/s, the kernel %.0f", r.Bytes, bps, r.BitsPerSec)
	}
	d, err = ParsePktgen(openT(t, "testdata/pktgen/real-vm-imix-dummy0-run2-counts-accumulated.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Result.BytesUnknown || d.Result.Bytes != 0 || d.Result.Packets != 200000 {
		t.Errorf("run2: %+v", d.Result)
	}
	run1, err := ParsePktgen(openT(t, "testdata/pktgen/real-vm-imix-dummy0-run1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetImixBytesSince(run1); err != nil || d.Result.BytesUnknown ||
		d.Result.Bytes != 64*(232233-116159)+576*(132113-65957)+1500*(35654-17884) {
		t.Errorf("run2 since run1: %v, %+v", err, d.Result)
	}
	// Its bps is the run's bytes too, had the kernel not counted run1's:
	// the printed bps is double (537 vs 267 Mb/s).
	if bps := float64(d.Result.Bytes) * 8 / d.Result.Seconds; math.Abs(bps-d.Result.BitsPerSec/2) > d.Result.BitsPerSec*0.01 {
		t.Errorf("run2 bytes %d give %.0f bit/s, half the kernel's %.0f", d.Result.Bytes, bps, d.Result.BitsPerSec)
	}
	// After imix_weights 60,1 1514,1 the slots go on counting: the
	// 277478-packet run is the growth of slots 0 and 1 since run2.
	rew, err := ParsePktgen(openT(t, "testdata/pktgen/real-vm-imix-dummy0-count0-stopped-reweighted.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rew.SetImixBytesSince(d); err != nil || rew.Result.Bytes != 60*(370824-232233)+1514*(271000-132113) {
		t.Errorf("reweighted since run2: %v, %+v", err, rew.Result)
	}
	// The wrong earlier capture is refused and changes nothing.
	cfg, err := ParsePktgen(openT(t, "testdata/pktgen/real-vm-imix-dummy0-after-config.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rew2, _ := ParsePktgen(openT(t, "testdata/pktgen/real-vm-imix-dummy0-count0-stopped-reweighted.txt"))
	for name, before := range map[string]*PktgenDevice{"after-config": cfg, "later": rew, "nil": nil} {
		if err := rew2.SetImixBytesSince(before); err == nil || !rew2.Result.BytesUnknown {
			t.Errorf("reweighted since %s: %v, %+v; want an error and bytes unknown", name, err, rew2.Result)
		}
	}
	b, err := os.ReadFile("testdata/pktgen/real-vm-imix-dummy0-run1.txt")
	if err != nil {
		t.Fatal(err)
	}
	for bad, line := range map[string]string{"1500,17884": "1500,x", "576,65957 ": "", "Params: count 200000": "Params: count x",
		"pkts-sofar: 200000": "pkts-sofar: x"} {
		_, err := ParsePktgen(strings.NewReader(strings.Replace(string(b), bad, line, 1)))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line == 0 {
			t.Errorf("%q → %q: want an error naming the line, got %v", bad, line, err)
		}
	}
}
