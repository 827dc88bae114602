// Package agent is the guest side of vnetbench: the program that runs as
// /init (PID 1) in the guest's initramfs. It mounts proc, sys and dev,
// loads the image's modules in dependency order (finit_module), configures
// eth0 from vnb.* kernel parameters via netlink, then answers the host's
// requests (vmimages protocol) on the virtio-serial port
// vmimages.AgentPortName, or on the serial console when that port is
// missing. Sinks: the kernel stack, an XDP program that drops and counts
// (assembled with cilium/ebpf's asm, no clang), and a per-UDP-source-port
// counter on an AF_PACKET socket decoded with gopacket/layers. Any fatal error is printed on the console and the
// guest powers off: the agent never hangs the boot.
//
// It does not build images (package vmimages does) and has no host-side
// code. The AF_PACKET socket is opened with x/sys/unix rather than
// gopacket/afpacket, because afpacket needs cgo and the agent is a static
// CGO_ENABLED=0 binary.
package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vnetbench/vnetbench/vmimages"
)

// System is what the protocol server asks of the guest. The real one is
// Linux-specific; tests use a fake.
type System interface {
	Stats() (*vmimages.Event, error)
	Sink(kind string) (detail string, err error)
	// Poweroff is called after the "ok" reply has been written.
	Poweroff()
}

// maxLine bounds a request line; longer lines are answered with an error.
const maxLine = 64 << 10

// Server answers protocol requests with a System.
type Server struct {
	Sys   System
	Ready vmimages.Event // the ready event (sent first, and in reply to ping)
	// Ops are further ops by name: the guest sides of workloads (a vsock
	// sender, say). One answers {"op":NAME,"action":...,"args":[...]} with
	// "ok" (its detail in msg) or "error"; it must return promptly
	// (long-running work goes on in the background until a stop action).
	// An error with a NotSupported() string method (workload's
	// UnsupportedError) is an error event marked unsupported, its msg the
	// reason alone.
	Ops map[string]Op

	// last is the request handled last on this connection and its reply,
	// for a retry of it (Request.Retry); Serve starts each connection
	// without one (the client numbers requests from 1 on each).
	last handled
}

// handled is a request and the reply it got.
type handled struct {
	req vmimages.Request
	ev  vmimages.Event
}

// notSupported is an op error saying the guest's kernel cannot do it.
type notSupported interface{ NotSupported() string }

// Op is an op a workload adds to the agent: it runs in the guest.
type Op func(action string, args []string) (detail string, err error)

// opNames lists the ops s answers, for messages.
func (s *Server) opNames() string {
	names := []string{vmimages.OpStats, vmimages.OpSink, vmimages.OpPoweroff, vmimages.OpPing}
	extra := make([]string, 0, len(s.Ops))
	for n := range s.Ops {
		extra = append(extra, n)
	}
	sort.Strings(extra)
	return strings.Join(append(names, extra...), ", ")
}

// Serve writes the ready event (when sendReady), then answers requests read
// from rw until rw ends (io.EOF is returned as nil) or ctx is done. Every
// line gets exactly one reply event; malformed lines and unknown ops get an
// "error" event and serving continues.
func (s *Server) Serve(ctx context.Context, rw io.ReadWriter, sendReady bool) error {
	s.last = handled{}
	var wmu sync.Mutex
	send := func(ev vmimages.Event) error {
		b, err := vmimages.EncodeEvent(ev)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, err = rw.Write(b)
		return err
	}
	if sendReady {
		ready := s.Ready
		ready.Ev = vmimages.EvReady
		if err := send(ready); err != nil {
			return fmt.Errorf("send ready: %w", err)
		}
	}
	br := bufio.NewReaderSize(rw, 4096)
	for ctx.Err() == nil {
		line, tooLong, err := readLine(br)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if tooLong {
			if err := send(vmimages.Event{Ev: vmimages.EvError, Msg: fmt.Sprintf("request line longer than %d bytes", maxLine)}); err != nil {
				return err
			}
			continue
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ev, after := s.Handle(line)
		if err := send(ev); err != nil {
			return err
		}
		if after != nil {
			after()
		}
	}
	return ctx.Err()
}

func readLine(br *bufio.Reader) (string, bool, error) {
	var sb strings.Builder
	total := 0
	for {
		frag, err := br.ReadSlice('\n')
		total += len(frag)
		if total <= maxLine {
			sb.Write(frag)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (err != io.EOF || total == 0) {
			return "", false, err
		}
		return sb.String(), total > maxLine, nil
	}
}

// Handle answers one request line. The returned function (may be nil) runs
// after the reply was sent (poweroff). A retry of the request handled last
// (same ID and request) gets its reply again, and the request is not done
// twice. A request numbered below the last one handled is a copy the
// client gave up on that arrived late (the client numbers its requests in
// order on a connection): it is refused, not done after its successor.
// One goroutine at a time calls Handle (Serve).
func (s *Server) Handle(line string) (vmimages.Event, func()) {
	var req vmimages.Request
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return errEv(0, "malformed request %q: %v (want one JSON object per line, e.g. {\"op\":\"stats\"})", clip(line), err), nil
	}
	if dec.More() {
		return errEv(req.ID, "malformed request %q: trailing data after the JSON object", clip(line)), nil
	}
	retry := req.Retry
	req.Retry = false
	if retry && req.ID != 0 && sameRequest(req, s.last.req) {
		return s.last.ev, nil
	}
	if req.ID != 0 && req.ID < s.last.req.ID {
		return errEv(req.ID, "%s %s: a late copy of request %d, which request %d came after: not done", req.Op, req.Action, req.ID, s.last.req.ID), nil
	}
	ev, after := s.answer(req)
	if req.ID != 0 {
		s.last.req, s.last.ev = req, ev
	}
	return ev, after
}

// sameRequest: a and b are the same request (ID and all).
func sameRequest(a, b vmimages.Request) bool {
	return a.ID == b.ID && a.Op == b.Op && a.Action == b.Action && a.Kind == b.Kind && slices.Equal(a.Args, b.Args)
}

// answer does req and returns its reply.
func (s *Server) answer(req vmimages.Request) (vmimages.Event, func()) {
	sys := s.Sys
	switch req.Op {
	case vmimages.OpStats:
		ev, err := sys.Stats()
		if err != nil {
			return errEv(req.ID, "stats: %v", err), nil
		}
		ev.Ev, ev.ID = vmimages.EvStats, req.ID
		return *ev, nil
	case vmimages.OpSink:
		switch req.Kind {
		case vmimages.SinkStack, vmimages.SinkXDPDrop, vmimages.SinkFlowCount:
		default:
			return errEv(req.ID, "sink: unknown kind %q: want %s, %s or %s", req.Kind, vmimages.SinkStack, vmimages.SinkXDPDrop, vmimages.SinkFlowCount), nil
		}
		detail, err := sys.Sink(req.Kind)
		if err != nil {
			return errEv(req.ID, "sink %s: %v", req.Kind, err), nil
		}
		return vmimages.Event{Ev: vmimages.EvOK, ID: req.ID, Msg: detail}, nil
	case vmimages.OpPoweroff:
		return vmimages.Event{Ev: vmimages.EvOK, ID: req.ID}, sys.Poweroff
	case vmimages.OpPing:
		ev := s.Ready
		ev.Ev, ev.ID = vmimages.EvReady, req.ID
		return ev, nil
	case "":
		return errEv(req.ID, "request without op: want one of %s", s.opNames()), nil
	}
	if op, ok := s.Ops[req.Op]; ok {
		detail, err := runOp(op, req.Action, req.Args)
		var ns notSupported
		if errors.As(err, &ns) {
			return vmimages.Event{Ev: vmimages.EvError, ID: req.ID, Msg: ns.NotSupported(), Unsupported: true}, nil
		}
		if err != nil {
			return errEv(req.ID, "%s %s: %v", req.Op, req.Action, err), nil
		}
		return vmimages.Event{Ev: vmimages.EvOK, ID: req.ID, Msg: detail}, nil
	}
	return errEv(req.ID, "unknown op %q: want one of %s", req.Op, s.opNames()), nil
}

// runOp runs a workload's op; a panic in it is its error, not the end of
// the agent (PID 1: the guest would power off).
func runOp(op Op, action string, args []string) (detail string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return op(action, args)
}

func errEv(id uint64, format string, a ...any) vmimages.Event {
	return vmimages.Event{Ev: vmimages.EvError, ID: id, Msg: fmt.Sprintf(format, a...)}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
