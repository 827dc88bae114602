package perfparse

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestIperf3(t *testing.T) {
	f, err := ParseIperf3(openT(t, "testdata/iperf3/fixture-tcp-tcg.json"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Protocol != "TCP" || *f.ReceiverBitsPerSec != 2403803712.01227 || *f.SenderBitsPerSec != 2410690439.63947 || f.Retransmits == nil || *f.Retransmits != 0 || f.Server ||
		f.Receiver.Bytes != 3005942720 || len(f.Intervals) != 10 || len(f.Streams) != 1 || f.CPU.HostTotalFrac != 0.17539226372992083 || f.SenderCongestion != "bbr" {
		t.Errorf("fixture: %+v", f)
	}
	p, err := ParseIperf3(openT(t, "testdata/iperf3/real-tcp-lo-P2-R.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Reverse || p.NumStreams != 2 || len(p.Streams) != 2 || *p.Retransmits != 41 || p.Streams[0].Sender == nil || p.Streams[0].Receiver == nil {
		t.Errorf("-P2 -R: %+v", p)
	}
	var sum uint64
	for _, s := range p.Streams {
		sum += *s.Sender.Retransmits
	}
	if sum != *p.Retransmits {
		t.Errorf("per-stream retransmits sum %d != total %d", sum, *p.Retransmits)
	}
	u, err := ParseIperf3(openT(t, "testdata/iperf3/real-udp-lo.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := u.Receiver
	if u.Protocol != "UDP" || u.Retransmits != nil || r.LostPackets == nil || *r.LostPackets != 373 || *r.Packets != 1378 || *r.LostFrac != 0.2645390070921986 || u.Streams[0].UDP == nil {
		t.Errorf("udp: %+v receiver %+v", u, r)
	}
	e, err := ParseIperf3(openT(t, "testdata/iperf3/real-refused.json"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Error != "unable to connect to server: Connection refused" || e.Receiver != nil {
		t.Errorf("refused: %+v", e)
	}
}

// A server's output (iperf 3.12 on loopback, the server of a client to
// server TCP test) prints what it did not measure as 0: what it "sent"
// (sum_sent and each stream's sender, 0 bytes at 0 bit/s, the text
// output's "sender statistics not available"), the sender's retransmits
// and its client's CPU. They are absent, never a measured 0; what it
// received and its own CPU stay.
func TestIperf3ServerUnmeasuredAbsent(t *testing.T) {
	s, err := ParseIperf3(openT(t, "testdata/iperf3/real-server-tcp-lo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Server || s.Sender != nil || s.SenderBitsPerSec != nil || s.Retransmits != nil || s.Streams[0].Sender != nil {
		t.Errorf("server: the direction it did not measure is not absent: %s", js(s))
	}
	if s.Receiver == nil || s.Receiver.Bytes != 789053440 || *s.ReceiverBitsPerSec != 3153170950.0332174 || s.Streams[0].Receiver == nil {
		t.Errorf("server: what it received: %s", js(s))
	}
	if s.CPU == nil || s.CPU.HostTotalFrac != 0.12695235621447196 || s.CPU.Remote != nil {
		t.Errorf("server: CPU %+v, want its own and no client's", s.CPU)
	}
	// A client has both directions (the server's from the exchange of
	// results) and its server's CPU.
	c, err := ParseIperf3(openT(t, "testdata/iperf3/real-tcp-lo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server || c.Sender == nil || c.Receiver == nil || c.CPU.Remote == nil || c.CPU.Remote.TotalFrac == 0 {
		t.Errorf("client: %s", js(c))
	}
}

// A server that sent (-R; iperf 3.12 on loopback, UDP -b 100M -t 2 and
// TCP -t 2) prints what it "received" as 0 bytes, and a UDP one each
// stream's jitter and loss as 0: absent here; what it sent stays. A UDP
// server that received prints each stream's lost_percent as 0 beside
// its 111 lost datagrams (it has no sender's count): absent, while its
// sum_received has the share over the datagrams received, 111 of 763.
func TestIperf3ServerReverse(t *testing.T) {
	seven := uint64(7)
	for _, tc := range []struct {
		file    string
		retrans *uint64
	}{{"real-server-udp-lo-R.json", nil}, {"real-server-tcp-lo-R.json", &seven}} {
		s, err := ParseIperf3(openT(t, "testdata/iperf3/"+tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if !s.Server || !s.Reverse || s.Receiver != nil || s.ReceiverBitsPerSec != nil || s.Streams[0].Receiver != nil {
			t.Errorf("%s: what it did not receive is not absent: %s", tc.file, js(s))
		}
		if s.Sender == nil || s.Sender.Bytes != 25001984 && s.Sender.Bytes != 3767009280 || !reflect.DeepEqual(s.Retransmits, tc.retrans) {
			t.Errorf("%s: what it sent: %s", tc.file, js(s.Sender))
		}
		// The UDP server's stream keeps its 763 datagrams sent; a TCP
		// stream has no udp member.
		udp := tc.retrans == nil
		if u := s.Streams[0].UDP; (u != nil) != udp || u != nil && (u.JitterS != nil || u.LostPackets != nil || u.LostFrac != nil || u.Packets == nil || *u.Packets != 763) {
			t.Errorf("%s: the sending stream's jitter and loss are not absent: %s", tc.file, js(u))
		}
	}
	s, err := ParseIperf3(openT(t, "testdata/iperf3/real-server-udp-lo.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, st := s.Receiver, s.Streams[0].UDP
	if r == nil || *r.JitterS != 9.963778170247674e-06 || *r.LostPackets != 111 || *r.Packets != 763 || *r.LostFrac != 0.145478374836173 {
		t.Errorf("receiving server's sum: %s", js(r))
	}
	if st == nil || st.LostFrac != nil || *st.LostPackets != 111 || *st.JitterS != *r.JitterS {
		t.Errorf("receiving server's stream: %s, want its 111 lost and no share", js(st))
	}
}

func TestIperf3Bad(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "perfparse: empty input"},
		{"{\n\"start\": {\n\"version\": 3,\n}", "perfparse: 4: iperf3 --json"},
		{"{\"start\":{\"version\":\"x\"},\"end\":{\"sum_sent\":{\"bytes\":-5}}}", "perfparse: bytes: -5 is not a count"},
		{"[]", "perfparse: 1: iperf3 --json"},
		{"{}", "perfparse: 1: not iperf3 --json output"},
	} {
		_, err := ParseIperf3(strings.NewReader(tc.in))
		var se *SyntaxError
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a SyntaxError starting %q", tc.in, err, tc.want)
		}
	}
}

func TestIperf3Quoted(t *testing.T) {
	data, err := os.ReadFile("testdata/iperf3/real-udp-lo.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParseIperf3(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseIperf3(strings.NewReader(collapseReport(string(data))))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("quoted iperf3 output parses differently")
	}
}

// The --json-stream form (iperf3 3.17+) of a run reads like its --json.
func TestIperf3JSONStream(t *testing.T) {
	want, err := ParseIperf3(openT(t, "testdata/iperf3/real-tcp-lo.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseIperf3(openT(t, "testdata/iperf3/written-json-stream-from-real-tcp-lo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("json-stream:\n got %s\nwant %s", js(got), js(want))
	}
	e, err := ParseIperf3(strings.NewReader(`{"event":"start","data":{"version":"iperf 3.17"}}` + "\n" + `{"event":"error","data":"unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: Connection refused"}` + "\n"))
	if err != nil || !strings.HasPrefix(e.Error, "unable to connect") {
		t.Errorf("stream error event: %+v, %v", e, err)
	}
}

// iperf3 has printed numbers that are not JSON. The intervals below are
// as published: iperf 3.0.11's UDP interval that received nothing
// ("lost_percent": -nan, esnet/iperf#364) and iperf 3.1.2's stream with
// "5.924e 06" (esnet/iperf#520), each in a document around it.
func TestIperf3NonJSONNumbers(t *testing.T) {
	const nanInterval = "{\n\"streams\":\t[{\n\t\"socket\":\t4,\n\t\"start\":\t8.00011,\n\t\"end\":\t9.00102,\n\t\"seconds\":\t1.00092,\n\t\"bytes\":\t0,\n\t\"bits_per_second\":\t0,\n\t\"jitter_ms\":\t0.452296,\n\t\"lost_packets\":\t0,\n\t\"packets\":\t0,\n\t\"lost_percent\":\t-nan,\n\t\"omitted\":\tfalse\n\t}],\n\"sum\":\t{\n\t\"start\":\t8.00011,\n\t\"end\":\t9.00102,\n\t\"seconds\":\t1.00092,\n\t\"bytes\":\t0,\n\t\"bits_per_second\":\t0,\n\t\"jitter_ms\":\t0.452296,\n\t\"lost_packets\":\t0,\n\t\"packets\":\t0,\n\t\"lost_percent\":\t-nan,\n\t\"omitted\":\tfalse\n}}"
	doc := func(version, protocol, intervals string) string {
		return `{"start":{"version":"` + version + `","test_start":{"protocol":"` + protocol + `"}},"intervals":[` + intervals + "]}"
	}
	u, err := ParseIperf3(strings.NewReader(doc("iperf 3.0.11", "UDP", nanInterval)))
	if err != nil {
		t.Fatal(err)
	}
	if s := u.Intervals[0].Sum; s.LostFrac != nil || *s.JitterS != 0.000452296 || *s.Packets != 0 {
		t.Errorf("-nan lost_percent: %s", js(u.Intervals[0]))
	}
	const expStream = `{"streams":[{"socket":7,"start":0,"end":15.0119,"seconds":15.0119,"bytes":11116296,"bits_per_second":5.924e 06,"omitted":false}]}`
	e, err := ParseIperf3(strings.NewReader(doc("iperf 3.1.2", "TCP", expStream)))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Intervals[0].Streams[0].BitsPerSec; got != 5.924e6 {
		t.Errorf("5.924e 06 read as %v", got)
	}
	// A nan where the value cannot be undefined is an error naming it;
	// nan inside a string is text.
	_, err = ParseIperf3(strings.NewReader(doc("iperf 3.0.11", "UDP", `{"sum":{"bits_per_second": nan}}`)))
	if err == nil || !strings.Contains(err.Error(), `"bits_per_second"`) {
		t.Errorf("nan rate: %v", err)
	}
	s, err := ParseIperf3(strings.NewReader(doc("iperf nan e 5", "TCP", "")))
	if err != nil || s.Version != "iperf nan e 5" {
		t.Errorf("nan in a string: %+v, %v", s, err)
	}
}

// Before iperf3 3.10 a UDP test's only total is "sum", the sender's bytes
// and rate: it is not reported as the receiver's (esnet/iperf#1174).
func TestIperf3OldUDPHasNoReceiver(t *testing.T) {
	u, err := ParseIperf3(openT(t, "testdata/iperf3/pub-github-iperf3.1.3-udp-k10000.json"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Receiver != nil || u.ReceiverBitsPerSec != nil || u.Sender == nil || *u.SenderBitsPerSec != 834711189.017002 || *u.Sender.LostPackets != 69 {
		t.Errorf("iperf 3.1.3 UDP: %s", js(u))
	}
}

// A UDP sender measures neither jitter nor loss: iperf 3.12's sum_sent
// (and sum_sent_bidir_reverse) print them as 0 beside the receiver's
// measured ones. They are absent, never a measured 0; the receiver's
// stay, and the packets the sender counted stay too.
func TestIperf3UDPSenderJitterLossAbsent(t *testing.T) {
	for _, f := range []string{"real-udp-lo.json", "real-udp-lo-R.json", "real-udp-lo-bidir.json"} {
		u, err := ParseIperf3(openT(t, "testdata/iperf3/"+f))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Iperf3Sum{u.Sender, u.ReverseSender} {
			if s != nil && (s.JitterS != nil || s.LostPackets != nil || s.LostFrac != nil || s.Packets == nil) {
				t.Errorf("%s: sender's jitter or loss is not absent: %s", f, js(s))
			}
		}
		if r := u.Receiver; r == nil || r.JitterS == nil || *r.JitterS == 0 || r.LostPackets == nil || r.LostFrac == nil {
			t.Errorf("%s: receiver's jitter and loss: %s", f, js(r))
		}
	}
}
