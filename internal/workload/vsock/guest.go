package vsock

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vnetbench/vnetbench/internal/workload"
)

// agentOp is the guest agent op of the workload's guest side.
const agentOp = "vsock"

// RedirectPath is the unix datagram socket the redirector receives on in
// the guest (socat's UNIX-RECV, the sockmap redirector's bound socket).
const RedirectPath = "/run/vnb-vsock/redirect.sock"

// guestArgs is what the host asks the guest's side to run: the op's
// "start" arguments, as key=value strings.
type guestArgs struct {
	Redirector string
	Payload    int
	Threads    int
	Duration   time.Duration
	// PeerCID and Port are where the redirector connects: the host (2)
	// or this guest (1).
	PeerCID uint32
	Port    uint32
	// Server: start a counting server in the guest first (loopback).
	Server bool
}

func (a guestArgs) args() []string {
	return []string{"redirector=" + a.Redirector, "payload=" + strconv.Itoa(a.Payload),
		"threads=" + strconv.Itoa(a.Threads), "duration=" + a.Duration.String(),
		"cid=" + strconv.FormatUint(uint64(a.PeerCID), 10), "port=" + strconv.FormatUint(uint64(a.Port), 10),
		"server=" + strconv.FormatBool(a.Server)}
}

func parseGuestArgs(args []string) (guestArgs, error) {
	var a guestArgs
	seen := map[string]bool{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return a, fmt.Errorf("argument %q: want key=value", kv)
		}
		seen[k] = true
		var err error
		switch k {
		case "redirector":
			if v != Socat && v != Sockmap {
				err = fmt.Errorf("want %s or %s", Socat, Sockmap)
			}
			a.Redirector = v
		case "payload":
			a.Payload, err = strconv.Atoi(v)
			if err == nil && (a.Payload < 1 || a.Payload > MaxPayload) {
				err = fmt.Errorf("want 1 to %d bytes", MaxPayload)
			}
		case "threads":
			a.Threads, err = strconv.Atoi(v)
			if err == nil && (a.Threads < 1 || a.Threads > 64) {
				err = errors.New("want 1 to 64")
			}
		case "duration":
			a.Duration, err = time.ParseDuration(v)
			if err == nil && a.Duration <= 0 {
				err = errors.New("want a positive duration")
			}
		case "cid":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			a.PeerCID = uint32(n)
		case "port":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			a.Port = uint32(n)
		case "server":
			a.Server, err = strconv.ParseBool(v)
		default:
			err = errors.New("unknown key")
		}
		if err != nil {
			return a, fmt.Errorf("argument %s: %w", kv, err)
		}
	}
	for _, k := range []string{"redirector", "payload", "threads", "duration", "cid", "port"} {
		if !seen[k] {
			return a, fmt.Errorf("missing argument %s=", k)
		}
	}
	return a, nil
}

// guestResult is the guest side's reply to "stop" (JSON in the detail).
type guestResult struct {
	// SentBytes and SentDatagrams are the sender threads' totals over
	// SendSeconds (guest clock: the first thread's start to the last
	// thread's end).
	SentBytes     uint64  `json:"sent_bytes"`
	SentDatagrams uint64  `json:"sent_datagrams"`
	SendSeconds   float64 `json:"send_s"`
	// RedirectorCPU is the redirector process's CPU seconds (socat; 0 for
	// sockmap), KworkerCPU the guest's kworker threads', GuestBusy the
	// guest's busy CPU seconds (all CPUs), over the sender's run.
	RedirectorCPU float64 `json:"redirector_cpu_s"`
	KworkerCPU    float64 `json:"kworker_cpu_s"`
	GuestBusy     float64 `json:"guest_busy_s"`
	CPUs          int     `json:"cpus"`
	// CPUSource says how the CPU times were read ("schedstat" or "stat").
	CPUSource string `json:"cpu_source"`
	// Server is the loopback server's count (nil on virtio: the host
	// counts).
	Server *serverCount `json:"server,omitempty"`
	// Redirect describes the redirector (socat's argv, or the maps).
	Redirect string `json:"redirect"`
	// Log is the redirector's output (socat's stderr).
	Log      string   `json:"log,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// serverCount is what a vsock server counted: Bytes read after its first
// read, over Seconds from the end of the first read to the end of the
// last (its own clock); First is the first read's bytes.
type serverCount struct {
	Bytes   uint64  `json:"bytes"`
	First   uint64  `json:"first_bytes"`
	Reads   uint64  `json:"reads"`
	Seconds float64 `json:"interval_s"`
	Peer    uint32  `json:"peer_cid"`
}

// BPS is the server's bits per second over its interval (0 when it read
// fewer than two times).
func (c serverCount) BPS() float64 {
	if c.Seconds <= 0 {
		return 0
	}
	return float64(c.Bytes) * 8 / c.Seconds
}

// guestSide is the one run of the guest side at a time.
var guestSide struct {
	mu  sync.Mutex
	run *guestRun
}

// GuestOps: "vsock" start ARGS... | stop [now]. stop waits for the
// sender threads to end at their duration (guest clock), "stop now" ends
// them at once (the host was interrupted).
func (Workload) GuestOps() map[string]workload.GuestOp {
	return map[string]workload.GuestOp{agentOp: guestOp}
}

func guestOp(action string, args []string) (string, error) {
	guestSide.mu.Lock()
	defer guestSide.mu.Unlock()
	switch action {
	case "start":
		a, err := parseGuestArgs(args)
		if err != nil {
			return "", err
		}
		if guestSide.run != nil {
			// A run the host never stopped (it died): end it first.
			guestSide.run.stop(true)
			guestSide.run = nil
		}
		r, err := startGuest(a)
		if err != nil {
			return "", err
		}
		guestSide.run = r
		return fmt.Sprintf("%s redirecting %d-byte datagrams to CID %d port %d, %d sender threads for %v", a.Redirector, a.Payload, a.PeerCID, a.Port, a.Threads, a.Duration), nil
	case "stop":
		if guestSide.run == nil {
			return "", errors.New("nothing started")
		}
		now := len(args) == 1 && args[0] == "now"
		if len(args) > 0 && !now {
			return "", fmt.Errorf("stop %q: want no argument, or now", args)
		}
		res, err := guestSide.run.stop(now)
		guestSide.run = nil
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(res)
		return string(b), err
	}
	return "", fmt.Errorf("unknown action %q: want start or stop", action)
}
