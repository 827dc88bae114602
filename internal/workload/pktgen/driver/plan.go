// Package driver is the pktgen workload's driver: it drives the kernel's packet generator through
// /proc/net/pktgen the way the kernel's own samples/pktgen scripts do
// (sample01 simple, sample02 multiqueue, sample03 burst_single_flow), and
// runs those scripts themselves in script mode.
//
// Plan is pure: it turns a Config into the exact sequence of /proc writes.
// Driver executes a plan against a /proc/net/pktgen directory (configurable,
// so tests use a fake directory), starts the generator with a deadline,
// collects every thread's Result and clears pktgen on exit (every device
// removed, and the threads seen to have removed it). Script runs a
// kernel tree's samples/pktgen/pktgen_sample0N_*.sh with argv only.
//
// The package does not create tap devices, pin threads or run perf; runner
// does. It never builds a shell string.
package driver

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
)

// Modes, named as in the scenario's generator.pktgen.mode.
const (
	ModeSimple          = "simple"            // samples/pktgen/pktgen_sample01_simple.sh
	ModeMultiqueue      = "multiqueue"        // samples/pktgen/pktgen_sample02_multiqueue.sh
	ModeBurstSingleFlow = "burst_single_flow" // samples/pktgen/pktgen_sample03_burst_single_flow.sh
	ModeScript          = "script"            // run the kernel's scripts themselves (see Script)
)

// Defaults taken from the kernel's samples.
const (
	DefaultPktSize = 60                  // parameters.sh: NIC adds 4 bytes CRC
	DefaultDst     = "198.18.0.42"       // sample01/02/03
	DefaultDst6    = "FD00::1"           // sample01/02/03 with -6
	DefaultDstMAC  = "90:e2:ba:ff:ff:ff" // sample02/03
	DefaultCount   = 100000              // sample01/02 (sample03: 0 = forever)
	defaultUDPMin  = 9                   // sample01/02 UDP source port range
	defaultUDPMax  = 109
)

// Config is one pktgen run. Zero values mean the sample's default.
type Config struct {
	// Mode is one of ModeSimple, ModeMultiqueue, ModeBurstSingleFlow.
	Mode string
	// Dev is the output device, e.g. "vnbt0".
	Dev string
	// Threads is the number of pktgen threads (kpktgend_N), default 1.
	// Simple mode with one thread adds Dev itself to kpktgend_0 like
	// sample01; otherwise devices are named Dev@N like sample02/03.
	Threads int
	// FirstThread is the index of the first kpktgend thread (-f), default 0.
	FirstThread int
	// Count is the packets per thread; 0 sends until Duration ends.
	// Use CountSet to say "0 on purpose"; otherwise 0 means the mode's
	// default (100000, or 0 for burst_single_flow).
	Count    uint64
	CountSet bool
	// Duration bounds the run: at the end pktgen is stopped (pgctrl stop)
	// and its Results are kept. Required when the count is 0. 0 = no bound
	// besides ctx (not recommended: a full tap ring makes pktgen never
	// reach its count).
	Duration time.Duration
	// PktSize in bytes (default 60).
	PktSize int
	// Burst is pktgen's burst (skb->xmit_more), written when non-zero or
	// when BurstSet says 0 is meant ("burst 0", which the kernel takes
	// as its minimum, 1); otherwise not written (the kernel's default).
	// Tap devices support only 0 or 1.
	Burst    int
	BurstSet bool
	// CloneSkb is clone_skb; tap devices support only 0.
	CloneSkb int
	// Delay between packets (pktgen's delay, ns resolution).
	Delay time.Duration
	// Dst is the destination IPv4/IPv6 address, or a CIDR prefix in
	// multiqueue and burst_single_flow modes (dst_min..dst_max).
	Dst string
	// DstMAC is the destination MAC (required in simple mode, like sample01).
	DstMAC string
	// UDPSrcMin/Max is the random UDP source port range (flag UDPSRC_RND).
	// 0/0 means 9..109 in simple and multiqueue modes, none in burst mode.
	UDPSrcMin, UDPSrcMax int
	// UDPDstMin/Max is the random UDP destination port range; 0/0 = none.
	UDPDstMin, UDPDstMax int
	// XmitMode is "" (pktgen's default start_xmit, bypasses the qdisc),
	// "start_xmit", "queue_xmit" (through the qdisc) or "netif_receive".
	XmitMode string
}

// Write is one line written to one file under /proc/net/pktgen.
type Write struct {
	File string // "pgctrl", "kpktgend_0", "vnbt0@0", ...
	Cmd  string // "count 100000"
}

// String is the write as a shell line under DefaultProcDir.
func (w Write) String() string { return w.Line(DefaultProcDir) }

// Line is the write as a shell line, `echo CMD > PROCDIR/FILE`, every word
// quoted for a POSIX shell (proc.Quote).
func (w Write) Line(procDir string) string {
	return "echo " + proc.Quote([]string{w.Cmd}) + " > " + proc.Quote([]string{procDir + "/" + w.File})
}

// Plan is the full sequence of a run: configuration writes, then the start.
type Plan struct {
	Config  Config   // with defaults filled
	Devices []Device // one per thread, in thread order
	Setup   []Write  // per-thread configuration (Driver.Start clears pktgen first)
	Start   Write    // pgctrl start
}

// Device is a pktgen device: a thread and its /proc file.
type Device struct {
	Thread int    // kpktgend index
	File   string // proc file name: Dev or Dev@Thread
}

// configErrorf is invalid pktgen input (bad mode, address, an option the
// device refuses, ...): an error of class fault.ErrInput.
func configErrorf(format string, a ...any) error { return fault.Input("pktgen: "+format, a...) }

// withDefaults fills the sample defaults and validates.
func (c Config) withDefaults() (Config, error) {
	switch c.Mode {
	case ModeSimple, ModeMultiqueue, ModeBurstSingleFlow:
	case "":
		c.Mode = ModeSimple
	case ModeScript:
		return c, configErrorf("mode script runs the kernel's scripts: use Script, not the native driver")
	default:
		return c, configErrorf("unknown mode %q; use simple, multiqueue, burst_single_flow or script", c.Mode)
	}
	if c.Dev == "" {
		return c, configErrorf("no output device; set the tap name")
	}
	if strings.ContainsAny(c.Dev, "/ \t\n") || c.Dev == "pgctrl" || strings.HasPrefix(c.Dev, "kpktgend_") {
		return c, configErrorf("invalid device name %q", c.Dev)
	}
	if c.Threads == 0 {
		c.Threads = 1
	}
	if c.Threads < 0 || c.FirstThread < 0 {
		return c, configErrorf("threads %d / first thread %d must not be negative", c.Threads, c.FirstThread)
	}
	if !c.CountSet && c.Count == 0 && c.Mode != ModeBurstSingleFlow {
		c.Count = DefaultCount
	}
	if c.Count == 0 && c.Duration <= 0 {
		return c, configErrorf("count 0 sends forever: set a duration")
	}
	if c.PktSize == 0 {
		c.PktSize = DefaultPktSize
	}
	if c.PktSize < 14 || c.PktSize > 65535 {
		return c, configErrorf("pkt_size %d out of range 14..65535", c.PktSize)
	}
	if c.Burst < 0 || c.CloneSkb < 0 || c.Delay < 0 {
		return c, configErrorf("burst, clone_skb and delay must not be negative")
	}
	if c.Dst == "" {
		c.Dst = DefaultDst
	}
	if c.DstMAC == "" {
		if c.Mode == ModeSimple {
			return c, configErrorf("simple mode needs dst_mac (like sample01's -m); set the guest NIC's MAC")
		}
		c.DstMAC = DefaultDstMAC
	}
	if !validMAC(c.DstMAC) {
		return c, configErrorf("invalid dst_mac %q; want six hex bytes like 52:54:00:12:34:56", c.DstMAC)
	}
	if _, _, err := dstRange(c.Dst); err != nil {
		return c, err
	}
	if c.Mode == ModeSimple && strings.Contains(c.Dst, "/") {
		return c, configErrorf("simple mode takes a single dst address, not %q; use multiqueue for a prefix", c.Dst)
	}
	if c.UDPSrcMin == 0 && c.UDPSrcMax == 0 && c.Mode != ModeBurstSingleFlow {
		c.UDPSrcMin, c.UDPSrcMax = defaultUDPMin, defaultUDPMax
	}
	for _, r := range [][2]int{{c.UDPSrcMin, c.UDPSrcMax}, {c.UDPDstMin, c.UDPDstMax}} {
		if r == [2]int{0, 0} {
			continue
		}
		if r[0] <= 0 || r[0] > 65535 || r[1] <= 0 || r[1] > 65535 || r[0] > r[1] {
			return c, configErrorf("invalid UDP port range %d-%d; want 0 < min <= max < 65536", r[0], r[1])
		}
	}
	switch c.XmitMode {
	case "", "start_xmit", "queue_xmit", "netif_receive":
	default:
		return c, configErrorf("unknown xmit_mode %q; use start_xmit, queue_xmit or netif_receive", c.XmitMode)
	}
	return c, nil
}

func validMAC(s string) bool {
	p := strings.Split(s, ":")
	if len(p) != 6 {
		return false
	}
	for _, b := range p {
		if len(b) != 2 {
			return false
		}
		if _, err := strconv.ParseUint(b, 16, 8); err != nil {
			return false
		}
	}
	return true
}

// dstRange returns the first and last address of dst (an address or a
// CIDR prefix), like functions.sh parse_addr.
func dstRange(dst string) (netip.Addr, netip.Addr, error) {
	if strings.Contains(dst, "/") {
		p, err := netip.ParsePrefix(dst)
		if err != nil {
			return netip.Addr{}, netip.Addr{}, configErrorf("invalid dst prefix %q: %v", dst, err)
		}
		p = p.Masked()
		first := p.Addr()
		last := first.AsSlice()
		bits := p.Bits()
		for i := range last {
			for b := 0; b < 8; b++ {
				if i*8+b >= bits {
					last[i] |= 0x80 >> b
				}
			}
		}
		l, _ := netip.AddrFromSlice(last)
		return first, l, nil
	}
	a, err := netip.ParseAddr(dst)
	if err != nil {
		return netip.Addr{}, netip.Addr{}, configErrorf("invalid dst address %q", dst)
	}
	if a.Zone() != "" {
		// pktgen takes no zone (dst6 is an in6_addr), and a zone is free
		// text that would reach reproduce.sh.
		return netip.Addr{}, netip.Addr{}, configErrorf("dst address %q has a zone (%%%s); give the address without it", dst, a.Zone())
	}
	return a, a, nil
}

// NewPlan validates c, fills the sample defaults and returns the writes.
// It is pure.
func NewPlan(c Config) (*Plan, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Plan{Config: c, Start: Write{"pgctrl", "start"}}
	add := func(file, cmd string) { p.Setup = append(p.Setup, Write{file, cmd}) }
	first, last, _ := dstRange(c.Dst)
	six := ""
	if first.Is6() && !first.Is4In6() {
		six = "6"
	}
	for t := c.FirstThread; t < c.FirstThread+c.Threads; t++ {
		dev := c.Dev + "@" + strconv.Itoa(t)
		if c.Mode == ModeSimple && c.Threads == 1 {
			dev = c.Dev // sample01: add_device $DEV to thread 0
		}
		p.Devices = append(p.Devices, Device{Thread: t, File: dev})
		th := "kpktgend_" + strconv.Itoa(t)
		add(th, "add_device "+dev)
		if c.Mode != ModeSimple {
			add(dev, "flag QUEUE_MAP_CPU")
		}
		add(dev, "count "+strconv.FormatUint(c.Count, 10))
		add(dev, "clone_skb "+strconv.Itoa(c.CloneSkb))
		add(dev, "pkt_size "+strconv.Itoa(c.PktSize))
		add(dev, "delay "+strconv.FormatInt(c.Delay.Nanoseconds(), 10))
		add(dev, "flag NO_TIMESTAMP")
		add(dev, "dst_mac "+c.DstMAC)
		if c.Mode == ModeSimple {
			add(dev, "dst"+six+" "+first.String())
		} else {
			add(dev, "dst"+six+"_min "+first.String())
			add(dev, "dst"+six+"_max "+last.String())
		}
		if c.UDPDstMin != 0 || c.UDPDstMax != 0 {
			add(dev, "flag UDPDST_RND")
			add(dev, "udp_dst_min "+strconv.Itoa(c.UDPDstMin))
			add(dev, "udp_dst_max "+strconv.Itoa(c.UDPDstMax))
		}
		if c.UDPSrcMin != 0 || c.UDPSrcMax != 0 {
			add(dev, "flag UDPSRC_RND")
			add(dev, "udp_src_min "+strconv.Itoa(c.UDPSrcMin))
			add(dev, "udp_src_max "+strconv.Itoa(c.UDPSrcMax))
		}
		if c.Burst != 0 || c.BurstSet {
			add(dev, "burst "+strconv.Itoa(c.Burst))
		}
		if c.XmitMode != "" {
			add(dev, "xmit_mode "+c.XmitMode)
		}
	}
	return p, nil
}

// Writes returns the setup writes followed by the start, as the plan
// command prints them.
func (p *Plan) Writes() []Write { return append(append([]Write(nil), p.Setup...), p.Start) }
