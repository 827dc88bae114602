package qemu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The KVM API used to run a tiny guest (linux/kvm.h, x86-64). Ioctl
// numbers are _IO/_IOR/_IOW(KVMIO = 0xAE, nr, size).
const (
	kvmGetAPIVersion       = 0xAE00
	kvmCreateVM            = 0xAE01
	kvmGetVCPUMmapSize     = 0xAE04
	kvmCreateVCPU          = 0xAE41
	kvmSetUserMemoryRegion = 0x4020AE46 // _IOW(KVMIO, 0x46, struct kvm_userspace_memory_region)
	kvmRun                 = 0xAE80
	kvmSetRegs             = 0x4090AE82 // _IOW(KVMIO, 0x82, struct kvm_regs)
	kvmGetSregs            = 0x8138AE83 // _IOR(KVMIO, 0x83, struct kvm_sregs)
	kvmSetSregs            = 0x4138AE84 // _IOW(KVMIO, 0x84, struct kvm_sregs)

	kvmAPIVersion = 12

	kvmExitIO        = 2
	kvmExitHLT       = 5
	kvmExitFailEntry = 9
	kvmExitInternal  = 17
	kvmExitIOOut     = 1
)

// kvmUserspaceMemoryRegion is struct kvm_userspace_memory_region.
type kvmUserspaceMemoryRegion struct {
	Slot          uint32
	Flags         uint32
	GuestPhysAddr uint64
	MemorySize    uint64
	UserspaceAddr uint64
}

// kvmRegs is struct kvm_regs (x86-64).
type kvmRegs struct {
	RAX, RBX, RCX, RDX, RSI, RDI, RSP, RBP uint64
	R8, R9, R10, R11, R12, R13, R14, R15   uint64
	RIP, RFLAGS                            uint64
}

// kvmSegment is struct kvm_segment.
type kvmSegment struct {
	Base                            uint64
	Limit                           uint32
	Selector                        uint16
	Type, Present, DPL, DB, S, L, G uint8
	AVL, Unusable, Padding          uint8
}

// kvmDtable is struct kvm_dtable.
type kvmDtable struct {
	Base    uint64
	Limit   uint16
	Padding [3]uint16
}

// kvmSregs is struct kvm_sregs (x86-64).
type kvmSregs struct {
	CS, DS, ES, FS, GS, SS, TR, LDT kvmSegment
	GDT, IDT                        kvmDtable
	CR0, CR2, CR3, CR4, CR8, EFER   uint64
	APICBase                        uint64
	InterruptBitmap                 [4]uint64
}

// Tiny guest: real mode at guestAddr, "mov al, 0x42; out 0x10, al; hlt".
// Its first exit must be an 8-bit OUT of 0x42 to port 0x10: the vCPU really
// executed guest code.
const (
	guestAddr = 0x1000
	guestPort = 0x10
	guestByte = 0x42
)

var tinyGuest = []byte{0xB0, guestByte, 0xE6, guestPort, 0xF4}

// Offsets in struct kvm_run (x86-64): exit_reason, then the io member of
// the exit union at 32 (direction, size, port, count, data_offset).
const (
	runExitReason   = 8
	runIODirection  = 32
	runIOSize       = 33
	runIOPort       = 34
	runIOCount      = 36
	runIODataOffset = 40
)

// vcpuTimeout bounds the tiny guest's run: a vCPU that does not exit by
// then is interrupted and KVM declared unusable.
var vcpuTimeout = 2 * time.Second

// RunTinyGuest creates a VM on dev (the KVM node), gives it one page of
// memory with a few real-mode instructions and runs one vCPU to its first
// exit, which must be the guest's OUT. A KVM that opens but cannot run a
// standard guest (KVM-PVM, a broken nested setup) fails here.
func RunTinyGuest(dev string) error {
	fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dev, err)
	}
	defer unix.Close(fd)
	v, err := ioctl(fd, kvmGetAPIVersion, 0)
	if err != nil {
		return fmt.Errorf("KVM_GET_API_VERSION: %w", err)
	}
	if v != kvmAPIVersion {
		return fmt.Errorf("KVM API version %d, want %d", v, kvmAPIVersion)
	}
	vmfd, err := ioctl(fd, kvmCreateVM, 0)
	if err != nil {
		return fmt.Errorf("KVM_CREATE_VM: %w", err)
	}
	defer unix.Close(vmfd)
	mem, err := unix.Mmap(-1, 0, 0x1000, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("guest memory: %w", err)
	}
	defer unix.Munmap(mem)
	copy(mem, tinyGuest)
	region := kvmUserspaceMemoryRegion{GuestPhysAddr: guestAddr, MemorySize: uint64(len(mem)),
		UserspaceAddr: uint64(uintptr(unsafe.Pointer(&mem[0])))}
	if _, err := ioctl(vmfd, kvmSetUserMemoryRegion, uintptr(unsafe.Pointer(&region))); err != nil {
		return fmt.Errorf("KVM_SET_USER_MEMORY_REGION: %w", err)
	}
	vcpufd, err := ioctl(vmfd, kvmCreateVCPU, 0)
	if err != nil {
		return fmt.Errorf("KVM_CREATE_VCPU: %w", err)
	}
	defer unix.Close(vcpufd)
	size, err := ioctl(fd, kvmGetVCPUMmapSize, 0)
	if err != nil {
		return fmt.Errorf("KVM_GET_VCPU_MMAP_SIZE: %w", err)
	}
	if size < runIODataOffset+8 {
		return fmt.Errorf("KVM_GET_VCPU_MMAP_SIZE: %d bytes is too small", size)
	}
	run, err := unix.Mmap(vcpufd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map kvm_run: %w", err)
	}
	defer unix.Munmap(run)
	var sregs kvmSregs
	if _, err := ioctl(vcpufd, kvmGetSregs, uintptr(unsafe.Pointer(&sregs))); err != nil {
		return fmt.Errorf("KVM_GET_SREGS: %w", err)
	}
	sregs.CS.Base, sregs.CS.Selector = 0, 0
	if _, err := ioctl(vcpufd, kvmSetSregs, uintptr(unsafe.Pointer(&sregs))); err != nil {
		return fmt.Errorf("KVM_SET_SREGS: %w", err)
	}
	regs := kvmRegs{RIP: guestAddr, RFLAGS: 2}
	if _, err := ioctl(vcpufd, kvmSetRegs, uintptr(unsafe.Pointer(&regs))); err != nil {
		return fmt.Errorf("KVM_SET_REGS: %w", err)
	}
	if err := runVCPU(vcpufd, run); err != nil {
		return err
	}
	return checkTinyExit(run)
}

// runVCPU issues KVM_RUN on a locked thread, interrupting it (immediate
// exit and a signal) when the vCPU does not exit within vcpuTimeout.
func runVCPU(vcpufd int, run []byte) error {
	type result struct{ err error }
	done := make(chan result, 1)
	tidc := make(chan int, 1)
	var stopped atomic.Bool
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tidc <- unix.Gettid()
		var err error
		for range 3 { // a signal may interrupt the first entries
			if _, err = ioctl(vcpufd, kvmRun, 0); !errors.Is(err, unix.EINTR) {
				break
			}
			if stopped.Load() { // interrupted on purpose
				break
			}
		}
		done <- result{err}
	}()
	tid := <-tidc
	select {
	case r := <-done:
		if r.err != nil {
			return fmt.Errorf("KVM_RUN: %w", r.err)
		}
		return nil
	case <-time.After(vcpuTimeout):
	}
	stopped.Store(true)
	run[1] = 1 // kvm_run.immediate_exit: the next KVM_RUN returns at once
	for {
		unix.Tgkill(unix.Getpid(), tid, unix.SIGURG) // ignored by Go; ends KVM_RUN with EINTR
		select {
		case <-done:
			return fmt.Errorf("KVM_RUN: the vCPU did not exit within %v", vcpuTimeout)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkTinyExit checks that kvm_run (run) holds the tiny guest's OUT.
func checkTinyExit(run []byte) error {
	reason := binary.NativeEndian.Uint32(run[runExitReason:])
	switch reason {
	case kvmExitIO:
	case kvmExitFailEntry:
		return errors.New("KVM_RUN: the vCPU failed to enter the guest (KVM_EXIT_FAIL_ENTRY)")
	case kvmExitInternal:
		return errors.New("KVM_RUN: internal error (KVM_EXIT_INTERNAL_ERROR)")
	case kvmExitHLT:
		return errors.New("KVM_RUN: the vCPU halted without executing the guest's OUT")
	default:
		return fmt.Errorf("KVM_RUN: exit reason %d, want KVM_EXIT_IO (%d)", reason, kvmExitIO)
	}
	dir, size := run[runIODirection], run[runIOSize]
	port := binary.NativeEndian.Uint16(run[runIOPort:])
	count := binary.NativeEndian.Uint32(run[runIOCount:])
	off := binary.NativeEndian.Uint64(run[runIODataOffset:])
	if dir != kvmExitIOOut || size != 1 || port != guestPort || count != 1 {
		return fmt.Errorf("KVM_RUN: I/O exit dir %d size %d port %#x count %d, want an OUT of 1 byte to port %#x", dir, size, port, count, guestPort)
	}
	if off >= uint64(len(run)) {
		return fmt.Errorf("KVM_RUN: I/O data offset %d outside kvm_run (%d bytes)", off, len(run))
	}
	if b := run[off]; b != guestByte {
		return fmt.Errorf("KVM_RUN: the guest wrote %#x, want %#x", b, guestByte)
	}
	return nil
}

func ioctl(fd int, req, arg uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
