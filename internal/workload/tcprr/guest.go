package tcprr

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/workload"
)

// agentOp is the guest op of the workload's servers.
const agentOp = "tcp_rr"

// GuestOps: "tcp_rr" with action "start PORT" (an echo server on PORT
// and a discard server on PORT+1, listening when the reply comes),
// "bulk" (detail "bytes N": what the discard server received so far) and
// "stop" (detail "echoed N bytes M": the echo server's and the discard
// server's byte counts).
func (Workload) GuestOps() map[string]workload.GuestOp {
	return map[string]workload.GuestOp{agentOp: guestServer.op}
}

// guestServer is the agent's (one per guest).
var guestServer = &Server{}

// Server is the guest side: an echo server that writes back whatever it
// reads, and a discard server that counts what it reads, each connection
// on a locked thread with blocking system calls.
type Server struct {
	mu        sync.Mutex
	listeners []int
	stop      atomic.Bool
	wg        sync.WaitGroup
	echoed    atomic.Uint64
	discarded atomic.Uint64
}

func (s *Server) op(action string, args []string) (string, error) {
	switch action {
	case "start":
		if len(args) != 1 {
			return "", fmt.Errorf("tcp_rr start takes the echo server's port, got %d arguments", len(args))
		}
		port, err := strconv.Atoi(args[0])
		if err != nil || port < 1 || port > 65534 {
			return "", fmt.Errorf("tcp_rr start: bad port %q: want 1..65534", args[0])
		}
		return "", s.Start(port)
	case "bulk":
		return "bytes " + strconv.FormatUint(s.discarded.Load(), 10), nil
	case "stop":
		e, d := s.Stop()
		return fmt.Sprintf("echoed %d bytes %d", e, d), nil
	}
	return "", fmt.Errorf("tcp_rr: action %q: want start, bulk or stop", action)
}

// Start listens on port (echo) and port+1 (discard) in the calling
// thread's namespace. A second Start without Stop is an error.
func (s *Server) Start(port int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) > 0 {
		return errors.New("tcp_rr start: already running; stop it first")
	}
	s.stop.Store(false)
	s.echoed.Store(0)
	s.discarded.Store(0)
	for i, serve := range []func(int){s.echo, s.discard} {
		fd, err := listen(port + i)
		if err != nil {
			s.stopLocked()
			return fmt.Errorf("tcp_rr start: %w", err)
		}
		s.listeners = append(s.listeners, fd)
		s.wg.Add(1)
		go s.accept(fd, serve)
	}
	return nil
}

// accept serves each connection of listener fd on its own locked
// goroutine until stopped.
func (s *Server) accept(fd int, serve func(int)) {
	defer s.wg.Done()
	for !s.stop.Load() {
		c, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
		if err != nil {
			if retry(err) || errors.Is(err, unix.ECONNABORTED) {
				continue
			}
			return
		}
		if setTimeouts(c) != nil || unix.SetsockoptInt(c, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) != nil {
			unix.Close(c)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer unix.Close(c)
			runtime.LockOSThread()
			serve(c)
		}()
	}
}

// echo writes back what it reads until the peer closes or a stop.
func (s *Server) echo(fd int) {
	buf := make([]byte, 65536)
	for !s.stop.Load() {
		n, err := unix.Read(fd, buf)
		if err != nil && retry(err) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		if writeAll(fd, buf[:n], &s.stop) != nil {
			return
		}
		s.echoed.Add(uint64(n))
	}
}

// discard counts what it reads until the peer closes or a stop.
func (s *Server) discard(fd int) {
	buf := make([]byte, 1<<18)
	for !s.stop.Load() {
		n, err := unix.Read(fd, buf)
		if err != nil && retry(err) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		s.discarded.Add(uint64(n))
	}
}

// Stop ends the servers and their connections (within a tick) and
// returns the bytes echoed and discarded. Stopping a stopped server
// returns zeros.
func (s *Server) Stop() (echoed, discarded uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return 0, 0
	}
	s.stopLocked()
	return s.echoed.Load(), s.discarded.Load()
}

func (s *Server) stopLocked() {
	s.stop.Store(true)
	s.wg.Wait()
	for _, fd := range s.listeners {
		unix.Close(fd)
	}
	s.listeners = nil
}
