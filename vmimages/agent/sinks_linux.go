package agent

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// xdpSink is an XDP program on eth0 that counts every packet in a
// one-element array map and returns XDP_DROP.
type xdpSink struct {
	link netlink.Link
	prog *ebpf.Program
	m    *ebpf.Map
	mode string
	flag int
}

// xdpDropInsns assembles: key=0; v=lookup(map,&key); if v { *v += 1 }; return XDP_DROP.
func xdpDropInsns(mapFD int) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"), // XDP_DROP
		asm.Return(),
	}
}

func attachXDPDrop(link netlink.Link) (*xdpSink, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "vnb_drops", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("create counter map: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "vnb_xdp_drop", Type: ebpf.XDP, License: "GPL", Instructions: xdpDropInsns(m.FD())})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("load xdp program: %w", err)
	}
	x := &xdpSink{link: link, prog: prog, m: m}
	var errs []error
	for _, try := range []struct {
		flag int
		mode string
	}{{nl.XDP_FLAGS_DRV_MODE, "native"}, {nl.XDP_FLAGS_SKB_MODE, "generic"}} {
		if err := netlink.LinkSetXdpFdWithFlags(link, prog.FD(), try.flag); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", try.mode, err))
			continue
		}
		x.flag, x.mode = try.flag, try.mode
		return x, nil
	}
	prog.Close()
	m.Close()
	return nil, fmt.Errorf("attach xdp to %s: %w", link.Attrs().Name, errors.Join(errs...))
}

func (x *xdpSink) count() (uint64, error) {
	var v uint64
	if err := x.m.Lookup(uint32(0), &v); err != nil {
		return 0, fmt.Errorf("read xdp counter: %w", err)
	}
	return v, nil
}

func (x *xdpSink) close() error {
	err := netlink.LinkSetXdpFdWithFlags(x.link, -1, x.flag)
	x.prog.Close()
	x.m.Close()
	return err
}

// flowSink counts received IPv4 UDP packets per source port on an
// AF_PACKET socket, decoding with gopacket/layers.
type flowSink struct {
	fd     int
	mu     sync.Mutex
	drops  uint64 // socket drops so far (PACKET_STATISTICS resets on read)
	counts [65536]atomic.Uint64
	stop   atomic.Bool
	wg     sync.WaitGroup
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openFlowSink(ifindex int) (*flowSink, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_IP)))
	if err != nil {
		return nil, fmt.Errorf("open AF_PACKET socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind AF_PACKET socket: %w", err)
	}
	// A large buffer absorbs bursts while the agent (slow under TCG)
	// catches up; FORCE bypasses net.core.rmem_max (we are root).
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<20)
	}
	// Only received packets (Linux 4.20+; older kernels also count the
	// guest's own UDP output, which a receiver-only guest does not send).
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	f := &flowSink{fd: fd}
	f.wg.Add(1)
	go f.loop()
	return f, nil
}

// flowBatch and flowSnap: packets per recvmmsg call, and bytes kept of
// each (Ethernet + IPv4 with options + UDP header fit in 128).
const (
	flowBatch = 64
	flowSnap  = 128
)

func (f *flowSink) loop() {
	defer f.wg.Done()
	var eth layers.Ethernet
	var ip4 layers.IPv4
	var udp layers.UDP
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &udp)
	parser.IgnoreUnsupported = true
	decoded := make([]gopacket.LayerType, 0, 4)
	// One recvmmsg per batch: syscalls are expensive under TCG.
	bufs := make([][flowSnap]byte, flowBatch)
	iovs := make([]unix.Iovec, flowBatch)
	hdrs := make([]unix.Mmsghdr, flowBatch)
	for i := range hdrs {
		iovs[i].Base = &bufs[i][0]
		iovs[i].SetLen(flowSnap)
		hdrs[i].Hdr.Iov = &iovs[i]
		hdrs[i].Hdr.Iovlen = 1
	}
	for !f.stop.Load() {
		r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(f.fd), uintptr(unsafe.Pointer(&hdrs[0])), flowBatch, unix.MSG_WAITFORONE, 0, 0)
		if errno != 0 {
			continue // timeout (EAGAIN) or EINTR: check stop
		}
		for i := 0; i < int(r); i++ {
			n := min(int(hdrs[i].Len), flowSnap)
			if err := parser.DecodeLayers(bufs[i][:n], &decoded); err != nil && len(decoded) < 3 {
				continue
			}
			for _, t := range decoded {
				if t == layers.LayerTypeUDP && ip4.FragOffset == 0 {
					f.counts[udp.SrcPort].Add(1)
				}
			}
		}
	}
}

// dropped returns the packets the socket dropped because its buffer was
// full (they were received by eth0 but not counted in any flow).
func (f *flowSink) dropped() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, err := unix.GetsockoptTpacketStats(f.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		f.drops += uint64(st.Drops)
	}
	return f.drops
}

func (f *flowSink) snapshot() map[string]uint64 {
	m := map[string]uint64{}
	for p := range f.counts {
		if v := f.counts[p].Load(); v != 0 {
			m[strconv.Itoa(p)] = v
		}
	}
	return m
}

func (f *flowSink) close() {
	f.stop.Store(true)
	f.wg.Wait()
	unix.Close(f.fd)
}
