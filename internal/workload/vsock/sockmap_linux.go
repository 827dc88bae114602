package vsock

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/workload"
)

// redirectInsns is the sk_skb verdict program: every skb that reaches a
// socket of the map it is attached to goes to the egress of the socket at
// key 0 of out (flags 0 = egress: the target socket sends it):
//
//	return bpf_sk_redirect_map(skb, out, 0, 0); // SK_PASS, or SK_DROP when out is empty
func redirectInsns(outFD int) asm.Instructions {
	return asm.Instructions{
		// r1 = skb (the context) already
		asm.LoadMapPtr(asm.R2, outFD),
		asm.Mov.Imm(asm.R3, 0), // key
		asm.Mov.Imm(asm.R4, 0), // flags: egress
		asm.FnSkRedirectMap.Call(),
		asm.Return(),
	}
}

// sockmapRedirect is the redirector built into the agent: the unix
// datagram socket bound at the redirector's path sits in map in, whose
// verdict program sends each datagram to the egress of the connected
// target socket in map out. Nothing in user space touches the data.
type sockmapRedirect struct {
	in, out    *ebpf.Map
	prog       *ebpf.Program
	unixFD     int
	targetFD   int
	targetDesc string
}

// newSockmapRedirect redirects the datagrams of unixFD to targetFD's
// egress. It takes both descriptors (closed by close, or on error).
// notSupported turns the kernel's refusal to insert the target (errno
// EOPNOTSUPP) into the error to return.
func newSockmapRedirect(unixFD, targetFD int, targetDesc string, notSupported func(error) error) (_ *sockmapRedirect, err error) {
	r := &sockmapRedirect{unixFD: unixFD, targetFD: targetFD, targetDesc: targetDesc}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	spec := func(name string) *ebpf.MapSpec {
		return &ebpf.MapSpec{Name: name, Type: ebpf.SockMap, KeySize: 4, ValueSize: 4, MaxEntries: 1}
	}
	if r.in, err = ebpf.NewMap(spec("vnb_redir_in")); err != nil {
		return nil, fmt.Errorf("sockmap: create map: %w", err)
	}
	if r.out, err = ebpf.NewMap(spec("vnb_redir_out")); err != nil {
		return nil, fmt.Errorf("sockmap: create map: %w", err)
	}
	r.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "vnb_redirect", Type: ebpf.SkSKB, AttachType: ebpf.AttachSkSKBVerdict,
		License: "GPL", Instructions: redirectInsns(r.out.FD())})
	if err != nil {
		return nil, fmt.Errorf("sockmap: load sk_skb verdict program: %w", err)
	}
	// The target first: a socket in a map without programs gets a psock
	// that can be redirected to.
	if err := r.out.Update(uint32(0), uint32(targetFD), ebpf.UpdateAny); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) && notSupported != nil {
			return nil, notSupported(err)
		}
		return nil, fmt.Errorf("sockmap: insert %s: %w", targetDesc, err)
	}
	// The program before the unix socket: a socket's psock takes the
	// map's programs when it is inserted.
	if err := link.RawAttachProgram(link.RawAttachProgramOptions{Target: r.in.FD(), Program: r.prog, Attach: ebpf.AttachSkSKBVerdict}); err != nil {
		return nil, fmt.Errorf("sockmap: attach the verdict program: %w", err)
	}
	if err := r.in.Update(uint32(0), uint32(unixFD), ebpf.UpdateAny); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return nil, fmt.Errorf("sockmap: this kernel cannot put a unix datagram socket in a SOCKMAP (Linux 5.15+): %w", err)
		}
		return nil, fmt.Errorf("sockmap: insert the unix socket: %w", err)
	}
	return r, nil
}

func (r *sockmapRedirect) pid() int { return 0 }

func (r *sockmapRedirect) describe() string {
	return "sockmap: sk_skb verdict on the unix datagram socket " + RedirectPath + " -> bpf_sk_redirect_map egress of " + r.targetDesc
}

// close takes the redirect apart in the order data flows, so nothing is
// in flight when a socket goes: the senders have stopped and drained (the
// unix socket's psock has passed their datagrams on), then the target's
// transport drains, then the unix socket leaves its map (no more
// redirects), then the target leaves its map (its psock's backlog ends),
// and only then are the sockets, the program and the maps closed.
func (r *sockmapRedirect) close() (string, error) {
	var errs []error
	if r.targetFD >= 0 {
		if n := waitUnsent(r.targetFD, drainWait); n > 0 {
			errs = append(errs, fmt.Errorf("sockmap: %s still held %d unsent bytes after %v", r.targetDesc, n, drainWait))
		}
	}
	for _, m := range []struct {
		m    *ebpf.Map
		what string
	}{{r.in, "the unix socket"}, {r.out, r.targetDesc}} {
		if m.m == nil {
			continue
		}
		// An empty slot is EINVAL from a SOCKMAP (the socket already
		// left: it was never inserted, or the kernel unhashed it).
		if err := m.m.Delete(uint32(0)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("sockmap: take %s out of its map: %w", m.what, err))
		}
	}
	for _, fd := range []*int{&r.unixFD, &r.targetFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if r.prog != nil {
		r.prog.Close()
	}
	for _, m := range []*ebpf.Map{r.in, r.out} {
		if m != nil {
			m.Close()
		}
	}
	r.prog, r.in, r.out = nil, nil, nil
	return "", errors.Join(errs...)
}

// startSockmap binds the unix datagram socket, connects the vsock stream
// socket to the server, and redirects the one to the other. A kernel
// that cannot put the connected vsock socket in a SOCKMAP (before 6.4)
// makes the cell n/a.
func startSockmap(a guestArgs) (redirector, error) {
	ufd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sockmap: unix socket: %w", err)
	}
	if err := unix.Bind(ufd, &unix.SockaddrUnix{Name: RedirectPath}); err != nil {
		unix.Close(ufd)
		return nil, fmt.Errorf("sockmap: bind %s: %w", RedirectPath, err)
	}
	vfd, err := dialVsock(a.PeerCID, a.Port)
	if err != nil {
		unix.Close(ufd)
		return nil, err
	}
	desc := fmt.Sprintf("the vsock socket connected to %d:%d", a.PeerCID, a.Port)
	r, err := newSockmapRedirect(ufd, vfd, desc, func(error) error {
		return workload.Unsupported("%s", SockmapFeature.Why)
	})
	if err != nil {
		return nil, err // not a nil *sockmapRedirect in a redirector
	}
	return r, nil
}

// dialVsock connects a vsock stream socket to cid:port.
func dialVsock(cid, port uint32) (int, error) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		return -1, errors.New("this guest has no AF_VSOCK (modules vsock and its transport)")
	}
	if err != nil {
		return -1, fmt.Errorf("vsock socket: %w", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrVM{CID: cid, Port: port}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("vsock connect to %d:%d: %w", cid, port, err)
	}
	return fd, nil
}
