// Package qemu builds QEMU command lines, starts QEMU through a
// proc.Executor, and talks to it over QMP (readiness, vCPU thread ids,
// clean quit). It captures the guest console to a file and exposes the
// agent's virtio-serial socket.
//
// Args is a pure function (golden-tested); Launch does the starting. The
// package does not create tap devices or namespaces (runner does) and
// does not speak the guest agent protocol (vmimages does): it only hands
// out the agent socket's connection.
package qemu

import (
	"fmt"
	"strconv"
	"strings"
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

// AgentPortName is the virtio-serial port name the guest agent opens
// (/dev/virtio-ports/AgentPortName in the guest); the same as vmimages.AgentPortName.
const AgentPortName = "vnb.agent"

// DefaultBinary is the QEMU program used when Config.Binary is empty.
const DefaultBinary = "qemu-system-x86_64"

// Config describes one VM. Paths may contain any character; Args escapes
// them for QEMU's option syntax.
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
	Initrd    string // initramfs path ("" = none)
	Append    string // kernel command line
	NICs      []NIC
	Shares    []Share // host directories shared over 9p
	// QMPSocket is the unix socket path of the QMP monitor (required by Launch).
	QMPSocket string
	// ConsoleLog receives the serial console (ttyS0); "" = discarded.
	ConsoleLog string
	// AgentSocket is the unix socket path of the agent's virtio-serial
	// port; "" = no agent port.
	AgentSocket string
	// VsockCID, when not 0, gives the guest a vhost-vsock-pci device with
	// this context ID (MinGuestCID or more; the host reaches the guest at
	// it, the guest the host at CID 2). Needs /dev/vhost-vsock (module
	// vhost_vsock): see CheckVsock.
	VsockCID uint32
	// Nested is the virtualization flag ("vmx" or "svm") the guest's CPU
	// must show so it can run KVM itself (a lab VM's guests): under KVM,
	// -cpu host,+FLAG ("" = -cpu host as it is).
	Nested string
	// Extra arguments appended verbatim.
	Extra []string
}

// NIC is a virtio-net NIC backed by an existing tap device.
type NIC struct {
	Tap    string // tap ifname (must exist in QEMU's network namespace)
	MAC    string // guest MAC, e.g. 52:54:00:12:34:56
	Vhost  bool   // vhost=on (needs /dev/vhost-net)
	Queues int    // 0 or 1 = single queue; N > 1 = multi-queue tap and mq virtio-net
}

// Share is a host directory exported to the guest over virtio-9p.
type Share struct {
	Tag      string // mount_tag
	Path     string
	ReadOnly bool
}

// escape doubles commas, QEMU's escape inside option values.
func escape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// Args returns the QEMU argv (program first) for c.
func Args(c Config) []string {
	bin := c.Binary
	if bin == "" {
		bin = DefaultBinary
	}
	cpus := c.CPUs
	if cpus <= 0 {
		cpus = 1
	}
	mem := c.MemoryMiB
	if mem <= 0 {
		mem = 512
	}
	a := []string{bin,
		"-name", escape(c.Name) + ",debug-threads=on",
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
	}
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
		a = append(a, "-accel", tcg, "-cpu", "max")
	}
	a = append(a, "-smp", strconv.Itoa(cpus), "-m", strconv.Itoa(mem))
	if c.Kernel != "" {
		a = append(a, "-kernel", c.Kernel)
	}
	// -initrd and -append are only valid with -kernel.
	if c.Initrd != "" && c.Kernel != "" {
		a = append(a, "-initrd", c.Initrd)
	}
	if c.Append != "" && c.Kernel != "" {
		a = append(a, "-append", c.Append)
	}
	if c.ConsoleLog != "" {
		a = append(a, "-chardev", "file,id=console,path="+escape(c.ConsoleLog), "-serial", "chardev:console")
	} else {
		a = append(a, "-serial", "null")
	}
	if c.QMPSocket != "" {
		a = append(a, "-chardev", "socket,id=qmp,path="+escape(c.QMPSocket)+",server=on,wait=off",
			"-mon", "chardev=qmp,mode=control")
	}
	if c.AgentSocket != "" {
		a = append(a, "-device", "virtio-serial-pci,id=vser0",
			"-chardev", "socket,id=agent,path="+escape(c.AgentSocket)+",server=on,wait=off",
			"-device", "virtserialport,bus=vser0.0,chardev=agent,name="+AgentPortName)
	}
	for i, n := range c.NICs {
		id := "n" + strconv.Itoa(i)
		nd := "tap,id=" + id + ",ifname=" + escape(n.Tap) + ",script=no,downscript=no,vhost=" + onOff(n.Vhost)
		dev := "virtio-net-pci,netdev=" + id
		if n.MAC != "" {
			dev += ",mac=" + n.MAC
		}
		if n.Queues > 1 {
			nd += ",queues=" + strconv.Itoa(n.Queues)
			dev += fmt.Sprintf(",mq=on,vectors=%d", 2*n.Queues+2)
		}
		a = append(a, "-netdev", nd, "-device", dev)
	}
	for i, s := range c.Shares {
		id := "fs" + strconv.Itoa(i)
		fs := "local,id=" + id + ",path=" + escape(s.Path) + ",security_model=none,multidevs=remap"
		if s.ReadOnly {
			fs += ",readonly=on"
		}
		a = append(a, "-fsdev", fs, "-device", "virtio-9p-pci,fsdev="+id+",mount_tag="+escape(s.Tag))
	}
	if c.VsockCID != 0 {
		a = append(a, "-device", "vhost-vsock-pci,guest-cid="+strconv.FormatUint(uint64(c.VsockCID), 10))
	}
	return append(a, c.Extra...)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
