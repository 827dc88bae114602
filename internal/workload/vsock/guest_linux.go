package vsock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/proc"
)

// socatPaths are where the guest image puts socat (vmimages: /usr/bin/NAME)
// before PATH is searched.
var socatPaths = []string{"/usr/bin/socat"}

// guestRun is the guest side of one window: a loopback server (or none),
// the redirector and the sender threads.
type guestRun struct {
	a      guestArgs
	server *server
	redir  redirector
	send   *sender
	cpu0   cpuSnapshot
}

// redirector forwards the unix socket's datagrams to vsock.
type redirector interface {
	// pid is the redirector's process (0 = none: the kernel redirects).
	pid() int
	describe() string
	// close stops it and returns its output.
	close() (log string, err error)
}

// startGuest starts the loopback server (when asked), the redirector,
// then the senders. On failure it undoes what it started.
func startGuest(a guestArgs) (_ *guestRun, err error) {
	r := &guestRun{a: a}
	defer func() {
		if err != nil {
			r.teardown()
		}
	}()
	if a.Server {
		if r.server, err = listen(a.Port, cidLocal); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(RedirectPath), 0o755); err != nil {
		return nil, err
	}
	os.Remove(RedirectPath)
	switch a.Redirector {
	case Socat:
		r.redir, err = startSocat(a)
	case Sockmap:
		r.redir, err = startSockmap(a)
	}
	if err != nil {
		return nil, err
	}
	r.cpu0 = takeCPU(procRoot, r.redir.pid())
	if r.send, err = startSender(RedirectPath, a.Payload, a.Threads, a.Duration, drainWait, r.redir.pid()); err != nil {
		return nil, err
	}
	return r, nil
}

// stop waits for the senders to end at their duration (now: ends them at
// once), reads the CPU counters, then tears the redirector and server
// down.
func (r *guestRun) stop(now bool) (*guestResult, error) {
	if !now {
		r.send.wait(r.a.Duration + 5*time.Second)
	}
	st, serr := r.send.stop()
	cpu1 := r.send.endCPU
	if cpu1 == nil { // no sender thread ran
		c := takeCPU(procRoot, r.redir.pid())
		cpu1 = &c
	}
	res := &guestResult{SentBytes: st.bytes, SentDatagrams: st.datagrams, SendSeconds: st.elapsed.Seconds(),
		Redirect: r.redir.describe(), CPUs: runtime.NumCPU()}
	res.RedirectorCPU, res.KworkerCPU, res.GuestBusy, res.CPUSource = cpu1.since(r.cpu0)
	log, rerr := r.redir.close()
	r.redir = nil
	res.Log = log
	if r.server != nil {
		c := r.server.stop(2 * time.Second)
		r.server = nil
		res.Server = &c
	}
	r.teardown()
	if serr != nil {
		return nil, serr
	}
	if rerr != nil {
		res.Warnings = append(res.Warnings, "redirector: "+rerr.Error())
	}
	return res, nil
}

// teardown releases what is still held (error paths).
func (r *guestRun) teardown() {
	if r.send != nil {
		r.send.stop()
	}
	if r.redir != nil {
		r.redir.close()
		r.redir = nil
	}
	if r.server != nil {
		r.server.stop(0)
		r.server = nil
	}
	os.Remove(RedirectPath)
}

// ---- socat ----

type socat struct {
	cmd  *exec.Cmd
	argv []string
	out  bytes.Buffer
	done chan struct{}
	werr error
}

// SocatArgs is the socat redirector's command line: the series' `socat
// VSOCK-CONNECT:2:1234 UNIX-RECV:PATH`, with -b PAYLOAD. socat's default
// 8192-byte buffer truncates each longer datagram it receives to 8192
// bytes (measured: a 65536-byte datagram arrives as 8192), so without -b
// a 64 KiB payload would forward an eighth of the bytes.
func SocatArgs(bin string, payload int, cid, port uint32, path string) []string {
	return []string{bin, "-b", strconv.Itoa(payload),
		"VSOCK-CONNECT:" + strconv.FormatUint(uint64(cid), 10) + ":" + strconv.FormatUint(uint64(port), 10),
		"UNIX-RECV:" + path}
}

func socatBinary() (string, error) {
	for _, p := range socatPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("socat")
	if err != nil {
		return "", errors.New("socat is not in the guest image: the image carries it when a cell's redirector is socat (install socat on the host)")
	}
	return p, nil
}

// socatReadyWait is how long socat gets to connect and bind its socket.
const socatReadyWait = 60 * time.Second

func startSocat(a guestArgs) (redirector, error) {
	bin, err := socatBinary()
	if err != nil {
		return nil, err
	}
	s := &socat{argv: SocatArgs(bin, a.Payload, a.PeerCID, a.Port, RedirectPath), done: make(chan struct{})}
	s.cmd = exec.Command(s.argv[0], s.argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := proc.StartCmd(s.cmd); err != nil {
		return nil, fmt.Errorf("start socat: %w", err)
	}
	go func() { s.werr = s.cmd.Wait(); close(s.done) }()
	// socat connects to the server, then binds the unix socket: ready
	// when the socket exists. In a nested guest under TCG (lab mode
	// without KVM) socat's start alone took more than 10 s.
	deadline := time.Now().Add(socatReadyWait)
	for {
		if fi, err := os.Stat(RedirectPath); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("socat exited at start (%v): %s", s.werr, lastLines(s.out.String(), 3))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.close()
			return nil, fmt.Errorf("socat did not create %s within %v: %s", RedirectPath, socatReadyWait, lastLines(s.out.String(), 3))
		}
	}
}

func (s *socat) pid() int         { return s.cmd.Process.Pid }
func (s *socat) describe() string { return proc.Quote(s.argv) }

func (s *socat) close() (string, error) {
	select {
	case <-s.done:
		return s.out.String(), fmt.Errorf("socat exited during the run: %v", s.werr)
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	return s.out.String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// ---- sender ----

type senderStats struct {
	bytes, datagrams uint64
	elapsed          time.Duration
}

// sender is the unix datagram sender: threads each with a socket
// connected to the redirector's path, writing payload-byte datagrams
// until the duration ends or stop.
type sender struct {
	quit    atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	bytes   atomic.Uint64
	grams   atomic.Uint64
	start   time.Time
	end     time.Time
	running int
	// endCPU is the CPU snapshot the last thread takes when it ends, of
	// the redirector's process pid (0 = none).
	endCPU *cpuSnapshot
	pid    int
	drain  time.Duration // the wait for a socket to empty at its end
}

// startSender starts threads sending payload-byte datagrams to path for
// d; each waits at most drain (drainWait) at its end for its socket to
// empty.
func startSender(path string, payload, threads int, d, drain time.Duration, redirectorPid int) (*sender, error) {
	s := &sender{pid: redirectorPid, drain: drain}
	fds := make([]int, 0, threads)
	for range threads {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("sender socket: %w", err)
		}
		fds = append(fds, fd)
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("sender: connect to %s: %w", path, err)
		}
		// A bounded blocking send, so a stop is seen while the
		// redirector is not reading.
		tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
		sndbuf, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err == nil && payload > sndbuf-32 {
			closeAll(fds)
			return nil, fmt.Errorf("payload %d bytes is over the largest unix datagram this guest sends: %d bytes (its send buffer, net.core.wmem_default %d, minus 32); lower generator.vsock.payload", payload, sndbuf-32, sndbuf)
		}
	}
	buf := make([]byte, payload)
	for i := range buf {
		buf[i] = byte(i)
	}
	s.start = time.Now()
	deadline := s.start.Add(d)
	s.running = threads
	for _, fd := range fds {
		s.wg.Add(1)
		go s.loop(fd, buf, deadline)
	}
	return s, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func (s *sender) loop(fd int, buf []byte, deadline time.Time) {
	runtime.LockOSThread()
	defer s.wg.Done()
	// Runs after the end time and CPU snapshot below: the drain is not
	// sending time.
	defer func() {
		waitUnsent(fd, s.drain)
		unix.Close(fd)
	}()
	var sent, grams uint64
	defer func() {
		s.bytes.Add(sent)
		s.grams.Add(grams)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running--
		if s.running == 0 {
			s.end = time.Now()
			c := takeCPU(procRoot, s.pid)
			s.endCPU = &c
		}
	}()
	for !s.quit.Load() && time.Now().Before(deadline) {
		n, err := unix.Write(fd, buf)
		switch {
		case err == nil:
			sent += uint64(n)
			grams++
		case err == unix.EAGAIN || err == unix.EINTR || err == unix.ENOBUFS:
			// the redirector is behind (send timeout) or memory is short
		default:
			if err == unix.EMSGSIZE {
				err = fmt.Errorf("payload %d bytes is over this guest's unix datagram limit (EMSGSIZE); lower generator.vsock.payload", len(buf))
			}
			s.mu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("sender: write: %w", err)
			}
			s.mu.Unlock()
			return
		}
	}
}

// drainWait bounds how long a sender socket (at its end) and the sockmap
// redirector's target (before it is taken out of its map) wait for what
// they hold to leave: a nested guest under TCG moves a 64 KiB datagram
// through the redirector in tens of milliseconds, and stop's caller
// allows 30 s.
const drainWait = 10 * time.Second

// waitUnsent waits up to d until the socket fd holds no unsent bytes
// (SIOCOUTQ: for a unix datagram socket its datagrams not yet consumed by
// the receiver or freed by the redirecting psock; for a vsock stream
// socket what its transport has not yet sent). It returns the bytes still
// held (0 also when the socket cannot tell).
func waitUnsent(fd int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		n, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
		if err != nil || n <= 0 {
			return 0
		}
		if time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wait waits up to d for the threads to end on their own.
func (s *sender) wait(d time.Duration) {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// stop ends the threads and returns their totals.
func (s *sender) stop() (senderStats, error) {
	s.quit.Store(true)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return senderStats{bytes: s.bytes.Load(), datagrams: s.grams.Load(), elapsed: s.end.Sub(s.start)}, s.err
}
