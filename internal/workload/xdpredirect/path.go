package xdpredirect

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/workload"
)

// The XDP program's counters, per CPU: frames it saw, and frames
// bpf_redirect_map returned XDP_REDIRECT for.
const (
	ctrSeen = iota
	ctrRedirected
	nCounters
)

// xdpRedirect is XDP_REDIRECT's return value.
const xdpRedirect = 4

// redirectInsns assembles the program on the veth's receiving end:
//
//	seen++; act = bpf_redirect_map(&devmap, 0, 0); if act == XDP_REDIRECT { redirected++ }; return act
//
// A devmap lookup that fails returns the flags' low bits, 0 = XDP_ABORTED
// (counted by the kernel's xdp_exception tracepoint, not redirected).
func redirectInsns(devmapFD, countersFD int) asm.Instructions {
	inc := func(key int32, label string) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.RFP, -4, int64(key), asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, countersFD),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, label),
			// Per-CPU values: a plain add, no atomics.
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		}
	}
	var p asm.Instructions
	p = append(p, inc(ctrSeen, "redirect")...)
	p = append(p,
		asm.LoadMapPtr(asm.R1, devmapFD).WithSymbol("redirect"),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRedirectMap.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.JNE.Imm(asm.R0, xdpRedirect, "out"),
	)
	p = append(p, inc(ctrRedirected, "out")...)
	return append(p, asm.Mov.Reg(asm.R0, asm.R6).WithSymbol("out"), asm.Return())
}

// path is the XDP path into a tap: a veth pair in the tap's namespace
// whose receiving end runs the redirect program in native (driver) mode,
// its devmap holding the tap. Frames sent on the veth's sending end reach
// the receiving end's NAPI, the program redirects them, and the devmap
// flushes them into the tap's ndo_xdp_xmit: tun_xdp_xmit, which puts the
// xdp_frames on the ptr_ring of one of its queues.
type path struct {
	tx, rx   string // the veth pair: the sender's end, the program's end
	rxLink   netlink.Link
	prog     *ebpf.Program
	devmap   *ebpf.Map
	counters *ebpf.Map
	attached bool
}

// vethNames are the veth pair's names for a tap: derived from the tap's
// name, so two runs' pairs never collide (the tap's name is the run's);
// at most 15 bytes.
func vethNames(tap string) (tx, rx string) {
	base := tap
	if len(base) > 12 {
		base = base[len(base)-12:]
	}
	return "xs" + base, "xr" + base
}

// openPath makes the veth pair, loads the program and attaches it to the
// receiving end in native mode, in the calling thread's namespace (run
// it inside the tap's). A kernel that refuses native XDP on veth, or a
// devmap that refuses the tap, is workload.Unsupported: generic XDP would
// send the frames through the tap's skb path, not tun_xdp_xmit.
func openPath(tap string) (p *path, err error) {
	tapLink, err := netlink.LinkByName(tap)
	if err != nil {
		return nil, fmt.Errorf("xdp_redirect: tap %s: %w", tap, err)
	}
	p = &path{}
	p.tx, p.rx = vethNames(tap)
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.tx, MTU: tapLink.Attrs().MTU}, PeerName: p.rx, PeerMTU: uint32(tapLink.Attrs().MTU)}
	if err := netlink.LinkAdd(v); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			// RTNETLINK: no link kind "veth" (CONFIG_VETH off, no module).
			return nil, workload.Unsupported("this kernel has no veth devices (%v): the redirect needs a veth pair", err)
		}
		return nil, fmt.Errorf("xdp_redirect: create veth %s/%s: %w", p.tx, p.rx, err)
	}
	for _, name := range []string{p.rx, p.tx} {
		// No IPv6 on the pair: its router solicitations would be
		// redirected into the tap too.
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
		l, err := netlink.LinkByName(name)
		if err != nil {
			return nil, fmt.Errorf("xdp_redirect: veth %s: %w", name, err)
		}
		if name == p.rx {
			p.rxLink = l
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return nil, fmt.Errorf("xdp_redirect: set %s up: %w", name, err)
		}
	}
	if err := p.load(tapLink.Attrs().Index); err != nil {
		return nil, err
	}
	if err := netlink.LinkSetXdpFdWithFlags(p.rxLink, p.prog.FD(), nl.XDP_FLAGS_DRV_MODE); err != nil {
		return nil, workload.Unsupported("this kernel refuses native XDP on veth (%v); generic XDP would send the frames through the tap's skb path, not tun_xdp_xmit", err)
	}
	p.attached = true
	return p, nil
}

// load creates the devmap (slot 0: the tap), the counters and the
// program.
func (p *path) load(tapIndex int) error {
	var err error
	p.devmap, err = ebpf.NewMap(&ebpf.MapSpec{Name: "vnb_redir_dev", Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return bpfError("create the devmap", err)
	}
	if err := p.devmap.Put(uint32(0), uint32(tapIndex)); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
			return workload.Unsupported("this kernel's devmap refuses the tap (%v): tun has no ndo_xdp_xmit here", err)
		}
		return fmt.Errorf("xdp_redirect: put the tap in the devmap: %w", err)
	}
	p.counters, err = ebpf.NewMap(&ebpf.MapSpec{Name: "vnb_redir_ctr", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: nCounters})
	if err != nil {
		return bpfError("create the counters", err)
	}
	p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "vnb_xdp_redir", Type: ebpf.XDP, License: "GPL",
		Instructions: redirectInsns(p.devmap.FD(), p.counters.FD())})
	if err != nil {
		return bpfError("load the XDP program", err)
	}
	return nil
}

// bpfError says what a kernel without BPF (or XDP) lacks.
func bpfError(what string, err error) error {
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && os.Geteuid() == 0 {
		return workload.Unsupported("this kernel cannot %s (%v): it needs CONFIG_BPF_SYSCALL and XDP", what, err)
	}
	return fmt.Errorf("xdp_redirect: %s: %w", what, err)
}

// counts are the program's counters summed over CPUs.
type counts struct{ seen, redirected uint64 }

func (p *path) read() (counts, error) {
	var c counts
	for i, dst := range []*uint64{&c.seen, &c.redirected} {
		var per []uint64
		if err := p.counters.Lookup(uint32(i), &per); err != nil {
			return counts{}, fmt.Errorf("xdp_redirect: read the program's counters: %w", err)
		}
		for _, v := range per {
			*dst += v
		}
	}
	return c, nil
}

// close detaches the program (deleting the pair does) and frees the
// maps; in the namespace that holds the pair.
func (p *path) close() error {
	var errs []error
	if p.tx != "" {
		if l, err := netlink.LinkByName(p.tx); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("delete veth %s: %w", p.tx, err))
			}
		} else if !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	if p.prog != nil {
		p.prog.Close()
	}
	for _, m := range []*ebpf.Map{p.devmap, p.counters} {
		if m != nil {
			m.Close()
		}
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}
