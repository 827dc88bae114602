package perfparse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Iperf3 is the result of `iperf3 --json` (client or server side), TCP or
// UDP. Rates are bit/s, times seconds, CPU utilisation fractions of the
// machine (iperf3's percentages / 100). What the output does not measure
// is absent (nil), never 0: a server's end sums of the direction it did
// not take part in, a UDP test's retransmits, a UDP sender's jitter and
// loss (only the receiver measures them), the peer's CPU on a server.
type Iperf3 struct {
	Version    string `json:"version,omitempty"`
	SystemInfo string `json:"system_info,omitempty"`
	// Protocol is "TCP" or "UDP" (from start.test_start).
	Protocol string `json:"protocol,omitempty"`
	// Server is true for the server's output (start.accepted_connection;
	// a client's has connecting_to). A server prints the direction it did
	// not measure (what it sent, when it received) as sums of 0 bytes and
	// its peer's CPU as 0: here they are nil.
	Server     bool    `json:"server,omitempty"`
	NumStreams int     `json:"num_streams,omitempty"`
	Reverse    bool    `json:"reverse"`
	DurationS  float64 `json:"duration_s,omitempty"`
	OmitS      float64 `json:"omit_s,omitempty"`
	// Error is iperf3's "error" member ("" when the test ran). A record
	// with an Error is still returned with a nil Go error.
	Error string `json:"error,omitempty"`
	// Messages are the lines before the JSON document: iperf3 prints its
	// warnings on stderr ("warning: Report format (-f) flag ignored with
	// JSON output (-J)"), so a capture of both starts with them.
	Messages []string `json:"messages,omitempty"`
	// Sender and Receiver are the end sums (sum_sent / sum_received). UDP
	// output of iperf3 before 3.10 has only "sum", the sender's bytes and
	// rate with the receiver's loss and jitter: it is the Sender, and
	// Receiver is nil (such output has no receiver's rate).
	Sender   *Iperf3Sum `json:"sender,omitempty"`
	Receiver *Iperf3Sum `json:"receiver,omitempty"`
	// Bidir is true for a --bidir test (iperf3 3.7+); then Sender and
	// Receiver are the client-to-server direction and ReverseSender and
	// ReverseReceiver the server-to-client one (sum_sent_bidir_reverse,
	// sum_received_bidir_reverse).
	Bidir           bool       `json:"bidir,omitempty"`
	ReverseSender   *Iperf3Sum `json:"reverse_sender,omitempty"`
	ReverseReceiver *Iperf3Sum `json:"reverse_receiver,omitempty"`
	// ReceiverBitsPerSec and SenderBitsPerSec repeat the end sums' rates
	// (nil where that sum is nil).
	ReceiverBitsPerSec *float64 `json:"receiver_bits_per_sec,omitempty"`
	SenderBitsPerSec   *float64 `json:"sender_bits_per_sec,omitempty"`
	// Retransmits is the TCP sender's total (nil for UDP, on the
	// receiving side or when the sender did not report it).
	Retransmits *uint64 `json:"retransmits,omitempty"`
	// Streams are the per-stream end results.
	Streams []Iperf3Stream `json:"streams,omitempty"`
	// Intervals are the per-interval sums (and per-stream values).
	Intervals []Iperf3Interval `json:"intervals,omitempty"`
	CPU       *Iperf3CPU       `json:"cpu,omitempty"`
	// SenderCongestion and ReceiverCongestion are the TCP congestion
	// control algorithms.
	SenderCongestion   string `json:"sender_tcp_congestion,omitempty"`
	ReceiverCongestion string `json:"receiver_tcp_congestion,omitempty"`
}

// Iperf3Sum is one sender or receiver summary (end sum, stream or
// interval).
type Iperf3Sum struct {
	Socket      int     `json:"socket,omitempty"`
	StartS      float64 `json:"start_s"`
	EndS        float64 `json:"end_s"`
	Seconds     float64 `json:"seconds"`
	Bytes       uint64  `json:"bytes"`
	BitsPerSec  float64 `json:"bits_per_sec"`
	Retransmits *uint64 `json:"retransmits,omitempty"`
	// UDP only: jitter in seconds, lost and total datagrams, lost fraction.
	JitterS     *float64 `json:"jitter_s,omitempty"`
	LostPackets *uint64  `json:"lost_packets,omitempty"`
	Packets     *uint64  `json:"packets,omitempty"`
	LostFrac    *float64 `json:"lost_frac,omitempty"`
	Omitted     bool     `json:"omitted,omitempty"`
	// RTTS is the TCP sender's smoothed round-trip time in seconds
	// (iperf3's "rtt", tcpi_rtt in microseconds, per stream and
	// interval); nil where iperf3 does not report it.
	RTTS *float64 `json:"rtt_s,omitempty"`
	// IsSender is iperf3's "sender" flag (which side produced the numbers).
	IsSender bool `json:"sender"`
}

// Iperf3Stream is one stream's end result.
type Iperf3Stream struct {
	Sender   *Iperf3Sum `json:"sender,omitempty"`
	Receiver *Iperf3Sum `json:"receiver,omitempty"`
	UDP      *Iperf3Sum `json:"udp,omitempty"`
}

// Iperf3Interval is one reporting interval (SumReverse: the
// server-to-client direction of a --bidir test).
type Iperf3Interval struct {
	Sum        Iperf3Sum   `json:"sum"`
	SumReverse *Iperf3Sum  `json:"sum_reverse,omitempty"`
	Streams    []Iperf3Sum `json:"streams,omitempty"`
}

// Iperf3CPU is cpu_utilization_percent as fractions (0.175 = 17.5 %).
// Remote is the peer's, nil where the output has none: a server prints
// its client's as 0.
type Iperf3CPU struct {
	HostTotalFrac  float64          `json:"host_total_frac"`
	HostUserFrac   float64          `json:"host_user_frac"`
	HostSystemFrac float64          `json:"host_system_frac"`
	Remote         *Iperf3RemoteCPU `json:"remote,omitempty"`
}

// Iperf3RemoteCPU is the peer's cpu_utilization_percent as fractions.
type Iperf3RemoteCPU struct {
	TotalFrac  float64 `json:"total_frac"`
	UserFrac   float64 `json:"user_frac"`
	SystemFrac float64 `json:"system_frac"`
}

type iperfSumJSON struct {
	Socket        int          `json:"socket"`
	Start         float64      `json:"start"`
	End           float64      `json:"end"`
	Seconds       float64      `json:"seconds"`
	Bytes         json.Number  `json:"bytes"`
	BitsPerSecond float64      `json:"bits_per_second"`
	Retransmits   *json.Number `json:"retransmits"`
	JitterMS      *float64     `json:"jitter_ms"`
	LostPackets   *json.Number `json:"lost_packets"`
	Packets       *json.Number `json:"packets"`
	LostPercent   *float64     `json:"lost_percent"`
	Omitted       bool         `json:"omitted"`
	Sender        bool         `json:"sender"`
	RTT           *float64     `json:"rtt"`
}

type iperfIntervalJSON struct {
	Streams    []iperfSumJSON `json:"streams"`
	Sum        *iperfSumJSON  `json:"sum"`
	SumReverse *iperfSumJSON  `json:"sum_bidir_reverse"`
}

type iperfJSON struct {
	Start struct {
		Version    string `json:"version"`
		SystemInfo string `json:"system_info"`
		// AcceptedConnection is only in a server's output.
		AcceptedConnection json.RawMessage `json:"accepted_connection"`
		TestStart          struct {
			Protocol   string  `json:"protocol"`
			NumStreams int     `json:"num_streams"`
			Omit       float64 `json:"omit"`
			Duration   float64 `json:"duration"`
			Reverse    int     `json:"reverse"`
			Bidir      int     `json:"bidir"`
		} `json:"test_start"`
	} `json:"start"`
	Intervals []iperfIntervalJSON `json:"intervals"`
	End       struct {
		Streams []struct {
			Sender   *iperfSumJSON `json:"sender"`
			Receiver *iperfSumJSON `json:"receiver"`
			UDP      *iperfSumJSON `json:"udp"`
		} `json:"streams"`
		Sum         *iperfSumJSON `json:"sum"`
		SumSent     *iperfSumJSON `json:"sum_sent"`
		SumReceived *iperfSumJSON `json:"sum_received"`
		// --bidir: the server-to-client direction.
		SumSentReverse     *iperfSumJSON `json:"sum_sent_bidir_reverse"`
		SumReceivedReverse *iperfSumJSON `json:"sum_received_bidir_reverse"`
		CPU                *struct {
			HostTotal    float64 `json:"host_total"`
			HostUser     float64 `json:"host_user"`
			HostSystem   float64 `json:"host_system"`
			RemoteTotal  float64 `json:"remote_total"`
			RemoteUser   float64 `json:"remote_user"`
			RemoteSystem float64 `json:"remote_system"`
		} `json:"cpu_utilization_percent"`
		SenderCongestion   string `json:"sender_tcp_congestion"`
		ReceiverCongestion string `json:"receiver_tcp_congestion"`
	} `json:"end"`
	Error *string `json:"error"`
}

// isIperf3Text reports whether t is iperf3's human-readable report: its
// "[ ID] Interval" column header, on the client's and the server's side.
func isIperf3Text(t []byte) bool {
	return bytes.Contains(t, []byte("[ ID] Interval")) &&
		(bytes.Contains(t, []byte("Connecting to host")) || bytes.Contains(t, []byte("Server listening on")) || bytes.Contains(t, []byte("Accepted connection from")))
}

// ParseIperf3 parses the output of `iperf3 --json` (only the first JSON
// object is read: a server with --json prints one per test) or of
// `iperf3 --json-stream` (iperf3 3.17+: one {"event":..,"data":..} object
// per line).
func ParseIperf3(r io.Reader) (*Iperf3, error) {
	data, err := readUnquoted(r)
	if err != nil {
		return nil, err
	}
	msgs, data := cutLeadingText(data)
	if t := bytes.TrimSpace(data); msgs == nil && len(t) > 0 && t[0] != '{' {
		// No line starts an object: iperf3 exited before its JSON
		// (e.g. "iperf3: parameter error - ..." and its usage).
		line, _, _ := bytes.Cut(t, []byte{'\n'})
		if isIperf3Text(t) {
			return nil, errorf(1, "iperf3 --json: this is iperf3's text output (%q); run iperf3 with --json (-J) and give that", clip(string(bytes.TrimSpace(line))))
		}
		return nil, errorf(1, "iperf3 --json: no JSON object in the input, which is text beginning %q (iperf3 prints its error so when it refuses its options; or this is not iperf3 output)", clip(string(bytes.TrimSpace(line))))
	}
	if data, err = repairIperf3JSON(data); err != nil {
		return nil, err
	}
	var j iperfJSON
	if err := decodeIperf3(data, &j); err != nil {
		return nil, err
	}
	out := &Iperf3{
		Version:    j.Start.Version,
		SystemInfo: j.Start.SystemInfo,
		Protocol:   j.Start.TestStart.Protocol,
		Server:     len(j.Start.AcceptedConnection) > 0,
		NumStreams: j.Start.TestStart.NumStreams,
		Reverse:    j.Start.TestStart.Reverse != 0,
		DurationS:  j.Start.TestStart.Duration,
		OmitS:      j.Start.TestStart.Omit,
	}
	if j.Error != nil {
		out.Error = *j.Error
	}
	out.Messages = msgs
	if out.Version == "" && out.Error == "" && j.End.Sum == nil && j.End.SumSent == nil && len(j.Intervals) == 0 {
		return nil, errorf(1, "not iperf3 --json output: no start, intervals, end or error member")
	}
	if err := convertIperf3Sums(&j, out); err != nil {
		return nil, err
	}
	if out.Server {
		dropServerPlaceholders(out)
	}
	if out.Sender != nil {
		out.SenderBitsPerSec = &out.Sender.BitsPerSec
		out.Retransmits = out.Sender.Retransmits
	}
	if out.Receiver != nil {
		out.ReceiverBitsPerSec = &out.Receiver.BitsPerSec
	}
	if cpu := j.End.CPU; cpu != nil {
		out.CPU = &Iperf3CPU{HostTotalFrac: scale(cpu.HostTotal, -2), HostUserFrac: scale(cpu.HostUser, -2), HostSystemFrac: scale(cpu.HostSystem, -2)}
		if !out.Server || cpu.RemoteTotal != 0 || cpu.RemoteUser != 0 || cpu.RemoteSystem != 0 {
			out.CPU.Remote = &Iperf3RemoteCPU{scale(cpu.RemoteTotal, -2), scale(cpu.RemoteUser, -2), scale(cpu.RemoteSystem, -2)}
		}
	}
	out.SenderCongestion, out.ReceiverCongestion = j.End.SenderCongestion, j.End.ReceiverCongestion
	return out, nil
}

// dropServerPlaceholders removes from a server's output (out.Server) the
// sums of the direction it did not measure: a server that received
// prints what it "sent" as 0 bytes at 0 bit/s (iperf 3.12 on loopback,
// testdata/iperf3/real-server-tcp-lo.json), and one that sent (-R) what
// it "received" (testdata/iperf3/real-server-tcp-lo-R.json,
// real-server-udp-lo-R.json; its text output prints no receiver line:
// testdata/iperf3/bad-real-server-text-R-first-test.txt). Only 0-byte
// sums go, never a count; a --bidir server measured both directions.
func dropServerPlaceholders(out *Iperf3) {
	if out.Bidir {
		return
	}
	placeholder := func(s **Iperf3Sum) {
		if *s != nil && (*s).Bytes == 0 {
			*s = nil
		}
	}
	unmeasured := func(st *Iperf3Stream) **Iperf3Sum { return &st.Sender }
	sum := &out.Sender
	if out.Reverse {
		unmeasured = func(st *Iperf3Stream) **Iperf3Sum { return &st.Receiver }
		sum = &out.Receiver
	}
	placeholder(sum)
	for i := range out.Streams {
		placeholder(unmeasured(&out.Streams[i]))
		if out.Reverse {
			// A UDP server that sent has no receiver's jitter and
			// loss per stream either: iperf 3.12 prints them as 0
			// (testdata/iperf3/real-server-udp-lo-R.json).
			dropSenderLoss(out.Streams[i].UDP)
		}
	}
}

// cutLeadingText returns the non-blank lines before the first line that
// starts with "{", and data with them blanked (line numbers stay right).
// Without such a line, data is returned as is.
func cutLeadingText(data []byte) ([]string, []byte) {
	var msgs []string
	off := 0
	for off < len(data) {
		line, _, _ := bytes.Cut(data[off:], []byte{'\n'})
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '{' {
			break
		} else if len(t) > 0 {
			msgs = append(msgs, string(t))
		}
		off += len(line) + 1
	}
	if off >= len(data) || len(msgs) == 0 {
		return nil, data
	}
	out := bytes.Clone(data)
	for i := 0; i < off; i++ {
		if out[i] != '\n' {
			out[i] = ' '
		}
	}
	return msgs, out
}

// decodeIperf3 decodes data, a --json object or a --json-stream, into j.
func decodeIperf3(data []byte, j *iperfJSON) error {
	if isIperf3Stream(data) {
		return decodeIperf3Stream(data, j)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(j); err != nil {
		return jsonError(data, dec.InputOffset(), err, "iperf3 --json")
	}
	return nil
}

// convertIperf3Sums sets the intervals, the per-stream end sums and the
// sender and receiver totals of out from j. The errors of all sums that do
// not convert are joined.
func convertIperf3Sums(j *iperfJSON, out *Iperf3) error {
	var errs []error
	// c converts s; a sum that does not convert is an error in errs and
	// an empty sum here (the result is discarded), never a nil to
	// dereference.
	c := func(s *iperfSumJSON) *Iperf3Sum {
		o, err := convertIperf3Sum(s)
		if err != nil {
			errs = append(errs, err)
			return &Iperf3Sum{}
		}
		return o
	}
	for _, iv := range j.Intervals {
		var x Iperf3Interval
		if iv.Sum != nil {
			x.Sum = *c(iv.Sum)
		}
		x.SumReverse = c(iv.SumReverse)
		for i := range iv.Streams {
			x.Streams = append(x.Streams, *c(&iv.Streams[i]))
		}
		out.Intervals = append(out.Intervals, x)
	}
	for _, s := range j.End.Streams {
		out.Streams = append(out.Streams, Iperf3Stream{Sender: c(s.Sender), Receiver: c(s.Receiver), UDP: c(s.UDP)})
	}
	out.Sender, out.Receiver = c(j.End.SumSent), c(j.End.SumReceived)
	out.ReverseSender, out.ReverseReceiver = c(j.End.SumSentReverse), c(j.End.SumReceivedReverse)
	out.Bidir = j.Start.TestStart.Bidir != 0 || out.ReverseSender != nil
	if j.Start.TestStart.Protocol == "UDP" {
		dropSenderLoss(out.Sender)
		dropSenderLoss(out.ReverseSender)
	}
	if sum := c(j.End.Sum); sum != nil {
		// UDP before iperf3 3.10 has only "sum": its bytes and rate are
		// the sender's (the receiver's loss and jitter beside them), so
		// it is no receiver's total (esnet/iperf#1174 added
		// sum_received for that). A UDP receiver's rate is not in such
		// output at all: Receiver stays nil rather than repeat the
		// sender's rate.
		if out.Sender == nil {
			out.Sender = sum
		}
		if out.Receiver == nil && j.Start.TestStart.Protocol != "UDP" {
			out.Receiver = sum
		}
	}
	return errors.Join(errs...)
}

// dropSenderLoss removes from a UDP sender's end sum (sum_sent) the
// jitter and loss it did not measure: only the receiver sees them, and
// iperf 3.12 prints the sender's as 0 beside the receiver's real ones
// (testdata/iperf3/real-udp-lo.json: jitter 0 and 0 lost sent, 1.13 ms
// and 373 of 1378 lost received). The packets it sent stay.
func dropSenderLoss(s *Iperf3Sum) {
	if s != nil {
		s.JitterS, s.LostPackets, s.LostFrac = nil, nil, nil
	}
}

// convertIperf3Sum converts one iperf3 sum to SI units; nil stays nil.
func convertIperf3Sum(s *iperfSumJSON) (*Iperf3Sum, error) {
	if s == nil {
		return nil, nil
	}
	o := &Iperf3Sum{Socket: s.Socket, StartS: s.Start, EndS: s.End, Seconds: s.Seconds,
		BitsPerSec: s.BitsPerSecond, Omitted: s.Omitted, IsSender: s.Sender}
	var err error
	if o.Bytes, err = jsonUint(s.Bytes, "bytes"); err != nil {
		return nil, err
	}
	if o.Retransmits, err = jsonOptUint(s.Retransmits, "retransmits"); err != nil {
		return nil, err
	}
	if o.LostPackets, err = jsonOptUint(s.LostPackets, "lost_packets"); err != nil {
		return nil, err
	}
	if o.Packets, err = jsonOptUint(s.Packets, "packets"); err != nil {
		return nil, err
	}
	if s.JitterMS != nil {
		v := scale(*s.JitterMS, -3)
		o.JitterS = &v
	}
	if s.RTT != nil {
		v := scale(*s.RTT, -6)
		o.RTTS = &v
	}
	// A lost_percent of 0 beside lost datagrams is no share: iperf
	// 3.12's receiving server prints a stream's so, having no sender's
	// count to divide by (testdata/iperf3/real-server-udp-lo.json: 111
	// lost of 763, "lost_percent": 0).
	if s.LostPercent != nil && (*s.LostPercent != 0 || o.LostPackets == nil || *o.LostPackets == 0) {
		v := scale(*s.LostPercent, -2)
		o.LostFrac = &v
	}
	return o, nil
}

// jsonOptUint is jsonUint for a member that may be absent (nil).
func jsonOptUint(n *json.Number, name string) (*uint64, error) {
	if n == nil {
		return nil, nil
	}
	v, err := jsonUint(*n, name)
	return &v, err
}

func jsonUint(n json.Number, name string) (uint64, error) {
	if n == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		// iperf3 prints some counts as floats (e.g. 0.0 on old versions).
		f, ferr := strconv.ParseFloat(string(n), 64)
		if ferr != nil || f < 0 || f >= 1<<64 || f != float64(uint64(f)) {
			return 0, errorf(0, "%s: %s is not a count", name, n)
		}
		v = uint64(f)
	}
	return v, nil
}

// jsonError turns a JSON decoding error into a SyntaxError with the line.
func jsonError(data []byte, off int64, err error, what string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	if err == io.EOF {
		return &SyntaxError{Line: 0, Msg: "empty input: expected " + what, Err: err}
	}
	return &SyntaxError{Line: line, Msg: fmt.Sprintf("%s: %v", what, err), Err: err}
}

// isIperf3Stream reports whether data is --json-stream output: its first
// line is an object with an "event" member.
func isIperf3Stream(data []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimLeft(data, " \t\r\n"), []byte{'\n'})
	var ev struct {
		Event *string         `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	return json.Unmarshal(line, &ev) == nil && ev.Event != nil
}

// decodeIperf3Stream assembles --json-stream events into the --json shape.
func decodeIperf3Stream(data []byte, j *iperfJSON) error {
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return &SyntaxError{Line: i + 1, Msg: fmt.Sprintf("iperf3 --json-stream: %v", err), Err: err}
		}
		var target any
		switch ev.Event {
		case "start":
			target = &j.Start
		case "interval":
			j.Intervals = append(j.Intervals, iperfIntervalJSON{})
			target = &j.Intervals[len(j.Intervals)-1]
		case "end":
			target = &j.End
		case "error":
			var msg string
			if err := json.Unmarshal(ev.Data, &msg); err != nil {
				return &SyntaxError{Line: i + 1, Msg: "iperf3 --json-stream: error event without a message", Err: err}
			}
			j.Error = &msg
			continue
		default:
			continue // e.g. server_output
		}
		d := json.NewDecoder(bytes.NewReader(ev.Data))
		d.UseNumber()
		if err := d.Decode(target); err != nil {
			return &SyntaxError{Line: i + 1, Msg: fmt.Sprintf("iperf3 --json-stream %s event: %v", ev.Event, err), Err: err}
		}
	}
	return nil
}
