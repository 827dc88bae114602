package vsock

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// server is the vsock server that counts bytes: it accepts one stream
// connection from its peer's CID on its port and reads until the peer
// closes or stop, on one locked OS thread (its tid is the perf target).
type server struct {
	lfd  int
	port uint32
	peer uint32 // the CID it accepts (any when 0)
	quit atomic.Bool
	done chan struct{}
	tid  chan int

	mu    sync.Mutex
	count serverCount
	err   error
}

// listen binds the server on port (any local CID) and starts it.
func listen(port, peer uint32) (*server, error) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		return nil, errors.New("vsock server: this kernel has no AF_VSOCK (module vsock)")
	}
	if err != nil {
		return nil, fmt.Errorf("vsock server: socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: port}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("vsock server: port %d is in use here; choose another generator.vsock.port", port)
		}
		return nil, fmt.Errorf("vsock server: bind port %d: %w", port, err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("vsock server: listen: %w", err)
	}
	s := &server{lfd: fd, port: port, peer: peer, done: make(chan struct{}), tid: make(chan int, 1)}
	go s.run()
	return s, nil
}

func (s *server) run() {
	runtime.LockOSThread()
	defer close(s.done)
	defer unix.Close(s.lfd)
	s.tid <- unix.Gettid()
	cfd, err := s.accept()
	if err != nil {
		s.fail(err)
		return
	}
	defer unix.Close(cfd)
	c, err := countStream(cfd, &s.quit)
	s.mu.Lock()
	c.Peer = s.count.Peer
	s.count = c
	s.mu.Unlock()
	if err != nil {
		s.fail(err)
	}
}

// countStream reads fd until EOF, an error or quit, and counts: the first
// read's bytes apart, then the bytes of every later read, over the time
// from the end of the first read to the end of the last.
func countStream(fd int, quit *atomic.Bool) (c serverCount, err error) {
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	buf := make([]byte, 256<<10)
	var t0, t1 time.Time
	defer func() {
		if c.Reads > 1 {
			c.Seconds = t1.Sub(t0).Seconds()
		}
	}()
	for !quit.Load() {
		n, err := unix.Read(fd, buf)
		switch {
		case n > 0:
			now := time.Now()
			if c.Reads == 0 {
				c.First, t0 = uint64(n), now
			} else {
				c.Bytes += uint64(n)
				t1 = now
			}
			c.Reads++
		case err == nil: // EOF: the redirector closed
			return c, nil
		case err == unix.EAGAIN || err == unix.EINTR:
		default:
			return c, fmt.Errorf("vsock server: read: %w", err)
		}
	}
	return c, nil
}

// accept waits for the peer's connection (polling, so stop ends it).
func (s *server) accept() (int, error) {
	for !s.quit.Load() {
		fds := []unix.PollFd{{Fd: int32(s.lfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if err == unix.EINTR || n == 0 {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("vsock server: poll: %w", err)
		}
		cfd, sa, err := unix.Accept4(s.lfd, unix.SOCK_CLOEXEC)
		if err != nil {
			if err == unix.EAGAIN || err == unix.EINTR || err == unix.ECONNABORTED {
				continue
			}
			return -1, fmt.Errorf("vsock server: accept: %w", err)
		}
		vm, _ := sa.(*unix.SockaddrVM)
		if vm == nil || (s.peer != 0 && vm.CID != s.peer) {
			unix.Close(cfd) // not the guest this cell runs
			continue
		}
		s.mu.Lock()
		s.count.Peer = vm.CID
		s.mu.Unlock()
		return cfd, nil
	}
	return -1, errors.New("vsock server: stopped before the redirector connected")
}

func (s *server) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// thread returns the server's thread id once it runs.
func (s *server) thread() int {
	select {
	case t := <-s.tid:
		s.tid <- t
		return t
	case <-time.After(5 * time.Second):
		return 0
	}
}

// stop waits up to grace for the peer to close (the redirector's
// teardown), then stops reading, and returns the count.
func (s *server) stop(grace time.Duration) serverCount {
	select {
	case <-s.done:
	case <-time.After(grace):
	}
	s.quit.Store(true)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// errOf is the server's error (nil when it counted normally).
func (s *server) errOf() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
