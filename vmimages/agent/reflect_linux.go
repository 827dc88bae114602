package agent

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Reflector is the guest side of the latency probe: a UDP socket that
// sends every datagram back to its sender unchanged. It serves op
// vmimages.OpReflect: action "start" with the port as the one argument,
// "stop" (its detail: "reflected N").
//
// It reads on a blocking socket from a thread of its own (a locked
// goroutine), not through Go's netpoller: a reply leaves as soon as the
// kernel wakes the reader, with no runtime scheduling between the two.
type Reflector struct {
	mu      sync.Mutex
	fd      int
	port    int
	stop    atomic.Bool
	done    chan struct{}
	replies atomic.Uint64
}

// NewReflector returns a stopped reflector.
func NewReflector() *Reflector { return &Reflector{fd: -1} }

// Op is the reflector's agent op.
func (r *Reflector) Op(action string, args []string) (string, error) {
	switch action {
	case "start":
		if len(args) != 1 {
			return "", fmt.Errorf("start takes the UDP port, got %d arguments", len(args))
		}
		port, err := strconv.Atoi(args[0])
		if err != nil || port < 1 || port > 65535 {
			return "", fmt.Errorf("bad port %q: want 1..65535", args[0])
		}
		return "", r.Start(port)
	case "stop":
		n := r.Stop()
		return "reflected " + strconv.FormatUint(n, 10), nil
	}
	return "", fmt.Errorf("unknown action %q: want start or stop", action)
}

// Start binds the port on every address and starts reflecting. A second
// Start on the same port is a no-op; on another port it is an error.
func (r *Reflector) Start(port int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd >= 0 {
		if r.port == port {
			return nil
		}
		return fmt.Errorf("already reflecting on port %d; stop it first", r.port)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("udp socket: %w", err)
	}
	// The read times out every 100 ms so a stop is seen without closing
	// the socket under a blocked reader.
	tv := unix.Timeval{Usec: 100_000}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return fmt.Errorf("udp socket: SO_RCVTIMEO: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("bind udp port %d: %w", port, err)
	}
	r.fd, r.port = fd, port
	r.stop.Store(false)
	r.replies.Store(0)
	r.done = make(chan struct{})
	go r.loop(fd, r.done)
	return nil
}

func (r *Reflector) loop(fd int, done chan struct{}) {
	runtime.LockOSThread()
	defer close(done)
	buf := make([]byte, 65536)
	for !r.stop.Load() {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if unix.Sendto(fd, buf[:n], 0, from) == nil {
			r.replies.Add(1)
		}
	}
}

// Stop stops reflecting, closes the socket and returns the replies sent.
// Stopping a stopped reflector returns 0.
func (r *Reflector) Stop() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return 0
	}
	r.stop.Store(true)
	<-r.done
	unix.Close(r.fd)
	r.fd = -1
	return r.replies.Load()
}
