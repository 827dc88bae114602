package vsock

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
)

// The op's arguments survive the trip through the agent protocol; bad
// ones are refused with the argument named.
func TestGuestArgs(t *testing.T) {
	a := guestArgs{Redirector: Sockmap, Payload: 65536, Threads: 2, Duration: 1500 * time.Millisecond, PeerCID: 2, Port: 1234}
	got, err := parseGuestArgs(a.args())
	if err != nil || got != a {
		t.Errorf("round trip %+v, %v; want %+v", got, err, a)
	}
	for args, want := range map[string]string{
		"redirector=nc":              "argument redirector=nc: want socat or sockmap",
		"payload=212961":             "argument payload=212961: want 1 to 212960 bytes",
		"threads=0":                  "argument threads=0: want 1 to 64",
		"duration=-1s":               "argument duration=-1s: want a positive duration",
		"port=x":                     `argument port=x: strconv.ParseUint: parsing "x": invalid syntax`,
		"frob=1":                     "argument frob=1: unknown key",
		"redirector":                 `argument "redirector": want key=value`,
		"redirector=socat payload=1": "missing argument threads=",
	} {
		if _, err := parseGuestArgs(strings.Fields(args)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", args, err, want)
		}
	}
	if _, err := guestOp("stop", nil); err == nil || err.Error() != "nothing started" {
		t.Errorf("stop before start: %v", err)
	}
	if _, err := guestOp("jump", nil); err == nil || !strings.Contains(err.Error(), "want start or stop") {
		t.Errorf("unknown action: %v", err)
	}
}

// socat's command line is the series' with -b: without it socat's
// 8192-byte buffer truncates every longer datagram.
func TestSocatArgs(t *testing.T) {
	got := proc.Quote(SocatArgs("/usr/bin/socat", 65536, 2, 1234, RedirectPath))
	golden.Check(t, "socat-argv.golden", got+"\n")
}

// unixBound returns a unix datagram socket bound at path (what the sender
// connects to).
func unixBound(t *testing.T, path string) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	return fd
}

// drain reads datagrams from fd until stop is closed and then nothing has
// arrived for quiet: a writer stalled on a loaded machine (go test -race
// beside lab VMs) never ends it early, which would leave the writer's
// data queued and its test failing for the reader's sake.
func drain(fd int, stop <-chan struct{}, quiet time.Duration) (bytes, grams, largest int) {
	tv := unix.NsecToTimeval(quiet.Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	buf := make([]byte, 1<<20)
	for {
		n, ok := recvUntil(fd, buf, stop)
		if !ok {
			return
		}
		bytes += n
		grams++
		largest = max(largest, n)
	}
}

// recvUntil receives one datagram from fd (whose SO_RCVTIMEO is set),
// waiting through receive timeouts until stop is closed; ok is false at
// stop or on an error.
func recvUntil(fd int, buf []byte, stop <-chan struct{}) (n int, ok bool) {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			select {
			case <-stop:
				return 0, false
			default:
				continue
			}
		}
		return n, err == nil
	}
}

// The sender's threads write whole datagrams for the duration and count
// what the kernel took; a receiver gets exactly that.
func TestSender(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.sock")
	rfd := unixBound(t, path)
	defer unix.Close(rfd)
	type got struct{ bytes, grams, largest int }
	ch := make(chan got, 1)
	stop := make(chan struct{})
	go func() {
		b, g, l := drain(rfd, stop, 500*time.Millisecond)
		ch <- got{b, g, l}
	}()
	s, err := startSender(path, 4096, 2, 300*time.Millisecond, drainWait, 0)
	if err != nil {
		close(stop)
		t.Fatal(err)
	}
	s.wait(5 * time.Second)
	st, err := s.stop()
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if st.bytes == 0 || st.bytes != uint64(r.bytes) || st.datagrams != uint64(r.grams) || r.largest != 4096 || st.bytes != st.datagrams*4096 {
		t.Errorf("sender %+v, receiver %+v", st, r)
	}
	if st.elapsed < 250*time.Millisecond || st.elapsed > 3*time.Second {
		t.Errorf("sender ran %v, want about 300ms", st.elapsed)
	}
	if s.endCPU == nil {
		t.Error("the last thread took no CPU snapshot")
	}
}

// A payload over the socket's send buffer minus 32 is refused before
// sending, with the limit in the message.
func TestSenderPayloadLimit(t *testing.T) {
	const drain = 100 * time.Millisecond // nobody reads here
	path := filepath.Join(t.TempDir(), "r.sock")
	rfd := unixBound(t, path)
	defer unix.Close(rfd)
	sndbuf := 0
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0); err == nil {
		sndbuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		unix.Close(fd)
	}
	_, err := startSender(path, sndbuf-31, 1, time.Second, drain, 0)
	if err == nil || !strings.Contains(err.Error(), "is over the largest unix datagram this guest sends") || !strings.Contains(err.Error(), "lower generator.vsock.payload") {
		t.Errorf("payload %d: %v", sndbuf-31, err)
	}
	s, err := startSender(path, sndbuf-32, 1, 50*time.Millisecond, drain, 0)
	if err != nil {
		t.Fatalf("payload %d (the limit): %v", sndbuf-32, err)
	}
	s.wait(time.Second)
	if st, err := s.stop(); err != nil || st.datagrams == 0 {
		t.Errorf("payload at the limit: %+v, %v", st, err)
	}
}

// The server's count: the first read apart, then every byte over the time
// from the end of the first read to the end of the last; EOF ends it.
func TestCountStream(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	go func() {
		defer unix.Close(fds[1])
		chunk := make([]byte, 1000)
		for i := 0; i < 5; i++ {
			unix.Write(fds[1], chunk)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	var quit atomic.Bool
	c, err := countStream(fds[0], &quit)
	if err != nil {
		t.Fatal(err)
	}
	if c.First != 1000 || c.Bytes != 4000 || c.Reads != 5 || c.Seconds < 0.15 || c.Seconds > 2 {
		t.Errorf("count %+v", c)
	}
	if bps := c.BPS(); bps != 4000*8/c.Seconds {
		t.Errorf("bps %v", bps)
	}
	if (serverCount{Bytes: 5, Reads: 1}).BPS() != 0 {
		t.Error("one read has no interval")
	}
}

// needSockmap skips (or fails under CI) where the running kernel cannot
// put a unix datagram socket in a SOCKMAP.
func needSockmap(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, "BPF maps and programs")
	if err := rlimit.RemoveMemlock(); err != nil {
		testenv.Skipf(t, "memlock: %v", err)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.SockMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		testenv.Skipf(t, "this kernel cannot create a SOCKMAP: %v", err)
	}
	m.Close()
}

// The sockmap redirector's program, maps and attach order, on the running
// kernel with unix sockets (no vsock here): datagrams sent to the bound
// unix socket leave by the egress of the target socket (a unix datagram
// socket connected to a receiver), whole and in full; user space never
// reads them.
func TestSockmapRedirectUnix(t *testing.T) {
	needSockmap(t)
	dir := t.TempDir()
	in := unixBound(t, filepath.Join(dir, "in.sock"))
	recv := unixBound(t, filepath.Join(dir, "recv.sock"))
	defer unix.Close(recv)
	target, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(target, &unix.SockaddrUnix{Name: filepath.Join(dir, "recv.sock")}); err != nil {
		t.Fatal(err)
	}
	r, err := newSockmapRedirect(in, target, "a unix socket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	type got struct{ bytes, grams, largest int }
	ch := make(chan got, 1)
	stop := make(chan struct{})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	go func() {
		b, g, l := drain(recv, stop, 200*time.Millisecond)
		ch <- got{b, g, l}
	}()
	if r.pid() != 0 || !strings.Contains(r.describe(), "bpf_sk_redirect_map egress of a unix socket") {
		t.Errorf("pid %d, %q", r.pid(), r.describe())
	}
	s, err := startSender(filepath.Join(dir, "in.sock"), 8192, 1, 200*time.Millisecond, drainWait, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.wait(5 * time.Second)
	st, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	// Nothing reached the bound socket's own queue.
	var q int
	if q, err = unix.IoctlGetInt(in, unix.SIOCINQ); err == nil && q != 0 {
		t.Errorf("%d bytes queued on the redirected socket", q)
	}
	// The redirect comes apart only once what the senders wrote has left
	// by the target: closing it loses nothing.
	if _, err := r.close(); err != nil {
		t.Errorf("close: %v", err)
	}
	close(stop)
	rc := <-ch
	if st.datagrams == 0 || uint64(rc.bytes) != st.bytes || uint64(rc.grams) != st.datagrams || rc.largest != 8192 {
		t.Errorf("sent %+v, the target's peer received %d bytes in %d datagrams (largest %d)", st, rc.bytes, rc.grams, rc.largest)
	}
}

// A sender's threads end only when their datagrams have left their
// sockets (SIOCOUTQ 0), and wait for that at most drainWait: a receiver
// that reads nothing holds stop up for drainWait, not for ever; one that
// reads slowly has everything once stop returns.
func TestSenderDrains(t *testing.T) {
	wait := 400 * time.Millisecond
	path := filepath.Join(t.TempDir(), "r.sock")
	rfd := unixBound(t, path)
	defer unix.Close(rfd)
	start := time.Now()
	s, err := startSender(path, 4096, 1, 100*time.Millisecond, wait, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.wait(5 * time.Second)
	st, err := s.stop()
	if d := time.Since(start); err != nil || st.datagrams == 0 || d < 100*time.Millisecond+wait || d > wait+2*time.Second {
		t.Errorf("stop with nobody reading: %+v, %v after %v; want datagrams sent, then a wait of %v", st, err, d, wait)
	}
	flushed := make(chan struct{})
	close(flushed)
	drain(rfd, flushed, 100*time.Millisecond)

	wait = 10 * time.Second
	var read atomic.Int64
	slowStop := make(chan struct{})
	defer close(slowStop)
	go func() {
		buf := make([]byte, 8192)
		for {
			time.Sleep(2 * time.Millisecond)       // a slow reader
			n, ok := recvUntil(rfd, buf, slowStop) // SO_RCVTIMEO 100 ms, from drain
			if !ok {
				return
			}
			read.Add(int64(n))
		}
	}()
	s, err = startSender(path, 4096, 2, 200*time.Millisecond, wait, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.wait(5 * time.Second)
	st, err = s.stop()
	if err != nil || st.bytes == 0 || uint64(read.Load()) != st.bytes {
		t.Errorf("slow reader: sender %+v (%v), the reader had %d bytes when stop returned", st, err, read.Load())
	}
}

// A target the kernel refuses with EOPNOTSUPP (an unconnected stream
// socket here; a connected vsock socket before Linux 6.4) is what
// notSupported turns into the cell's n/a; the descriptors are released.
func TestSockmapRefusedTarget(t *testing.T) {
	needSockmap(t)
	dir := t.TempDir()
	in := unixBound(t, filepath.Join(dir, "in.sock"))
	target, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newSockmapRedirect(in, target, "an unconnected stream socket", func(error) error {
		return workload.Unsupported("%s", SockmapFeature.Why)
	})
	if why, ok := workload.IsUnsupported(err); !ok || why != "this kernel has no vsock sockmap support (Linux 6.4+)" {
		t.Fatalf("err %v, want the n/a reason", err)
	}
	for _, fd := range []int{in, target} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
			t.Errorf("fd %d still open after the failure", fd)
		}
	}
}

// CPU times from a /proc tree: the redirector's threads and the kworkers
// from schedstat (ns), the guest's busy time from /proc/stat (ticks); a
// kworker that appeared in between counts from zero; stat's utime+stime
// where schedstat is missing.
func TestCPUSnapshot(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := func(socat1, socat2, kw7, kw9 string, busy string) {
		write("100/comm", "socat\n")
		write("100/task/100/schedstat", socat1+" 0 0\n")
		write("100/task/101/schedstat", socat2+" 0 0\n")
		write("7/comm", "kworker/0:1-events\n")
		write("7/schedstat", kw7+" 5 5\n")
		write("8/comm", "ksoftirqd/0\n")
		write("8/schedstat", "999999999 0 0\n")
		if kw9 != "" {
			write("9/comm", "kworker/u4:2\n")
			write("9/schedstat", kw9+" 0 0\n")
		}
		write("stat", "cpu  "+busy+"\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
	}
	//           user nice system idle iowait irq softirq steal guest guest_nice
	set("1000000000", "0", "500000000", "", "100 0 50 9000 7 3 2 0 40 0")
	c0 := takeCPU(root, 100)
	set("1600000000", "100000000", "800000000", "250000000", "180 0 90 9100 9 5 5 0 60 0")
	c1 := takeCPU(root, 100)
	redir, kw, busy, src := c1.since(c0)
	if !near(redir, 0.7) || !near(kw, 0.55) || !near(busy, 1.25) || src != "schedstat" {
		t.Errorf("redirector %v s, kworkers %v s, busy %v s, %s; want 0.7, 0.55 (0.3 + a new 0.25), 1.25 (125 ticks), schedstat", redir, kw, busy, src)
	}
	// No schedstat: /proc/PID/stat's utime and stime, in ticks.
	os.Remove(filepath.Join(root, "100/task/100/schedstat"))
	write("100/task/100/stat", "100 (so cat) S 1 100 100 0 -1 4194304 10 0 0 0 150 30 0 0 20 0 1 0 5 0 0\n")
	c2 := takeCPU(root, 100)
	if d, ns := taskCPU(filepath.Join(root, "100/task/100")); d != 1800*time.Millisecond || ns {
		t.Errorf("stat fallback: %v (ns %v), want 1.8s from 150+30 ticks", d, ns)
	}
	if _, _, _, src := c2.since(c1); src != "stat" {
		t.Errorf("source %q, want stat", src)
	}
	if got := takeCPU(root, 0); got.redirector != 0 || len(got.kworkers) != 2 {
		t.Errorf("no redirector process: %+v", got)
	}
}

// near reports whether a and b agree to 1e-9 relative (or absolute near 0).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
