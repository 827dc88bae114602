package vmimages

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// Client is the host side of the agent protocol over any byte stream (the
// virtio-serial socket, or a serial console where kernel messages are
// mixed in: lines that are not protocol events are kept as console lines,
// not treated as errors). Calls are serialised; each is bound by its ctx.
type Client struct {
	w      io.Writer
	closer io.Closer

	mu     sync.Mutex // one request at a time
	wmu    sync.Mutex // one write at a time
	nextID uint64

	events chan Event
	ready  chan struct{}

	smu       sync.Mutex
	readyEv   *Event
	lastLines []string
	readErr   error
	done      chan struct{}

	// firstPing is WaitReady's wait before its first ping (0 =
	// pingFirst).
	firstPing time.Duration
	// attempt is Do's wait for an answer before it sends a request
	// again (Attempt; SetAttempt).
	attempt time.Duration
}

// Attempt is how long Do waits for an answer to a request before it sends
// the request again, the same ID marked Retry, which the agent does once
// (Request.Retry): a request or reply lost on the virtio-serial port costs
// an attempt, not the caller's deadline. The warmup of a nested TCG
// guest's iperf3 cell once waited its whole timeouts.traffic (66 s) for
// the server's start, nothing received. Not scaled to a slow guest: a
// copy more costs the agent a line, a lost one a whole attempt. Stats are
// the exception (Stats).
const Attempt = 15 * time.Second

// NewClient starts reading events from rw. If rw is an io.Closer, Close
// closes it.
func NewClient(rw io.ReadWriter) *Client {
	c := &Client{w: rw, events: make(chan Event, 16), ready: make(chan struct{}), done: make(chan struct{}), attempt: Attempt}
	if cl, ok := rw.(io.Closer); ok {
		c.closer = cl
	}
	go c.readLoop(rw)
	return c
}

// Close closes the underlying stream (when it can be closed).
func (c *Client) Close() error {
	if c.closer != nil {
		return c.closer.Close()
	}
	return nil
}

// MaxEventLine bounds a line the host reads from the agent: 4 MiB, above
// the largest event (a stats event of the flow-count sink with all 65536
// UDP source ports, about 2 MiB). A longer line is dropped, not kept.
// (Requests are bounded by the agent's own limit, 64 KiB.)
const MaxEventLine = 4 << 20

func (c *Client) readLoop(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, n, err := readLine(br, MaxEventLine)
		switch {
		case n > MaxEventLine:
			c.addConsoleLine(fmt.Sprintf("[a line of %d bytes or more, longer than %d, dropped: %s]", n, MaxEventLine, fault.Clip(line)))
		case strings.TrimSpace(line) != "":
			c.handleLine(strings.TrimSpace(line))
		}
		if err != nil {
			c.smu.Lock()
			c.readErr = err
			c.smu.Unlock()
			return
		}
	}
}

func (c *Client) handleLine(line string) {
	// The serial console may prefix a line with kernel output.
	if ev, ok := ParseEvent(line); ok {
		if ev.Ev == EvReady {
			c.smu.Lock()
			first := c.readyEv == nil
			c.readyEv = &ev
			c.smu.Unlock()
			if first {
				close(c.ready)
			}
			if ev.ID == 0 {
				return
			}
		}
		select {
		case c.events <- ev:
		default: // nobody waits (a reply to a cancelled call): drop
		}
		return
	}
	c.addConsoleLine(fault.Clip(line))
}

// addConsoleLine keeps line among the last 20 non-protocol lines.
func (c *Client) addConsoleLine(line string) {
	c.smu.Lock()
	c.lastLines = append(c.lastLines, line)
	if len(c.lastLines) > 20 {
		c.lastLines = c.lastLines[len(c.lastLines)-20:]
	}
	c.smu.Unlock()
}

// readLine reads one line (its newline included) and returns its first max
// bytes (a longer line's rest is read and discarded, so memory stays
// bounded) and its length n (when n > max, the line was cut). At the end of
// the stream it returns what it read and the error.
func readLine(br *bufio.Reader, max int) (string, int, error) {
	var sb strings.Builder
	n := 0
	for {
		frag, err := br.ReadSlice('\n')
		if room := max + 1 - sb.Len(); room > 0 {
			sb.Write(frag[:min(len(frag), room)])
		}
		n += len(frag)
		if err == bufio.ErrBufferFull {
			continue
		}
		return sb.String(), n, err
	}
}

// ConsoleTail returns the last non-protocol lines read (kernel messages on a
// serial console, the agent's fatal error), for error messages.
func (c *Client) ConsoleTail() []string {
	c.smu.Lock()
	defer c.smu.Unlock()
	return append([]string(nil), c.lastLines...)
}

func (c *Client) lastSeen() string {
	c.smu.Lock()
	defer c.smu.Unlock()
	if n := len(c.lastLines); n > 0 {
		return fmt.Sprintf(" (last line: %q)", c.lastLines[n-1])
	}
	if c.readErr != nil {
		return fmt.Sprintf(" (stream: %v)", c.readErr)
	}
	return " (nothing received)"
}

// ErrClosed means the agent's stream ended (the guest powered off or QEMU
// exited) before the answer arrived.
var ErrClosed = errors.New("agent connection closed")

// WaitReady asks again ("ping") in case the ready event was sent before
// the host connected (serial console fallback): after pingFirst, then at
// intervals that double up to pingMax. Not every second for the whole
// boot: the pings queue up in the port until the agent starts reading, and
// it answers each with a ready event before any later request. A nested
// guest under TCG in a TCG lab VM boots for 400-500 s on a loaded machine:
// one ping a second queued as many, whose answers (each a write through
// the nested virtio-serial port) came before the first stats request's.
const (
	pingFirst = time.Second
	pingMax   = 30 * time.Second
)

// pingDelay is the wait before ping n (0, 1, ...): first (pingFirst)
// doubled n times, at most pingMax.
func pingDelay(first time.Duration, n int) time.Duration {
	d := first
	for i := 0; i < n && d < pingMax; i++ {
		d *= 2
	}
	return min(d, pingMax)
}

// WaitReady waits for the agent's ready event and returns it. It pings the
// agent meanwhile (pingDelay), so a ready event lost before the host
// connected is repeated.
func (c *Client) WaitReady(ctx context.Context) (*Event, error) {
	pings := 0
	first := pingFirst
	if c.firstPing > 0 {
		first = c.firstPing
	}
	tick := time.NewTimer(pingDelay(first, pings))
	defer tick.Stop()
	var pinging sync.Mutex
	for {
		select {
		case <-c.ready:
			c.smu.Lock()
			defer c.smu.Unlock()
			ev := *c.readyEv
			return &ev, nil
		case <-c.done:
			select {
			case <-c.ready:
				continue
			default:
			}
			return nil, fmt.Errorf("wait for agent ready: %w%s", ErrClosed, c.lastSeen())
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for agent ready: %w%s", ctx.Err(), c.lastSeen())
		case <-tick.C:
			pings++
			tick.Reset(pingDelay(first, pings))
			if pinging.TryLock() {
				go func() {
					defer pinging.Unlock()
					c.wmu.Lock()
					defer c.wmu.Unlock()
					_, _ = c.w.Write([]byte(`{"op":"ping"}` + "\n"))
				}()
			}
		}
	}
}

// Do sends req (its ID is assigned), again each attempt (Attempt,
// SetAttempt) without its answer, and returns the matching event. An
// "error" event is returned as an *AgentError.
func (c *Client) Do(ctx context.Context, req Request) (*Event, error) {
	return c.DoRetry(ctx, req, c.attempt)
}

// SetAttempt sets Do's attempt (Attempt by default; 0 sends each request
// once). Call it before the first request.
func (c *Client) SetAttempt(d time.Duration) { c.attempt = d }

// DoRetry is Do that sends req again (its ID kept, marked Retry) each
// time attempt passes without its answer, until ctx ends: a request or
// reply lost on the port costs an attempt, not the caller's deadline. The
// agent does a request at most once however many copies it reads
// (Request.Retry). attempt 0 sends req once.
func (c *Client) DoRetry(ctx context.Context, req Request, attempt time.Duration) (*Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	req.ID = c.nextID
	// Drain stale replies of cancelled calls.
	for drained := false; !drained; {
		select {
		case <-c.events:
		default:
			drained = true
		}
	}
	if err := waitSent(ctx, req.Op, c.write(req)); err != nil {
		return nil, err
	}
	var again <-chan time.Time
	if attempt > 0 {
		t := time.NewTicker(attempt)
		defer t.Stop()
		again = t.C
	}
	var resending <-chan error // a copy being written: the reply may come meanwhile
	for sent := 1; ; {
		select {
		case ev := <-c.events:
			if ev.ID != req.ID {
				continue // a stale reply, or one to an earlier copy of a call's
			}
			if ev.Ev == EvError {
				return &ev, &AgentError{Op: req.Op, Msg: fault.Clip(ev.Msg), Unsupported: ev.Unsupported}
			}
			return &ev, nil
		case <-again:
			if resending == nil {
				req.Retry = true
				resending = c.write(req)
				sent++
			}
		case err := <-resending:
			resending = nil
			if err != nil {
				return nil, fmt.Errorf("agent %s: send again: %w", req.Op, err)
			}
		case <-c.done:
			return nil, fmt.Errorf("agent %s: %w%s", req.Op, ErrClosed, c.lastSeen())
		case <-ctx.Done():
			asked := ""
			if sent > 1 {
				asked = fmt.Sprintf(" (asked %d times)", sent)
			}
			return nil, fmt.Errorf("agent %s: no answer%s: %w%s", req.Op, asked, ctx.Err(), c.lastSeen())
		}
	}
}

// write writes req as one line in the background; the channel gets the
// write's error.
func (c *Client) write(req Request) <-chan error {
	werr := make(chan error, 1)
	b, err := json.Marshal(req)
	if err != nil {
		werr <- err
		return werr
	}
	go func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		_, err := c.w.Write(append(b, '\n'))
		werr <- err
	}()
	return werr
}

// waitSent waits for a write's result (write) until ctx ends.
func waitSent(ctx context.Context, op string, werr <-chan error) error {
	select {
	case err := <-werr:
		if err != nil {
			return fmt.Errorf("agent %s: send: %w", op, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agent %s: send: %w", op, ctx.Err())
	}
}

// AgentError is an error the agent reported for a request.
type AgentError struct {
	Op  string
	Msg string
	// Unsupported: the guest's kernel cannot do the op (Msg is the reason).
	Unsupported bool
}

func (e *AgentError) Error() string { return "agent " + e.Op + ": " + e.Msg }

// Stats asks for eth0's counters and the sink's per-flow counts, once:
// stats are idempotent, and the caller bounds each request and asks again
// itself (the runner decides from them that a guest stopped answering).
func (c *Client) Stats(ctx context.Context) (*Event, error) {
	return c.DoRetry(ctx, Request{Op: OpStats}, 0)
}

// Sink switches the guest's packet sink (SinkStack, SinkXDPDrop,
// SinkFlowCount); counters of the previous sink are discarded.
func (c *Client) Sink(ctx context.Context, kind string) error {
	_, err := c.Do(ctx, Request{Op: OpSink, Kind: kind})
	return err
}

// Poweroff asks the guest to power off; it returns once the agent has
// acknowledged (QEMU exits shortly after).
func (c *Client) Poweroff(ctx context.Context) error {
	_, err := c.Do(ctx, Request{Op: OpPoweroff})
	return err
}
