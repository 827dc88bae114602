package vmimages

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// fakeGuest answers requests with a script: reply(req) returns the lines
// to write (nil: stay silent).
func fakeGuest(t *testing.T, preamble []string, reply func(Request) []string) *Client {
	t.Helper()
	host, guest := net.Pipe()
	t.Cleanup(func() { host.Close(); guest.Close() })
	go func() {
		for _, l := range preamble {
			io.WriteString(guest, l+"\n")
		}
		sc := bufio.NewScanner(guest)
		for sc.Scan() {
			var req Request
			if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
				return
			}
			for _, l := range reply(req) {
				io.WriteString(guest, l+"\n")
			}
		}
	}()
	return NewClient(host)
}

func TestClientConversation(t *testing.T) {
	c := fakeGuest(t, []string{
		"[    1.234] some kernel message",
		`{"ev":"ready","boot_ms":2500,"kernel":"6.1.0-test"}`,
	}, func(r Request) []string {
		switch r.Op {
		case OpStats:
			return []string{
				`{"ev":"stats","id":999,"eth0":{"rx_packets":1}}`, // a stale reply: must be skipped
				"console noise",
				fmt.Sprintf(`{"ev":"stats","id":%d,"eth0":{"rx_packets":42,"rx_bytes":4200},"flows":{"9":40}}`, r.ID),
			}
		case OpSink:
			return []string{fmt.Sprintf(`{"ev":"error","id":%d,"msg":"sink %s: no xdp"}`, r.ID, r.Kind)}
		case "redirect":
			return []string{fmt.Sprintf(`{"ev":"error","id":%d,"msg":"no sockmap here","unsupported":true}`, r.ID)}
		case "count":
			return []string{fmt.Sprintf(`{"ev":"ok","id":%d,"msg":"{\"bytes\":42}"}`, r.ID)}
		}
		return []string{fmt.Sprintf(`{"ev":"ok","id":%d}`, r.ID)}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ready, err := c.WaitReady(ctx)
	if err != nil || ready.BootMS != 2500 || ready.Kernel != "6.1.0-test" {
		t.Fatalf("WaitReady = %+v, %v", ready, err)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Eth0.RxPackets != 42 || st.Flows["9"] != 40 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	err = c.Sink(ctx, SinkXDPDrop)
	var ae *AgentError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "no xdp") {
		t.Fatalf("Sink error = %v, want an AgentError", err)
	}
	if !errors.As(err, &ae) || ae.Unsupported {
		t.Errorf("Sink error %+v is marked unsupported", ae)
	}
	_, err = c.Do(ctx, Request{Op: "redirect", Action: "sockmap"})
	if !errors.As(err, &ae) || !ae.Unsupported || ae.Msg != "no sockmap here" {
		t.Errorf("redirect error = %v (%+v), want an unsupported AgentError", err, ae)
	}
	ev, err := c.Do(ctx, Request{Op: "count"})
	if err != nil || ev.Msg != `{"bytes":42}` {
		t.Errorf("count = %+v, %v", ev, err)
	}
	if err := c.Poweroff(ctx); err != nil {
		t.Fatal(err)
	}
	if tail := c.ConsoleTail(); len(tail) != 2 || tail[1] != "console noise" {
		t.Errorf("ConsoleTail = %q", tail)
	}
}

// A silent agent must not hang the host: the ctx bounds every call and the
// error names the last line seen.
func TestClientTimeout(t *testing.T) {
	c := fakeGuest(t, []string{"[ 9.9] Kernel panic - not syncing"}, func(Request) []string { return nil })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := c.WaitReady(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Kernel panic") {
		t.Fatalf("WaitReady err = %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel2()
	if _, err := c.Stats(ctx2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stats err = %v", err)
	}
}

func TestClientClosed(t *testing.T) {
	host, guest := net.Pipe()
	c := NewClient(host)
	io.WriteString(guest, "vnetbench agent: fatal: no network interface; powering off\n")
	guest.Close()
	_, err := c.WaitReady(t.Context())
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "fatal: no network interface") {
		t.Fatalf("err = %v", err)
	}
}

// A ready event lost before the host connected is still received: the
// host pings, the agent answers a ping with ready. The pings back off, so
// a guest that boots for minutes (a nested guest under TCG in a TCG lab
// VM: 400-500 s) finds few queued when its agent starts reading, not one
// per second of its boot.
func TestWaitReadyPings(t *testing.T) {
	if pingDelay(pingFirst, 0) != pingFirst || pingDelay(pingFirst, 1) != 2*pingFirst || pingDelay(pingFirst, 3) != 8*pingFirst || pingDelay(pingFirst, 1000) != pingMax {
		t.Errorf("ping delays %v %v %v %v, want %v doubling up to %v", pingDelay(pingFirst, 0), pingDelay(pingFirst, 1), pingDelay(pingFirst, 3), pingDelay(pingFirst, 1000), pingFirst, pingMax)
	}
	n := 0
	for total := time.Duration(0); total < 500*time.Second; n++ {
		total += pingDelay(pingFirst, n)
	}
	if n > 25 {
		t.Errorf("%d pings during a 500 s boot, want at most 25", n)
	}

	c := fakeGuest(t, nil, func(r Request) []string { // the ready at boot was lost
		if r.Op == OpPing {
			return []string{`{"ev":"ready","kernel":"6.1.0-test"}`}
		}
		return nil
	})
	c.firstPing = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if ev, err := c.WaitReady(ctx); err != nil || ev.Kernel != "6.1.0-test" {
		t.Fatalf("WaitReady = %+v, %v", ev, err)
	}
}

// lineBomb is n bytes without a newline, made as they are read.
type lineBomb struct{ n int }

func (b *lineBomb) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), b.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	b.n -= k
	return k, nil
}

// A guest that sends a huge line (here 64 MiB without a newline, then an
// error event with a 1 MiB message) costs the host a bounded amount of
// memory (before: the whole line, and the whole message in the error),
// and the conversation goes on after it.
func TestClientLineBounded(t *testing.T) {
	const bomb = 64 << 20
	host, guest := net.Pipe()
	t.Cleanup(func() { host.Close(); guest.Close() })
	go func() {
		io.Copy(guest, &lineBomb{n: bomb})
		io.WriteString(guest, "\n"+`{"ev":"ready","kernel":"6.1"}`+"\n")
		sc := bufio.NewScanner(guest)
		for sc.Scan() {
			var req Request
			json.Unmarshal(sc.Bytes(), &req)
			fmt.Fprintf(guest, `{"ev":"error","id":%d,"msg":"%s"}`+"\n", req.ID, strings.Repeat("m", 1<<20))
		}
	}()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := NewClient(host)
	if _, err := c.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// At most a line of MaxEventLine as it grows (about 2 x 4 MiB) and the
	// pipe's buffers; before, the whole line and more (over 64 MiB).
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bomb/2 {
		t.Errorf("reading a %d-byte line allocated %d bytes", bomb, alloc)
	}
	tail := c.ConsoleTail()
	if len(tail) != 1 || len(tail[0]) > 2*fault.MaxQuote || !strings.Contains(tail[0], "dropped") {
		t.Errorf("console tail after the long line: %d lines, first %d bytes", len(tail), len(tail[0]))
	}
	_, err := c.Stats(t.Context())
	if err == nil || len(err.Error()) > 2*fault.MaxQuote {
		t.Errorf("error of a 1 MiB message: %d bytes", len(fmt.Sprint(err)))
	}
}
