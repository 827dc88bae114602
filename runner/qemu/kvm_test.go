package qemu

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
)

// fakeKVMHost describes a machine: its cpuinfo flags, whether /dev/kvm
// exists, the loaded modules with their nested parameter ("" = the module
// has no such file), and what a vCPU run gives.
func fakeKVMHost(t *testing.T, flags string, dev bool, modules map[string]string, vcpu error) (KVMHost, *int) {
	t.Helper()
	dir := t.TempDir()
	cpuinfo := filepath.Join(dir, "cpuinfo")
	os.WriteFile(cpuinfo, []byte("processor\t: 0\nvendor_id\t: X\nflags\t\t: fpu vme "+flags+" sse2\n\nprocessor\t: 1\nflags\t\t: fpu "+flags+"\n"), 0o644)
	h := KVMHost{CPUInfo: cpuinfo, Dev: filepath.Join(dir, "kvm"), SysModule: filepath.Join(dir, "module")}
	if dev {
		os.WriteFile(h.Dev, nil, 0o644)
	}
	for m, nested := range modules {
		p := filepath.Join(h.SysModule, m, "parameters")
		os.MkdirAll(p, 0o755)
		if nested != "" {
			os.WriteFile(filepath.Join(p, "nested"), []byte(nested+"\n"), 0o644)
		}
	}
	calls := new(int)
	h.RunVCPU = func(d string) error {
		*calls++
		if d != h.Dev {
			t.Errorf("vCPU run on %s, want %s", d, h.Dev)
		}
		return vcpu
	}
	return h, calls
}

// TestKVMProbe: KVM is usable only when a vCPU really ran; the vendor
// module follows the CPU flag and nested is read from it. PVM-style hosts
// (a /dev/kvm on a CPU without vmx/svm, one served by kvm_pvm, one whose
// vCPU does not run a standard guest) are TCG hosts.
func TestKVMProbe(t *testing.T) {
	pvmRun := errors.New("KVM_RUN: internal error (KVM_EXIT_INTERNAL_ERROR)")
	for _, tc := range []struct {
		name      string
		flags     string
		dev       bool
		modules   map[string]string
		vcpu      error
		usable    bool
		vendor    string
		nested    string
		nestedOn  bool
		why       string // substring when not usable
		wantCalls int
	}{
		{"intel nested Y", "vmx", true, map[string]string{"kvm": "", "kvm_intel": "Y"}, nil, true, "kvm_intel", "Y", true, "", 1},
		{"intel nested N", "vmx", true, map[string]string{"kvm": "", "kvm_intel": "N"}, nil, true, "kvm_intel", "N", false, "", 1},
		{"amd nested 1", "svm", true, map[string]string{"kvm": "", "kvm_amd": "1"}, nil, true, "kvm_amd", "1", true, "", 1},
		{"amd nested 0", "svm", true, map[string]string{"kvm": "", "kvm_amd": "0"}, nil, true, "kvm_amd", "0", false, "", 1},
		{"amd without nested parameter", "svm", true, map[string]string{"kvm_amd": ""}, nil, true, "kvm_amd", "", false, "", 1},
		{"pvm: node but no vmx/svm", "hypervisor", true, map[string]string{"kvm": "", "kvm_pvm": ""}, nil, false, "", "", false, "no vmx/svm", 0},
		{"pvm: vmx shown, node served by kvm_pvm", "vmx hypervisor", true, map[string]string{"kvm": "", "kvm_pvm": ""}, nil, false, "kvm_intel", "", false, "kvm_intel is not loaded", 0},
		{"pvm: vCPU does not run a standard guest", "vmx", true, map[string]string{"kvm_intel": "Y"}, pvmRun, false, "kvm_intel", "Y", false, "did not run", 1},
		{"no node", "svm", false, map[string]string{"kvm_amd": "1"}, nil, false, "kvm_amd", "1", false, "no ", 0},
		{"no flag, no node", "", false, nil, nil, false, "", "", false, "no vmx/svm", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, calls := fakeKVMHost(t, tc.flags, tc.dev, tc.modules, tc.vcpu)
			st := h.Probe()
			if st.Usable != tc.usable || st.Vendor != tc.vendor || st.Nested != tc.nested || st.NestedOn() != tc.nestedOn {
				t.Errorf("probe = %+v (nested on %v), want usable %v vendor %q nested %q on %v", st, st.NestedOn(), tc.usable, tc.vendor, tc.nested, tc.nestedOn)
			}
			if *calls != tc.wantCalls {
				t.Errorf("vCPU runs = %d, want %d", *calls, tc.wantCalls)
			}
			if tc.usable {
				if st.Why != "" || st.Accel() != KVM {
					t.Errorf("usable but why %q, accel %s", st.Why, st.Accel())
				}
				return
			}
			if !strings.Contains(st.Why, tc.why) || st.Accel() != TCG {
				t.Errorf("why = %q (accel %s), want it to contain %q", st.Why, st.Accel(), tc.why)
			}
			if tc.vcpu != nil && !strings.Contains(st.Why, tc.vcpu.Error()) {
				t.Errorf("why %q does not carry the vCPU's error", st.Why)
			}
		})
	}
}

func TestResolveAccel(t *testing.T) {
	kvm := KVMStatus{Usable: true, Flag: "vmx", Vendor: ModuleKVMIntel}
	tcg := KVMStatus{Why: "the CPU has no vmx/svm flag"}
	for _, tc := range []struct {
		want  string
		st    KVMStatus
		accel Accel
		warn  string
		err   error
	}{
		{"auto", kvm, KVM, "", nil},
		{"", kvm, KVM, "", nil},
		{"tcg", kvm, TCG, "", nil},
		{"kvm", kvm, KVM, "", nil},
		{"auto", tcg, TCG, "KVM is not usable (the CPU has no vmx/svm flag)", nil},
		{"tcg", tcg, TCG, "", nil},
		{"kvm", tcg, "", "", fault.ErrCapability},
		{"hvf", kvm, "", "", fault.ErrInput},
	} {
		a, warn, err := ResolveAccel(tc.want, tc.st)
		if a != tc.accel || !strings.Contains(warn, tc.warn) || (tc.warn == "") != (warn == "") || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("ResolveAccel(%q, usable %v) = %q, %q, %v; want %q, %q, %v", tc.want, tc.st.Usable, a, warn, err, tc.accel, tc.warn, tc.err)
		}
		if tc.err == fault.ErrCapability && !strings.Contains(err.Error(), tc.st.Why) {
			t.Errorf("kvm refused without the reason: %v", err)
		}
	}
}

func TestCheckAccel(t *testing.T) {
	for _, tc := range []struct {
		want Accel
		got  KVMState
		ok   bool
	}{
		{KVM, KVMState{Enabled: true, Present: true}, true},
		{KVM, KVMState{Enabled: false, Present: true}, false},
		{KVM, KVMState{}, false},
		{TCG, KVMState{Enabled: false, Present: true}, true},
		{TCG, KVMState{}, true},
		{TCG, KVMState{Enabled: true, Present: true}, false},
	} {
		if err := CheckAccel(tc.want, tc.got); (err == nil) != tc.ok {
			t.Errorf("CheckAccel(%s, %+v) = %v, want ok %v", tc.want, tc.got, err, tc.ok)
		}
	}
}

// TestKVMABI checks the structures against the sizes encoded in the ioctl
// numbers (linux/kvm.h, x86-64), and the numbers against _IO/_IOR/_IOW.
func TestKVMABI(t *testing.T) {
	ioc := func(dir, nr, size uintptr) uintptr { return dir<<30 | size<<16 | 0xAE<<8 | nr }
	const none, write, read = 0, 1, 2
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"KVM_GET_API_VERSION", kvmGetAPIVersion, ioc(none, 0x00, 0)},
		{"KVM_CREATE_VM", kvmCreateVM, ioc(none, 0x01, 0)},
		{"KVM_GET_VCPU_MMAP_SIZE", kvmGetVCPUMmapSize, ioc(none, 0x04, 0)},
		{"KVM_CREATE_VCPU", kvmCreateVCPU, ioc(none, 0x41, 0)},
		{"KVM_SET_USER_MEMORY_REGION", kvmSetUserMemoryRegion, ioc(write, 0x46, unsafe.Sizeof(kvmUserspaceMemoryRegion{}))},
		{"KVM_RUN", kvmRun, ioc(none, 0x80, 0)},
		{"KVM_SET_REGS", kvmSetRegs, ioc(write, 0x82, unsafe.Sizeof(kvmRegs{}))},
		{"KVM_GET_SREGS", kvmGetSregs, ioc(read, 0x83, unsafe.Sizeof(kvmSregs{}))},
		{"KVM_SET_SREGS", kvmSetSregs, ioc(write, 0x84, unsafe.Sizeof(kvmSregs{}))},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %#x, want %#x", tc.name, tc.got, tc.want)
		}
	}
	// Sizes from linux/kvm.h (x86-64).
	if s := unsafe.Sizeof(kvmSregs{}); s != 312 {
		t.Errorf("sizeof(kvm_sregs) = %d, want 312", s)
	}
	if s := unsafe.Sizeof(kvmRegs{}); s != 144 {
		t.Errorf("sizeof(kvm_regs) = %d, want 144", s)
	}
	if s := unsafe.Sizeof(kvmUserspaceMemoryRegion{}); s != 32 {
		t.Errorf("sizeof(kvm_userspace_memory_region) = %d, want 32", s)
	}
	if s := unsafe.Sizeof(kvmSegment{}); s != 24 {
		t.Errorf("sizeof(kvm_segment) = %d, want 24", s)
	}
	// The guest: mov al, 0x42; out 0x10, al; hlt.
	if string(tinyGuest) != "\xb0\x42\xe6\x10\xf4" {
		t.Errorf("tiny guest = % x", tinyGuest)
	}
}

// kvmRunExit is a kvm_run page after an exit.
func kvmRunExit(reason uint32, dir, size uint8, port uint16, count uint32, data byte) []byte {
	run := make([]byte, 4096)
	binary.NativeEndian.PutUint32(run[runExitReason:], reason)
	run[runIODirection], run[runIOSize] = dir, size
	binary.NativeEndian.PutUint16(run[runIOPort:], port)
	binary.NativeEndian.PutUint32(run[runIOCount:], count)
	binary.NativeEndian.PutUint64(run[runIODataOffset:], 2048)
	run[2048] = data
	return run
}

func TestCheckTinyExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  []byte
		err  string
	}{
		{"the guest's OUT", kvmRunExit(kvmExitIO, kvmExitIOOut, 1, guestPort, 1, guestByte), ""},
		{"halted first", kvmRunExit(kvmExitHLT, 0, 0, 0, 0, 0), "halted"},
		{"failed entry (PVM-style)", kvmRunExit(kvmExitFailEntry, 0, 0, 0, 0, 0), "FAIL_ENTRY"},
		{"internal error", kvmRunExit(kvmExitInternal, 0, 0, 0, 0, 0), "INTERNAL_ERROR"},
		{"other exit", kvmRunExit(0, 0, 0, 0, 0, 0), "exit reason 0"},
		{"an IN", kvmRunExit(kvmExitIO, 0, 1, guestPort, 1, guestByte), "want an OUT"},
		{"another port", kvmRunExit(kvmExitIO, kvmExitIOOut, 1, 0x80, 1, guestByte), "port 0x80"},
		{"another byte", kvmRunExit(kvmExitIO, kvmExitIOOut, 1, guestPort, 1, 0), "wrote 0x0"},
	} {
		err := checkTinyExit(tc.run)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestRunTinyGuestNotKVM: a node that is not KVM fails at the first ioctl
// with the ioctl named.
func TestRunTinyGuestNotKVM(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kvm")
	os.WriteFile(p, nil, 0o644)
	if err := RunTinyGuest(p); err == nil || !strings.Contains(err.Error(), "KVM_GET_API_VERSION") {
		t.Errorf("regular file: err = %v", err)
	}
	if err := RunTinyGuest(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "open") {
		t.Errorf("missing node: err = %v", err)
	}
}

// TestFindVhostWorkers reads /proc trees of the kernels users run: 6.4+
// (vhost workers are threads of QEMU, one per queue pair, plus one per
// vhost-vsock device), before 6.4 (kernel threads vhost-PID), none (a
// plain tap), and another QEMU's kthreads on the same host.
func TestFindVhostWorkers(t *testing.T) {
	qemuThreads := []proc.Thread{{TID: 4100, Name: "qemu-system-x86"}, {TID: 4101, Name: "qemu-system-x86"}, {TID: 4102, Name: "CPU 0/KVM"}, {TID: 4103, Name: "CPU 1/KVM"}}
	for _, tc := range []struct {
		name  string
		setup func(fp *proc.FakeProc)
		want  VhostWorkers
		kind  string
	}{
		{"6.4+: one in-process worker per queue pair", func(fp *proc.FakeProc) {
			fp.Process(4100, "qemu-system-x86", append(qemuThreads,
				proc.Thread{TID: 4110, Name: "vhost-4100"}, proc.Thread{TID: 4111, Name: "vhost-4100"},
				proc.Thread{TID: 4112, Name: "vhost-4100"}, proc.Thread{TID: 4113, Name: "vhost-4100"})...)
		}, VhostWorkers{TIDs: []int{4110, 4111, 4112, 4113}, InProcess: true}, "in-process"},
		{"pre-6.4: kernel threads", func(fp *proc.FakeProc) {
			fp.Process(4100, "qemu-system-x86", qemuThreads...)
			fp.KernelThread(4120, "vhost-4100", 9000, 0)
			fp.KernelThread(4121, "vhost-4100", 9000, 0)
			fp.KernelThread(3000, "vhost-2999", 100, 0) // another VM's
		}, VhostWorkers{TIDs: []int{4120, 4121}}, "kthread"},
		{"owner is a thread other than the main one", func(fp *proc.FakeProc) {
			fp.Process(4100, "qemu-system-x86", qemuThreads...)
			fp.KernelThread(4120, "vhost-4101", 9000, 0)
		}, VhostWorkers{TIDs: []int{4120}}, "kthread"},
		{"no vhost", func(fp *proc.FakeProc) {
			fp.Process(4100, "qemu-system-x86", qemuThreads...)
			fp.KernelThread(3000, "vhost-2999", 100, 0)
		}, VhostWorkers{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := proc.NewFakeProc(t.TempDir())
			tc.setup(fp)
			if err := fp.Err(); err != nil {
				t.Fatal(err)
			}
			got := FindVhostWorkers(fp.FS(), 4100)
			if !slices.Equal(got.TIDs, tc.want.TIDs) || got.InProcess != tc.want.InProcess || got.Kind() != tc.kind {
				t.Errorf("FindVhostWorkers = %+v (%q), want %+v (%q)", got, got.Kind(), tc.want, tc.kind)
			}
		})
	}
}
