package tcprr

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Every socket here is blocking and used from one locked thread, with
// system calls, not Go's poller: a reply is written as soon as the kernel
// wakes the reader. Reads and writes time out every tick so a stop flag
// is seen without closing a socket under a blocked thread.
const tick = 100 * time.Millisecond

// setTimeouts sets SO_RCVTIMEO and SO_SNDTIMEO to tick.
func setTimeouts(fd int) error {
	tv := unix.NsecToTimeval(tick.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_SNDTIMEO: %w", err)
	}
	return nil
}

// listen opens a TCP listener on port on every IPv4 address of the
// calling thread's namespace.
func listen(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("tcp socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind tcp port %d: %w", port, err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen on tcp port %d: %w", port, err)
	}
	if err := setTimeouts(fd); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// dial connects to dst from the calling thread's namespace within
// timeout and returns a blocking socket with TCP_NODELAY.
func dial(dst netip.AddrPort, timeout time.Duration) (int, error) {
	if !dst.Addr().Is4() {
		return -1, fmt.Errorf("tcp_rr: %s is not an IPv4 address", dst.Addr())
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("tcp socket: %w", err)
	}
	fail := func(err error) (int, error) {
		unix.Close(fd)
		return -1, err
	}
	sa := &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}
	if err := unix.Connect(fd, sa); err != nil && !errors.Is(err, unix.EINPROGRESS) {
		return fail(fmt.Errorf("connect to %s: %w", dst, err))
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for end := time.Now().Add(timeout); ; {
		left := time.Until(end)
		if left <= 0 {
			return fail(fmt.Errorf("connect to %s: no answer within %v", dst, timeout))
		}
		n, err := unix.Poll(pfd, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("connect to %s: poll: %w", dst, err))
		}
		if n > 0 {
			break
		}
	}
	if soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soErr != 0 {
		if err == nil {
			err = unix.Errno(soErr)
		}
		return fail(fmt.Errorf("connect to %s: %w", dst, err))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return fail(err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return fail(fmt.Errorf("TCP_NODELAY: %w", err))
	}
	if err := setTimeouts(fd); err != nil {
		return fail(err)
	}
	return fd, nil
}

// errStopped is returned by the loops when their stop flag is set.
var errStopped = errors.New("stopped")

// retry reports whether err is a tick's timeout or an interrupted call.
func retry(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)
}

// readFull reads len(buf) bytes from fd.
func readFull(fd int, buf []byte, stop *atomic.Bool) error { return whole(unix.Read, fd, buf, stop) }

// writeAll writes buf to fd.
func writeAll(fd int, buf []byte, stop *atomic.Bool) error { return whole(unix.Write, fd, buf, stop) }

// whole calls rw (unix.Read or unix.Write) on fd until all of buf is
// done, through a tick's timeouts and interrupted calls, and returns
// errStopped when stop is set at one. No progress without an error is
// the peer's end of the connection (a read of 0 bytes).
func whole(rw func(int, []byte) (int, error), fd int, buf []byte, stop *atomic.Bool) error {
	for done := 0; done < len(buf); {
		n, err := rw(fd, buf[done:])
		switch {
		case err != nil && retry(err):
			if stop.Load() {
				return errStopped
			}
		case err != nil:
			return err
		case n == 0:
			return errors.New("connection closed by the peer")
		default:
			done += n
		}
	}
	return nil
}
