package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/asm"

	"github.com/vnetbench/vnetbench/vmimages"
)

type fakeSystem struct {
	sink      string
	sinks     int // Sink calls
	poweredOn bool
}

func (f *fakeSystem) Stats() (*vmimages.Event, error) {
	return &vmimages.Event{Eth0: &vmimages.IfStats{RxPackets: 7}, Sink: f.sink}, nil
}
func (f *fakeSystem) Sink(kind string) (string, error) { f.sink = kind; f.sinks++; return "", nil }
func (f *fakeSystem) Poweroff()                        { f.poweredOn = false }

// converse feeds lines to a Server and returns the events it wrote.
func converse(t *testing.T, lines ...string) []vmimages.Event {
	t.Helper()
	host, guest := net.Pipe()
	srv := &Server{Sys: &fakeSystem{poweredOn: true}, Ready: vmimages.Event{BootMS: 1234, Kernel: "6.1.0-test"}}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), guest, true); guest.Close() }()
	go func() {
		for _, l := range lines {
			io.WriteString(host, l+"\n")
		}
	}()
	host.SetDeadline(time.Now().Add(5 * time.Second))
	sc := bufio.NewScanner(host)
	var evs []vmimages.Event
	for len(evs) < len(lines)+1 && sc.Scan() {
		var ev vmimages.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("agent wrote a non-JSON line %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != len(lines)+1 {
		t.Fatalf("got %d events for %d requests (+ready): %v", len(evs), len(lines), sc.Err())
	}
	host.Close()
	if err := <-done; err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Serve: %v", err)
	}
	return evs
}

func TestServeProtocol(t *testing.T) {
	evs := converse(t,
		`{"id":1,"op":"stats"}`,
		`{"id":2,"op":"frobnicate"}`,
		`this is not json`,
		`{"id":3,"op":"sink","kind":"xdp-drop"}`,
		`{"id":4,"op":"sink","kind":"teleport"}`,
		`{"id":8,"op":"stats","bogus":1}`,
		`{"id":9}`,
		`{"id":10,"op":"ping"}`,
		`{"id":11,"op":"poweroff"}`,
	)
	want := []struct {
		ev  string
		id  uint64
		msg string
	}{
		{"ready", 0, ""},
		{"stats", 1, ""},
		{"error", 2, `unknown op "frobnicate"`},
		{"error", 0, "malformed request"},
		{"ok", 3, ""},
		{"error", 4, `unknown kind "teleport"`},
		{"error", 0, "unknown field"},
		{"error", 9, "without op"},
		{"ready", 10, ""},
		{"ok", 11, ""},
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Ev != w.ev || ev.ID != w.id || !strings.Contains(ev.Msg, w.msg) {
			t.Errorf("event %d = %+v, want ev=%s id=%d msg containing %q", i, ev, w.ev, w.id, w.msg)
		}
	}
	if evs[0].BootMS != 1234 || evs[0].Kernel != "6.1.0-test" || evs[8].BootMS != 1234 {
		t.Errorf("ready events %+v %+v", evs[0], evs[11])
	}
	if evs[1].Eth0 == nil || evs[1].Eth0.RxPackets != 7 {
		t.Errorf("stats event %+v", evs[1])
	}
}

func TestServeLongLine(t *testing.T) {
	evs := converse(t, strings.Repeat("x", maxLine+100), `{"id":1,"op":"ping"}`)
	if evs[1].Ev != "error" || !strings.Contains(evs[1].Msg, "longer than") {
		t.Errorf("long line: %+v", evs[1])
	}
	if evs[2].Ev != "ready" || evs[2].ID != 1 {
		t.Errorf("after a long line the agent must keep serving: %+v", evs[2])
	}
}

func TestXDPProgramAssembles(t *testing.T) {
	insns := xdpDropInsns(3)
	if err := insns.Marshal(io.Discard, binary.LittleEndian); err != nil {
		t.Fatalf("marshal xdp program: %v", err)
	}
	if last := insns[len(insns)-1]; last.OpCode.JumpOp() != asm.Exit {
		t.Errorf("program does not end in exit: %v", last)
	}
}

// A workload's op (Server.Ops) is answered like the agent's own: its
// action and args reach it, its detail or error comes back with the
// request's id; the unknown-op message lists it.
func TestServeWorkloadOps(t *testing.T) {
	var got []string
	srv := &Server{Sys: &fakeSystem{}, Ops: map[string]Op{
		"vsock-send": func(action string, args []string) (string, error) {
			got = append(got, action+" "+strings.Join(args, ","))
			if action != "start" {
				return "", errors.New("want start")
			}
			return "sending to cid 2", nil
		},
	}}
	ev, _ := srv.Handle(`{"id":3,"op":"vsock-send","action":"start","args":["2","5001"]}`)
	if ev.Ev != vmimages.EvOK || ev.ID != 3 || ev.Msg != "sending to cid 2" {
		t.Errorf("ok reply %+v", ev)
	}
	ev, _ = srv.Handle(`{"id":4,"op":"vsock-send","action":"jump"}`)
	if ev.Ev != vmimages.EvError || ev.ID != 4 || ev.Msg != "vsock-send jump: want start" {
		t.Errorf("error reply %+v", ev)
	}
	if strings.Join(got, "|") != "start 2,5001|jump " {
		t.Errorf("op saw %q", got)
	}
	ev, _ = srv.Handle(`{"id":5,"op":"nope"}`)
	if !strings.HasSuffix(ev.Msg, "want one of stats, sink, poweroff, ping, vsock-send") {
		t.Errorf("unknown op: %q", ev.Msg)
	}
}

// notSupportedErr is a workload's UnsupportedError as the agent sees it.
type notSupportedErr struct{ why string }

func (e notSupportedErr) Error() string        { return "not supported: " + e.why }
func (e notSupportedErr) NotSupported() string { return e.why }

// An op whose error says the kernel cannot do it (wrapped or not) gets an
// error event marked unsupported, its msg the reason alone; other errors
// are not marked.
func TestServeUnsupportedOp(t *testing.T) {
	why := "this kernel has no vsock sockmap support (Linux 6.4+)"
	srv := &Server{Sys: &fakeSystem{}, Ops: map[string]Op{
		"redirect": func(action string, _ []string) (string, error) {
			if action == "sockmap" {
				return "", fmt.Errorf("insert vsock socket: %w", notSupportedErr{why})
			}
			return "", errors.New("socat: not found")
		},
	}}
	ev, _ := srv.Handle(`{"id":7,"op":"redirect","action":"sockmap"}`)
	if ev.Ev != vmimages.EvError || ev.ID != 7 || !ev.Unsupported || ev.Msg != why {
		t.Errorf("unsupported reply %+v", ev)
	}
	b, _ := json.Marshal(ev)
	if !strings.Contains(string(b), `"unsupported":true`) {
		t.Errorf("wire form %s lacks unsupported", b)
	}
	ev, _ = srv.Handle(`{"id":8,"op":"redirect","action":"socat"}`)
	if ev.Ev != vmimages.EvError || ev.Unsupported || ev.Msg != "redirect socat: socat: not found" {
		t.Errorf("plain error reply %+v", ev)
	}
}

// A panic in a workload's op is that request's error: the agent (PID 1 in
// the guest) keeps serving.
func TestServeOpPanics(t *testing.T) {
	srv := &Server{Sys: &fakeSystem{}, Ops: map[string]Op{
		"boom": func(_ string, args []string) (string, error) {
			return args[len(args)], nil // a runtime error: index out of range
		},
	}}
	ev, _ := srv.Handle(`{"id":9,"op":"boom","action":"start"}`)
	if ev.Ev != vmimages.EvError || ev.ID != 9 || !strings.Contains(ev.Msg, "boom start: panic: runtime error: index out of range") {
		t.Errorf("reply %+v", ev)
	}
	if ev, _ := srv.Handle(`{"id":10,"op":"ping"}`); ev.Ev != vmimages.EvReady {
		t.Errorf("after the panic: %+v", ev)
	}
}

// A retry of the request handled last (its reply lost on the port) gets
// that reply again and is not done twice; a retry of a request whose first
// copy was lost is done.
func TestServeRetry(t *testing.T) {
	starts := 0
	srv := &Server{Sys: &fakeSystem{}, Ops: map[string]Op{
		"iperf3": func(action string, args []string) (string, error) {
			starts++
			if starts > 1 {
				return "", errors.New("iperf3 start: already running")
			}
			return fmt.Sprintf("start %d", starts), nil
		},
	}}
	for i, tc := range []struct{ line, want string }{
		{`{"id":3,"op":"iperf3","action":"start"}`, "ok start 1"},
		{`{"id":3,"op":"iperf3","action":"start","retry":true}`, "ok start 1"},
		{`{"id":3,"op":"iperf3","action":"start","retry":true}`, "ok start 1"},
		// Another request under the same ID is not a copy of it.
		{`{"id":3,"op":"iperf3","action":"stop","retry":true}`, "error iperf3 stop: iperf3 start: already running"},
		{`{"id":4,"op":"iperf3","action":"start","retry":true}`, "error iperf3 start: iperf3 start: already running"},
	} {
		ev, _ := srv.Handle(tc.line)
		if got := ev.Ev + " " + ev.Msg; got != tc.want || ev.ID != 3+uint64(i/4) {
			t.Errorf("%s: %q (id %d), want %q", tc.line, got, ev.ID, tc.want)
		}
	}
	if starts != 3 {
		t.Errorf("the op ran %d times, want 3 (once per request, copies not)", starts)
	}
	// A copy of request 3 that arrives after request 4 was handled (the
	// client gave up on 3 while its copy waited to be written) is not done.
	if ev, _ := srv.Handle(`{"id":3,"op":"iperf3","action":"start","retry":true}`); ev.Ev != "error" || !strings.Contains(ev.Msg, "late copy of request 3, which request 4 came after") || starts != 3 {
		t.Errorf("late copy: %s %q, op ran %d times, want refused and not run", ev.Ev, ev.Msg, starts)
	}
}

// Each connection starts without a last request: the client numbers its
// requests from 1 again, and request 1 of a new connection is not taken
// for a retry of the old connection's request 1, nor refused as late.
func TestServeNewConnectionForgetsLast(t *testing.T) {
	runs := 0
	srv := &Server{Sys: &fakeSystem{}, Ops: map[string]Op{
		"iperf3": func(action string, args []string) (string, error) {
			runs++
			return action, nil
		},
	}}
	for conn, lines := range []string{
		`{"id":1,"op":"iperf3","action":"start"}` + "\n",
		// The new connection's first copy of its request 1 was lost.
		`{"id":1,"op":"iperf3","action":"start","retry":true}` + "\n",
	} {
		var out bytes.Buffer
		if err := srv.Serve(t.Context(), struct {
			io.Reader
			io.Writer
		}{strings.NewReader(lines), &out}, false); err != nil {
			t.Fatalf("connection %d: %v", conn, err)
		}
		if strings.Contains(out.String(), `"error"`) {
			t.Errorf("connection %d answered %s", conn, out.String())
		}
	}
	if runs != 2 {
		t.Errorf("the op ran %d times, want 2: the new connection's request 1 is a request of its own", runs)
	}
}

// lossy passes lines written to it through but the drop-th (1-based)
// that carries an ID: a port that loses one request or reply. Each
// Write is one line (Client and Server write lines whole).
type lossy struct {
	rw   io.Writer
	drop int
	seen int
}

func (l *lossy) keep(line []byte) bool {
	if !strings.Contains(string(line), `"id":`) {
		return true
	}
	l.seen++
	return l.seen != l.drop
}

func (l *lossy) Write(p []byte) (int, error) {
	if !l.keep(p) {
		return len(p), nil
	}
	return l.rw.Write(p)
}

// The client asks again after each attempt without an answer, and the
// agent does the request once whether the request or its reply was lost:
// a workload's op through DoRetry, a sink through Sink (Do, with the
// client's attempt).
func TestClientDoRetryOverLossyPort(t *testing.T) {
	for _, lose := range []string{"request", "reply"} {
		for _, call := range []string{"op", "sink"} {
			t.Run(lose+"/"+call, func(t *testing.T) {
				runs := 0
				sys := &fakeSystem{}
				c := lossyClient(t, lose, &Server{Sys: sys, Ops: map[string]Op{
					"iperf3": func(string, []string) (string, error) { runs++; return "listening", nil },
				}})
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				if call == "sink" {
					c.SetAttempt(50 * time.Millisecond)
					if err := c.Sink(ctx, vmimages.SinkXDPDrop); err != nil || sys.sink != vmimages.SinkXDPDrop {
						t.Fatalf("Sink: %v, sink %q", err, sys.sink)
					}
					runs = sys.sinks
				} else if ev, err := c.DoRetry(ctx, vmimages.Request{Op: "iperf3", Action: "start"}, 50*time.Millisecond); err != nil || ev.Msg != "listening" {
					t.Fatalf("DoRetry: %+v, %v", ev, err)
				}
				if runs != 1 {
					t.Errorf("the %s ran %d times, want once", call, runs)
				}
			})
		}
	}
}

// lossyClient is a client of srv over a port that loses the first
// request (lose "request") or the first reply ("reply").
func lossyClient(t *testing.T, lose string, srv *Server) *vmimages.Client {
	host, guest := net.Pipe()
	t.Cleanup(func() { host.Close() })
	var hostSide io.ReadWriter = host
	var guestSide io.ReadWriter = guest
	if lose == "reply" {
		guestSide = struct {
			io.Reader
			io.Writer
		}{guest, &lossy{rw: guest, drop: 1}}
	} else {
		hostSide = struct {
			io.Reader
			io.Writer
		}{host, &lossy{rw: host, drop: 1}}
	}
	go func() { srv.Serve(context.Background(), guestSide, false); guest.Close() }()
	return vmimages.NewClient(hostSide)
}
