// Package qemu builds QEMU command lines, starts QEMU through a
// proc.Executor, and talks to it over QMP (readiness, vCPU thread ids,
// clean quit). It captures the guest console to a file and exposes the
// agent's virtio-serial socket.
//
// A VM's hardware is a list of Devices, each of which builds its own QEMU
// arguments and kernel command line pieces (as hugelgupf/vmtest's
// qemu.Device); Args lays them out and is a pure function (golden-tested).
// Launch does the starting, for host guests and lab VMs alike. The package
// does not create tap devices or namespaces (runner does) and does not
// speak the guest agent protocol (vmimages does): it only names the
// agent's port as vmimages says and hands out its connection.
package qemu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/vmimages"
)

// Accel is the QEMU accelerator.
type Accel string

// Accelerators.
const (
	KVM Accel = "kvm"
	TCG Accel = "tcg" // emulation: numbers measure the emulator, not the kernel
)

// MaxCPUs is the most vCPUs QEMU's default x86 machine (pc) takes.
const MaxCPUs = 255

// DefaultBinary is the QEMU program used when Config.Binary is empty.
const DefaultBinary = "qemu-system-x86_64"

// Config describes one VM. Paths may contain any character; Args escapes
// them for QEMU's option syntax. The fields from ConsoleLog on are its
// devices (Config.devices); Devices adds others.
type Config struct {
	Binary string // default DefaultBinary
	Name   string // VM name (shown in thread names with debug-threads=on)
	Accel  Accel  // "" = TCG
	// TCGThread is TCG's threading: "" (QEMU's default: one host thread
	// per vCPU where the guest supports it, as for x86), "multi" or
	// "single" (all vCPUs round-robin on one host thread).
	TCGThread string
	CPUs      int    // vCPUs; 0 = 1
	MemoryMiB int    // 0 = 512
	Kernel    string // bzImage path
	// Firmware is the firmware image (-bios): a path or a file name
	// QEMU finds in its data directory; "" = QEMU's default, SeaBIOS.
	// Guests under TCG boot through Qboot where QEMU has it
	// (TCGFirmware).
	Firmware string
	Initrd   string // initramfs path ("" = none)
	// Append is the kernel command line before the devices' pieces
	// (Cmdline).
	Append string
	// Nested is the virtualization flag ("vmx" or "svm") the guest's CPU
	// must show so it can run KVM itself (a lab VM's guests): under KVM,
	// -cpu host,+FLAG ("" = -cpu host as it is).
	Nested string
	// NoSVM hides, under TCG, the AMD SVM that -cpu max emulates
	// (-cpu max,svm=off): a lab VM's kernel then runs no KVM of its own on
	// the emulated SVM, and its nested guests run under TCG, as plan says
	// (runner.NestedKVM). KVM on TCG's SVM crashed Debian's 6.1 and 6.12
	// lab kernels in CI: an int3 oops in __schedule right after kvm_amd
	// loaded, a soft lockup of the lab's init while loading it, and a reset
	// after "Unhandled WRMSR(0xc0010007)" while a nested guest ran.
	NoSVM bool

	// ConsoleLog receives the serial console (ttyS0); "" = discarded.
	ConsoleLog string
	// QMPSocket is the unix socket path of the QMP monitor (required by Launch).
	QMPSocket string
	// AgentSocket is the unix socket path of the agent's virtio-serial
	// port; "" = no agent port.
	AgentSocket string
	NICs        []NIC
	Shares      []Share // host directories shared over 9p
	// VsockCID, when not 0, gives the guest a vhost-vsock-pci device with
	// this context ID (MinGuestCID or more; the host reaches the guest at
	// it, the guest the host at CID 2). Needs /dev/vhost-vsock (module
	// vhost_vsock): see CheckVsock.
	VsockCID uint32
	// Devices are further devices, after those above.
	Devices []Device
	// Extra arguments appended verbatim, last.
	Extra []string
	// Incoming starts QEMU paused, waiting for a saved guest state
	// (LoadState) instead of booting: -S -incoming defer.
	Incoming bool
}

// Device is one piece of a VM's hardware: the QEMU arguments that make
// it and the kernel command line pieces its guest needs for it.
type Device interface {
	QEMUArgs() []string
	KernelArgs() []string
}

// NIC is a virtio-net NIC backed by an existing tap device.
type NIC struct {
	Tap    string // tap ifname (must exist in QEMU's network namespace)
	MAC    string // guest MAC, e.g. 52:54:00:12:34:56
	Vhost  bool   // vhost=on (needs /dev/vhost-net)
	Queues int    // 0 or 1 = single queue; N > 1 = multi-queue tap and mq virtio-net
	// Kernel are the guest's kernel parameters for this NIC (the agent's
	// vnb.* address settings).
	Kernel []string
}

// Share is a host directory exported to the guest over virtio-9p.
type Share struct {
	Tag      string // mount_tag
	Path     string
	ReadOnly bool
}

// escape doubles commas, QEMU's escape inside option values.
func escape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// Args returns the QEMU argv (program first) for c: the machine, the
// kernel and its command line (Cmdline), then each device's arguments.
func Args(c Config) []string {
	bin := c.Binary
	if bin == "" {
		bin = DefaultBinary
	}
	a := []string{bin,
		"-name", escape(c.Name) + ",debug-threads=on",
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
	}
	a = append(a, c.machine()...)
	if c.Firmware != "" {
		a = append(a, "-bios", c.Firmware)
	}
	if c.Kernel != "" {
		a = append(a, "-kernel", c.Kernel)
		// -initrd and -append are only valid with -kernel.
		if c.Initrd != "" {
			a = append(a, "-initrd", c.Initrd)
		}
		if cl := Cmdline(c); cl != "" {
			a = append(a, "-append", cl)
		}
	}
	for _, d := range c.devices() {
		a = append(a, d.QEMUArgs()...)
	}
	if c.Incoming {
		a = append(a, "-S", "-incoming", "defer")
	}
	return a
}

// machine is the accelerator, CPU, vCPUs and memory.
func (c Config) machine() []string {
	var a []string
	if c.Accel == KVM {
		cpu := "host"
		if c.Nested != "" {
			cpu += ",+" + c.Nested
		}
		a = append(a, "-accel", "kvm", "-cpu", cpu)
	} else {
		tcg := "tcg"
		if c.TCGThread != "" {
			tcg += ",thread=" + c.TCGThread
		}
		cpu := "max"
		if c.NoSVM {
			cpu += ",svm=off"
		}
		a = append(a, "-accel", tcg, "-cpu", cpu)
	}
	cpus, mem := max(c.CPUs, 1), c.MemoryMiB
	if mem <= 0 {
		mem = 512
	}
	return append(a, "-smp", strconv.Itoa(cpus), "-m", strconv.Itoa(mem))
}

// Cmdline is the kernel command line of c: Append, then each device's
// pieces.
func Cmdline(c Config) string {
	parts := []string{c.Append}
	for _, d := range c.devices() {
		parts = append(parts, d.KernelArgs()...)
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// devices are c's devices in the order of their arguments.
func (c Config) devices() []Device {
	ds := []Device{serialConsole(c.ConsoleLog)}
	if c.QMPSocket != "" {
		ds = append(ds, monitor(c.QMPSocket))
	}
	if c.AgentSocket != "" {
		ds = append(ds, agentPort(c.AgentSocket))
	}
	for i, n := range c.NICs {
		ds = append(ds, nicDevice{n, i})
	}
	for i, s := range c.Shares {
		ds = append(ds, shareDevice{s, i})
	}
	if c.VsockCID != 0 {
		ds = append(ds, vsockDevice(c.VsockCID))
	}
	ds = append(ds, c.Devices...)
	return append(ds, RawArgs(c.Extra))
}

// serialConsole is ttyS0 into a log file ("" = discarded).
type serialConsole string

func (s serialConsole) QEMUArgs() []string {
	if s == "" {
		return []string{"-serial", "null"}
	}
	return []string{"-chardev", "file,id=console,path=" + escape(string(s)), "-serial", "chardev:console"}
}
func (serialConsole) KernelArgs() []string { return nil }

// monitor is the QMP monitor on a unix socket.
type monitor string

func (m monitor) QEMUArgs() []string {
	return []string{"-chardev", "socket,id=qmp,path=" + escape(string(m)) + ",server=on,wait=off", "-mon", "chardev=qmp,mode=control"}
}
func (monitor) KernelArgs() []string { return nil }

// agentPort is the guest agent's virtio-serial port
// (vmimages.AgentPortName) on a unix socket.
type agentPort string

func (p agentPort) QEMUArgs() []string {
	return []string{"-device", "virtio-serial-pci,id=vser0",
		"-chardev", "socket,id=agent,path=" + escape(string(p)) + ",server=on,wait=off",
		"-device", "virtserialport,bus=vser0.0,chardev=agent,name=" + vmimages.AgentPortName}
}
func (agentPort) KernelArgs() []string { return nil }

// nicDevice is NIC number i.
type nicDevice struct {
	NIC
	i int
}

func (n nicDevice) QEMUArgs() []string {
	id := "n" + strconv.Itoa(n.i)
	nd := "tap,id=" + id + ",ifname=" + escape(n.Tap) + ",script=no,downscript=no,vhost=" + onOff(n.Vhost)
	dev := "virtio-net-pci,netdev=" + id
	if n.MAC != "" {
		dev += ",mac=" + n.MAC
	}
	if n.Queues > 1 {
		nd += ",queues=" + strconv.Itoa(n.Queues)
		dev += fmt.Sprintf(",mq=on,vectors=%d", 2*n.Queues+2)
	}
	return []string{"-netdev", nd, "-device", dev}
}
func (n nicDevice) KernelArgs() []string { return n.Kernel }

// shareDevice is Share number i.
type shareDevice struct {
	Share
	i int
}

func (s shareDevice) QEMUArgs() []string {
	id := "fs" + strconv.Itoa(s.i)
	fs := "local,id=" + id + ",path=" + escape(s.Path) + ",security_model=none,multidevs=remap"
	if s.ReadOnly {
		fs += ",readonly=on"
	}
	return []string{"-fsdev", fs, "-device", "virtio-9p-pci,fsdev=" + id + ",mount_tag=" + escape(s.Tag)}
}
func (shareDevice) KernelArgs() []string { return nil }

// vsockDevice is a vhost-vsock-pci device with the guest's context ID.
type vsockDevice uint32

func (v vsockDevice) QEMUArgs() []string {
	return []string{"-device", "vhost-vsock-pci,guest-cid=" + strconv.FormatUint(uint64(v), 10)}
}
func (vsockDevice) KernelArgs() []string { return nil }

// RawArgs are QEMU arguments passed as they are (a workload's, a debug
// monitor).
type RawArgs []string

func (r RawArgs) QEMUArgs() []string { return r }
func (RawArgs) KernelArgs() []string { return nil }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
