package qemu

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// kvmCreateVM is the KVM_CREATE_VM ioctl (_IO(KVMIO, 0x01)).
const kvmCreateVM = 0xAE01

// DetectAccel returns KVM when KVM is really usable (the CPU advertises
// vmx or svm and KVM_CREATE_VM succeeds on /dev/kvm), else TCG with the
// reason KVM is not used. The node existing is not enough.
func DetectAccel() (Accel, string) {
	if err := kvmUsable("/proc/cpuinfo", "/dev/kvm"); err != nil {
		return TCG, err.Error()
	}
	return KVM, ""
}

func kvmUsable(cpuinfo, dev string) error {
	f, err := os.Open(cpuinfo)
	if err != nil {
		return fmt.Errorf("read %s: %w", cpuinfo, err)
	}
	defer f.Close()
	virt := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && !virt {
		line := sc.Text()
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		for _, fl := range strings.Fields(line) {
			if fl == "vmx" || fl == "svm" {
				virt = true
			}
		}
	}
	if !virt {
		return errors.New("the CPU has no vmx/svm flag (no hardware virtualization exposed)")
	}
	fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dev, err)
	}
	defer unix.Close(fd)
	vm, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), kvmCreateVM, 0)
	if errno != 0 {
		return fmt.Errorf("KVM_CREATE_VM on %s: %w", dev, errno)
	}
	unix.Close(int(vm))
	return nil
}

// VhostNetPath is the vhost-net device node.
const VhostNetPath = "/dev/vhost-net"

// CapabilityError is a missing host capability; the fix is on the host or
// in the scenario. It maps to exit code 2.
type CapabilityError struct{ Msg string }

func (e *CapabilityError) Error() string { return e.Msg }

// ExitCode returns 2 (missing capability).
func (e *CapabilityError) ExitCode() int { return 2 }

// CheckVhost refuses a config that asks for vhost=on when /dev/vhost-net
// does not exist: QEMU 7.2 would print a warning and then abort with an
// assertion (exit 134).
func CheckVhost(c Config) error { return checkVhost(c, VhostNetPath) }

func checkVhost(c Config, dev string) error {
	need := false
	for _, n := range c.NICs {
		need = need || n.Vhost
	}
	if !need {
		return nil
	}
	if _, err := os.Stat(dev); err != nil {
		return &CapabilityError{Msg: fmt.Sprintf("backend tap+vhost needs %s, which this kernel does not provide "+
			"(QEMU would abort with an assertion); run 'vnetbench doctor', use backend: tap, "+
			"or run the scenario on a VM-hosted kernel that has vhost_net (lab mode)", dev)}
	}
	return nil
}
