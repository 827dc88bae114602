package vmimages

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// BaseCmdline is the kernel command line every guest starts with: serial
// console, quiet boot, no reboot loop on panic. What else a guest gets
// depends on the accelerator (the runner chooses; TCGCmdline under
// emulation). Measured under TCG with the cloud kernel, "quiet" saves
// ~0.1-0.3 s of console output; noapic and the like made no measurable
// difference and are left out.
const BaseCmdline = "console=ttyS0 quiet panic=-1 oops=panic"

// TCGCmdline are parameters for a guest under TCG only: no
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

// Params returns the vnb.* parameters for c, to append to BaseCmdline.
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

// Cmdline returns BaseCmdline, then tuning (accelerator-specific
// parameters such as TCGCmdline; "" = none), then c's parameters.
func (c GuestConfig) Cmdline(tuning string) string {
	s := BaseCmdline
	if tuning != "" {
		s += " " + tuning
	}
	if p := c.Params(); p != "" {
		s += " " + p
	}
	return s
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
