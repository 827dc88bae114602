package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/vminit"
)

var console io.Writer = os.Stderr

func logf(format string, a ...any) {
	fmt.Fprintf(console, "vnetbench agent: "+format+"\n", a...)
}

// Main is the agent's entry point as PID 1. It never returns: when serving
// ends or anything fatal happens, the guest powers off.
//
// ops are the workloads' guest-side ops (Server.Ops).
//
// Anywhere but PID 1 it refuses, exit 2, before touching anything: run as
// root on a host (a binary started as /init by hand), its set-up would
// mount over the host's /dev, /tmp and /run and load modules there.
func Main(ops map[string]Op) {
	if pid := os.Getpid(); pid != 1 {
		fmt.Fprintf(os.Stderr, "vnetbench: the guest agent is a VM's /init and runs only as PID 1 (this is pid %d); "+
			"for the command line start the binary under another name than /init\n", pid)
		os.Exit(2)
	}
	if c, err := os.OpenFile("/dev/console", os.O_WRONLY, 0); err == nil {
		console = c
	}
	defer func() {
		if r := recover(); r != nil {
			fatal(fmt.Errorf("panic: %v", r))
		}
	}()
	fatal(run(ops))
}

func fatal(err error) {
	logf("fatal: %v; powering off", err)
	poweroff()
}

func poweroff() {
	unix.Sync()
	if os.Getpid() == 1 {
		_ = vminit.PowerOff() // returns only when the kernel refused
	}
	os.Exit(1)
}

// run sets the guest up and serves the host until serving fails; it
// returns only that error (a poweroff request powers off from inside).
func run(ops map[string]Op) error {
	if err := vminit.MountAll(mounts); err != nil {
		return err
	}
	initMS := uptimeMS()
	var phases []string
	phase := func(name string) { phases = append(phases, fmt.Sprintf("%s@%dms", name, uptimeMS())) }
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return err
	}
	cfg, err := vmimages.ParseCmdline(string(cmdline))
	if err != nil {
		return err
	}
	if err := loadModules(); err != nil {
		return err
	}
	phase("modules")
	sys := &linuxSystem{debug: cfg.Debug}
	ch, chName, err := openChannel()
	if err != nil {
		return err
	}
	phase("channel")
	if err := sys.configureNet(cfg); err != nil {
		return err
	}
	phase("net")
	if cfg.Sink != vmimages.SinkStack {
		if _, err := sys.Sink(cfg.Sink); err != nil {
			return fmt.Errorf("sink %s: %w", cfg.Sink, err)
		}
	}
	rel, _ := hostnet.KernelRelease() // "" when unknown
	refl := NewReflector()
	all := map[string]Op{vmimages.OpReflect: refl.Op}
	for name, op := range ops {
		all[name] = op
	}
	srv := &Server{Sys: sys, Ops: all, Ready: vmimages.Event{Ev: vmimages.EvReady, BootMS: uptimeMS(), InitMS: initMS, Kernel: rel}}
	profiled := vminit.Profiled(string(cmdline))
	if cfg.Debug || profiled {
		logf("init@%dms %s ready@%dms on %s", initMS, strings.Join(phases, " "), srv.Ready.BootMS, chName)
	}
	if profiled {
		// After ready, beside serving: printing does not slow the boot.
		go vminit.PrintBootProfile(console, 250*time.Millisecond)
	}
	// A virtio-serial port reads EOF while no host is connected; a write
	// blocks until one is. Serve each connection, re-announcing ready.
	for {
		err := srv.Serve(context.Background(), ch, true)
		if err != nil {
			return fmt.Errorf("serve on %s: %w", chName, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mounts are the agent's file systems: the kernel's and a tmpfs /tmp and
// /run, none honouring set-user-ID bits.
var mounts = []vminit.Mount{
	{Src: "proc", Dst: "/proc", FSType: "proc", Flags: unix.MS_NOSUID},
	{Src: "sysfs", Dst: "/sys", FSType: "sysfs", Flags: unix.MS_NOSUID},
	{Src: "devtmpfs", Dst: "/dev", FSType: "devtmpfs", Flags: unix.MS_NOSUID},
	{Src: "tmpfs", Dst: "/tmp", FSType: "tmpfs", Flags: unix.MS_NOSUID},
	{Src: "tmpfs", Dst: "/run", FSType: "tmpfs", Flags: unix.MS_NOSUID},
}

func uptimeMS() int64 { return vminit.Uptime().Milliseconds() }

// loadModules loads the modules the image lists (vminit.ModuleList,
// written by vmimages.Build) from the running kernel's /lib/modules.
func loadModules() error {
	rel, _ := hostnet.KernelRelease() // "" when unknown: /lib/modules
	_, err := vminit.LoadModuleList(vminit.ModuleList, filepath.Join("/lib/modules", rel))
	return err
}

// openChannel finds the virtio-serial port vmimages.AgentPortName, else
// falls back to the serial console in raw mode.
func openChannel() (io.ReadWriter, string, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			b, _ := os.ReadFile(n)
			if strings.TrimSpace(string(b)) == vmimages.AgentPortName {
				dev := "/dev/" + filepath.Base(filepath.Dir(n))
				f, err := os.OpenFile(dev, os.O_RDWR, 0)
				if err != nil {
					return nil, "", fmt.Errorf("open agent port %s: %w", dev, err)
				}
				return f, dev, nil
			}
		}
		// No virtio-serial controller at all: do not wait for one.
		if !hasVirtioConsole() || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	f, err := os.OpenFile("/dev/ttyS0", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, "", fmt.Errorf("no virtio-serial port %q and no serial console: %w", vmimages.AgentPortName, err)
	}
	if t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
		// Raw mode: no echo of the host's requests, no line editing.
		t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		t.Oflag &^= unix.OPOST
		t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		t.Cflag &^= unix.CSIZE | unix.PARENB
		t.Cflag |= unix.CS8
		t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
		_ = unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
	}
	return f, "/dev/ttyS0", nil
}

// hasVirtioConsole reports whether a virtio console/serial device (virtio
// device id 3) is present.
func hasVirtioConsole() bool {
	ids, _ := filepath.Glob("/sys/bus/virtio/devices/*/device")
	for _, p := range ids {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "0x0003" {
			return true
		}
	}
	return false
}

type linuxSystem struct {
	debug bool
	mu    sync.Mutex
	link  netlink.Link
	// links are the configured NICs by MAC (eth0 and vnb.nic's), when
	// there is more than one.
	links map[string]netlink.Link
	sink  string
	xdp   *xdpSink
	flows *flowSink
	// statFiles are the NICs' open statistics files by device name
	// (ifStats).
	statFiles map[string]*ifStatFiles
}

func (s *linuxSystem) configureNet(cfg vmimages.GuestConfig) error {
	if lo, err := netlink.LinkByName("lo"); err == nil {
		_ = netlink.LinkSetUp(lo)
	}
	var link netlink.Link
	deadline := time.Now().Add(3 * time.Second)
	for link == nil {
		links, err := netlink.LinkList()
		if err != nil {
			return fmt.Errorf("list links: %w", err)
		}
		for _, l := range links {
			a := l.Attrs()
			if a.Flags&net.FlagLoopback != 0 || l.Type() != "device" {
				continue
			}
			if cfg.MAC != nil && a.HardwareAddr.String() != cfg.MAC.String() {
				continue
			}
			if link == nil || a.Name == "eth0" {
				link = l
			}
		}
		if link == nil {
			if !cfg.IP.IsValid() && cfg.MAC == nil {
				return nil // no NIC asked for: do not wait for one
			}
			if time.Now().After(deadline) {
				if !cfg.IP.IsValid() {
					return nil // no NIC and none asked for
				}
				want := "a network interface"
				if cfg.MAC != nil {
					want = "a network interface with MAC " + cfg.MAC.String()
				}
				return fmt.Errorf("no %s after 3s (is QEMU given -device virtio-net-pci and the image the virtio_net module?)", want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.link = link
	if cfg.MTU > 0 {
		if err := netlink.LinkSetMTU(link, cfg.MTU); err != nil {
			return fmt.Errorf("set mtu %d on %s: %w", cfg.MTU, link.Attrs().Name, err)
		}
	}
	if cfg.IP.IsValid() {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: cfg.IP.Addr().AsSlice(), Mask: net.CIDRMask(cfg.IP.Bits(), cfg.IP.Addr().BitLen())}}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("add address %s to %s: %w", cfg.IP, link.Attrs().Name, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", link.Attrs().Name, err)
	}
	allQueues(link.Attrs().Name)
	if cfg.Gateway.IsValid() {
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: cfg.Gateway.AsSlice()}); err != nil {
			return fmt.Errorf("add default route via %s: %w", cfg.Gateway, err)
		}
	}
	if len(cfg.NICs) == 0 {
		return nil
	}
	s.links = map[string]netlink.Link{link.Attrs().HardwareAddr.String(): link}
	for _, n := range cfg.NICs {
		l, err := linkByMAC(n.MAC, 3*time.Second)
		if err != nil {
			return err
		}
		if cfg.MTU > 0 {
			if err := netlink.LinkSetMTU(l, cfg.MTU); err != nil {
				return fmt.Errorf("set mtu %d on %s: %w", cfg.MTU, l.Attrs().Name, err)
			}
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: n.IP.Addr().AsSlice(), Mask: net.CIDRMask(n.IP.Bits(), n.IP.Addr().BitLen())}}
		if err := netlink.AddrAdd(l, addr); err != nil {
			return fmt.Errorf("add address %s to %s: %w", n.IP, l.Attrs().Name, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", l.Attrs().Name, err)
		}
		allQueues(l.Attrs().Name)
		s.links[n.MAC.String()] = l
	}
	return nil
}

// allQueues enables every queue pair of a multi-queue NIC (useAllQueues);
// a NIC that refuses keeps its pairs, and the console says so.
func allQueues(dev string) {
	if _, err := useAllQueues(dev); err != nil {
		logf("%v", err)
	}
}

// linkByMAC waits up to d for the NIC with mac.
func linkByMAC(mac net.HardwareAddr, d time.Duration) (netlink.Link, error) {
	deadline := time.Now().Add(d)
	for {
		links, err := netlink.LinkList()
		if err != nil {
			return nil, fmt.Errorf("list links: %w", err)
		}
		for _, l := range links {
			if l.Attrs().HardwareAddr.String() == mac.String() {
				return l, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no network interface with MAC %s after %v (vnb.nic; is QEMU given a second -device virtio-net-pci with that MAC?)", mac, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *linuxSystem) Stats() (*vmimages.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.link == nil {
		return nil, errors.New("no network interface (was vnb.ip given on the kernel command line?)")
	}
	st, err := s.ifStats(s.link.Attrs().Name)
	if err != nil {
		return nil, err
	}
	ev := &vmimages.Event{Eth0: st, Sink: s.sinkName(), UptimeMS: uptimeMS()}
	if len(s.links) > 0 {
		ev.Links = map[string]*vmimages.IfStats{}
		for mac, l := range s.links {
			if l.Attrs().Name == s.link.Attrs().Name {
				ev.Links[mac] = st // eth0, read once
				continue
			}
			if ev.Links[mac], err = s.ifStats(l.Attrs().Name); err != nil {
				return nil, err
			}
		}
	}
	if s.xdp != nil {
		if ev.XDPDrops, err = s.xdp.count(); err != nil {
			return nil, err
		}
	}
	if s.flows != nil {
		ev.FlowDrops = s.flows.dropped()
		ev.Flows = s.flows.snapshot()
	}
	return ev, nil
}

func (s *linuxSystem) sinkName() string {
	if s.sink == "" {
		return vmimages.SinkStack
	}
	return s.sink
}

func (s *linuxSystem) Sink(kind string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.link == nil {
		return "", errors.New("no network interface to attach a sink to")
	}
	if s.xdp != nil {
		if err := s.xdp.close(); err != nil {
			return "", fmt.Errorf("detach xdp-drop: %w", err)
		}
		s.xdp = nil
	}
	if s.flows != nil {
		s.flows.close()
		s.flows = nil
	}
	s.sink = vmimages.SinkStack
	switch kind {
	case vmimages.SinkXDPDrop:
		x, err := attachXDPDrop(s.link)
		if err != nil {
			return "", err
		}
		s.xdp, s.sink = x, kind
		return "xdp mode " + x.mode, nil
	case vmimages.SinkFlowCount:
		f, err := openFlowSink(s.link.Attrs().Index)
		if err != nil {
			return "", err
		}
		s.flows, s.sink = f, kind
	}
	return "", nil
}

func (s *linuxSystem) Poweroff() {
	poweroff()
}
