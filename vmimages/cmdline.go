package vmimages

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// KernelCmdline is the kernel command line of a VM vnetbench boots, a
// host's guest or a lab VM (and a lab's nested guest), composed in one
// order:
//
//	console=ttyS0 VERBOSITY panic=-1 [oops=panic] [rdinit=INIT] TUNING EXTRA... [-- ARGS...]
//
// Every kernel logs to the first serial port (the console log) and, with
// panic=-1 and QEMU's -no-reboot, ends its VM on a panic instead of
// rebooting. The fields are what differs: GuestCmdline fills them for a
// guest, runner/labvm for a VM whose /init is lab init.
type KernelCmdline struct {
	// Verbosity is the console's log level: Quiet or LogWarnings.
	Verbosity string
	// OopsPanic makes an oops a panic: a guest stops at its first oops
	// instead of measuring a wounded kernel.
	OopsPanic bool
	// Init is the initramfs program the kernel runs (rdinit=); "" = its
	// default, /init.
	Init string
	// Tuning is the accelerator's tuning (Tuning, TCGTuning) or a
	// scenario's own (guest.cmdline); "" = none.
	Tuning string
	// Extra are further parameters, in order; empty ones are left out.
	Extra []string
	// Args are the init program's arguments, after "--".
	Args []string
}

// The console's verbosity (KernelCmdline.Verbosity). Both keep it to
// warnings and errors (the console is slow under TCG). Quiet is what a
// guest has always had: measured under TCG with the cloud kernel, it saves
// ~0.1-0.3 s of console output against a default boot. LogWarnings names
// the level outright, whatever a lab kernel's own build set
// CONFIG_CONSOLE_LOGLEVEL_QUIET to.
const (
	Quiet       = "quiet"
	LogWarnings = "loglevel=4"
)

// String is the command line, as QEMU's -append takes it.
func (k KernelCmdline) String() string {
	p := []string{"console=ttyS0", k.Verbosity, "panic=-1"}
	if k.OopsPanic {
		p = append(p, "oops=panic")
	}
	if k.Init != "" {
		p = append(p, "rdinit="+k.Init)
	}
	p = append(p, k.Tuning)
	p = append(p, k.Extra...)
	var b strings.Builder
	for _, s := range p {
		if s = strings.TrimSpace(s); s != "" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
	}
	if len(k.Args) > 0 {
		b.WriteString(" -- " + strings.Join(k.Args, " "))
	}
	return b.String()
}

// GuestCmdline is a guest's kernel command line (its agent is /init):
// quiet, an oops panics, then tuning (Tuning, or guest.cmdline) and
// extra (the image's parameters, the vnb.* ones of GuestConfig.Params).
// Noapic and the like made no measurable difference under TCG and are
// left out.
func GuestCmdline(tuning string, extra ...string) KernelCmdline {
	return KernelCmdline{Verbosity: Quiet, OopsPanic: true, Tuning: tuning, Extra: extra}
}

// TCGCmdline are parameters for a kernel under TCG only: no
// speculative-execution mitigations (page-table isolation flushes the
// emulated TLB on every kernel entry), a TSC taken as reliable and no
// IO-APIC timer check (both misfire when the emulator is loaded). Under
// KVM they would make the guest kernel unlike one on a real host.
const TCGCmdline = "mitigations=off tsc=reliable no_timer_check"

// BootSkips are kernel parameters that skip boot work a benchmark VM does
// not need (crypto self-tests, i8042 probing) and that stalls boots under
// TCG, more so TCG inside TCG (a lab VM's guests). They change nothing
// once the kernel runs.
const BootSkips = "cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp"

// TCGTuning is the whole tuning of a kernel under TCG, guest or lab VM:
// TCGCmdline, BootSkips and audit=0 (fewer emulated instructions per
// syscall). Under KVM a guest gets BootSkips only (Tuning).
const TCGTuning = TCGCmdline + " " + BootSkips + " audit=0"

// Tuning is a guest kernel's tuning for its accelerator: TCGTuning when
// emulated, else BootSkips, so that under KVM the guest kernel runs as it
// would on a real host, mitigations and audit included.
func Tuning(emulated bool) string {
	if emulated {
		return TCGTuning
	}
	return BootSkips
}

// GuestConfig is what the agent reads from the kernel command line
// (parameters prefixed "vnb.").
type GuestConfig struct {
	IP      netip.Prefix     // vnb.ip: eth0 address, e.g. 10.0.0.2/24 (zero: eth0 stays down)
	MAC     net.HardwareAddr // vnb.mac: pick the NIC with this MAC as eth0 (nil: the first non-loopback NIC)
	Gateway netip.Addr       // vnb.gw: default route (zero: none)
	MTU     int              // vnb.mtu (0: leave the default)
	Sink    string           // vnb.sink: initial sink (default SinkStack)
	Debug   bool             // vnb.debug=1: log each request to the console
	// NICs are further NICs to configure besides eth0 (vnb.nic=MAC,IP/LEN,
	// once each): a guest serving two backends at once (a vhost=off and a
	// vhost=on NIC), each in its own subnet. Stats report them by MAC.
	NICs []NIC
}

// NIC is one further guest NIC: the one with MAC gets address IP.
type NIC struct {
	MAC net.HardwareAddr
	IP  netip.Prefix
}

// Params returns the vnb.* parameters for c (GuestCmdline's extra).
func (c GuestConfig) Params() string {
	var p []string
	if c.IP.IsValid() {
		p = append(p, "vnb.ip="+c.IP.String())
	}
	if c.MAC != nil {
		p = append(p, "vnb.mac="+c.MAC.String())
	}
	if c.Gateway.IsValid() {
		p = append(p, "vnb.gw="+c.Gateway.String())
	}
	if c.MTU > 0 {
		p = append(p, "vnb.mtu="+strconv.Itoa(c.MTU))
	}
	if c.Sink != "" && c.Sink != SinkStack {
		p = append(p, "vnb.sink="+c.Sink)
	}
	if c.Debug {
		p = append(p, "vnb.debug=1")
	}
	for _, n := range c.NICs {
		p = append(p, "vnb.nic="+n.MAC.String()+","+n.IP.String())
	}
	return strings.Join(p, " ")
}

// Cmdline is the guest's whole kernel command line for c with tuning
// (TCGCmdline, Tuning(...); "" = none): GuestCmdline(tuning, c.Params()).
func (c GuestConfig) Cmdline(tuning string) string {
	return GuestCmdline(tuning, c.Params()).String()
}

// ParseCmdline extracts the GuestConfig from a kernel command line
// (/proc/cmdline). Parameters other than vnb.* are ignored; a malformed
// vnb.* value is an error.
func ParseCmdline(s string) (GuestConfig, error) {
	c := GuestConfig{Sink: SinkStack}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		if !strings.HasPrefix(k, "vnb.") {
			continue
		}
		var err error
		switch k {
		case "vnb.ip":
			c.IP, err = netip.ParsePrefix(v)
		case "vnb.mac":
			c.MAC, err = net.ParseMAC(v)
		case "vnb.gw":
			c.Gateway, err = netip.ParseAddr(v)
		case "vnb.mtu":
			c.MTU, err = strconv.Atoi(v)
		case "vnb.sink":
			if v != SinkStack && v != SinkXDPDrop && v != SinkFlowCount {
				err = fmt.Errorf("unknown sink (want %s, %s or %s)", SinkStack, SinkXDPDrop, SinkFlowCount)
			}
			c.Sink = v
		case "vnb.debug":
			c.Debug = v == "1" || v == "true"
		case "vnb.nic":
			var n NIC
			mac, ip, ok := strings.Cut(v, ",")
			if !ok {
				err = fmt.Errorf("want MAC,IP/LEN")
				break
			}
			if n.MAC, err = net.ParseMAC(mac); err == nil {
				n.IP, err = netip.ParsePrefix(ip)
			}
			c.NICs = append(c.NICs, n)
		default:
			err = fmt.Errorf("unknown parameter")
		}
		if err != nil {
			return c, fmt.Errorf("kernel command line %s: %w", f, err)
		}
	}
	return c, nil
}
