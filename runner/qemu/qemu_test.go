package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

func TestArgsGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
	}{
		{"tcg-single.golden", Config{Name: "vnb-vm0", CPUs: 2, MemoryMiB: 1024, Kernel: "/cache/vmlinuz", Firmware: "/usr/share/qemu/qboot.rom",
			Initrd: "/cache/initrd.cpio", Append: "console=ttyS0 panic=-1 vnb.ip=10.0.0.2/24",
			QMPSocket: "/run/x/qmp.sock", ConsoleLog: "/runs/a,b/console.log", AgentSocket: "/run/x/agent.sock",
			NICs: []NIC{{Tap: "vnbt0", MAC: "52:54:00:12:34:56"}}}},
		{"kvm-vhost-mq.golden", Config{Name: "vnb-vm1", Accel: KVM, CPUs: 4, Kernel: "/k", QMPSocket: "/q",
			NICs: []NIC{{Tap: "vnbt0", MAC: "52:54:00:12:34:56", Vhost: true, Queues: 4}}}},
		{"lab-9p.golden", Config{Name: "vnb-lab", Kernel: "/k", Initrd: "/i", QMPSocket: "/q",
			Shares: []Share{{Tag: "hostroot", Path: "/", ReadOnly: true}}, Extra: []string{"-snapshot"}}},
		{"vsock.golden", Config{Name: "vnb-vm0", Kernel: "/k", Initrd: "/i", QMPSocket: "/q", AgentSocket: "/a",
			NICs: []NIC{{Tap: "vnbt0", MAC: "52:54:00:12:34:56"}}, VsockCID: 4294967294, Extra: []string{"-snapshot"}}},
	} {
		got := proc.Quote(Args(tc.c)) + "\n"
		golden.Check(t, tc.name, got)
	}
}

// TestCheckVsock: reserved CIDs are bad input, a kernel without
// /dev/vhost-vsock a missing capability (exit 2, naming the module and lab
// mode), a node that is not vhost-vsock an error of its own; no CID, no
// check.
func TestCheckVsock(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "vhost-vsock")
	if err := checkVsock(Config{}, missing); err != nil {
		t.Errorf("no vsock: %v", err)
	}
	for _, cid := range []uint32{1, 2, 4294967295} {
		err := checkVsock(Config{VsockCID: cid}, missing)
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "is reserved") {
			t.Errorf("CID %d: err = %v, want bad input", cid, err)
		}
	}
	err := checkVsock(Config{VsockCID: 3}, missing)
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "vhost_vsock") || !strings.Contains(err.Error(), "lab mode") {
		t.Errorf("no device: err = %v, want a missing capability naming vhost_vsock and lab mode", err)
	}
	notDev := filepath.Join(dir, "file")
	os.WriteFile(notDev, nil, 0o644)
	err = checkVsock(Config{VsockCID: 3}, notDev)
	if err == nil || errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "claim vsock guest CID 3") {
		t.Errorf("not a vhost-vsock node: err = %v", err)
	}
}

// TestCheckVsockInUse holds a CID on the real /dev/vhost-vsock, as a
// running VM does, and expects CheckVsock to call it taken and to leave a
// free one free. Runs where vhost_vsock is loaded (a lab VM; the CI host's
// kernel has no vhost_vsock).
func TestCheckVsockInUse(t *testing.T) {
	fd, err := unix.Open(VhostVsockPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		// CI's host kernel has no vhost_vsock and cannot load modules:
		// not something CI can provide; a lab VM has it.
		testenv.NotApplicable(t, fmt.Sprintf("needs %s (module vhost_vsock): %v", VhostVsockPath, err))
	}
	defer unix.Close(fd)
	const held = 0x7ead
	v := uint64(held)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), vhostVsockSetGuestCID, uintptr(unsafe.Pointer(&v))); errno != 0 {
		t.Fatalf("hold CID %d: %v", held, errno)
	}
	if err := CheckVsock(Config{VsockCID: held}); !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("held CID: err = %v, want bad input", err)
	}
	if err := CheckVsock(Config{VsockCID: held + 1}); err != nil {
		t.Errorf("free CID: %v", err)
	}
	if err := CheckVsock(Config{VsockCID: held + 1}); err != nil {
		t.Errorf("free CID again (the probe must release it): %v", err)
	}
}

func TestCheckVhost(t *testing.T) {
	c := Config{NICs: []NIC{{Tap: "vnbt0", Vhost: true}}}
	err := checkVhost(c, filepath.Join(t.TempDir(), "vhost-net"))
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "doctor") {
		t.Errorf("err = %v", err)
	}
	c.NICs[0].Vhost = false
	if err := checkVhost(c, "/nonexistent"); err != nil {
		t.Errorf("vhost off: %v", err)
	}
}

// fakeQMP serves a scripted QMP conversation on a unix socket.
func fakeQMP(t *testing.T, replies map[string]string) string {
	t.Helper()
	return serveQMP(t, func(cmd string) string {
		r, ok := replies[cmd]
		if !ok {
			r = `{"error": {"class": "CommandNotFound", "desc": "The command ` + cmd + ` has not been found"}}`
		}
		// An event before each reply, as QEMU may send one any time.
		return `{"event": "NIC_RX_FILTER_CHANGED", "data": {}}` + "\n" + r
	})
}

// serveQMP serves one QMP client on a unix socket: QEMU's greeting, then
// reply's answer to each command it executes.
func serveQMP(t *testing.T, reply func(cmd string) string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "qmp.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte(`{"QMP": {"version": {}, "capabilities": []}}` + "\n"))
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var req struct{ Execute string }
			json.Unmarshal(sc.Bytes(), &req)
			c.Write([]byte(reply(req.Execute) + "\n"))
		}
	}()
	return path
}

func TestQMPClient(t *testing.T) {
	path := fakeQMP(t, map[string]string{
		"qmp_capabilities": `{"return": {}}`,
		"query-cpus-fast":  `{"return": [{"cpu-index": 0, "thread-id": 4242, "target": "x86_64"}, {"cpu-index": 1, "thread-id": 4243}]}`,
		"query-kvm":        `{"return": {"enabled": false, "present": true}}`,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	q, err := DialQMP(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	cpus, err := q.CPUs(ctx)
	if err != nil || len(cpus) != 2 || cpus[1].ThreadID != 4243 {
		t.Fatalf("cpus = %+v, %v", cpus, err)
	}
	// QEMU 7.2's answer under -accel tcg on a host with /dev/kvm.
	if st, err := q.KVM(ctx); err != nil || st.Enabled || !st.Present {
		t.Errorf("query-kvm = %+v, %v", st, err)
	}
	err = q.Execute(ctx, "bogus", nil, nil)
	var qe *QMPError
	if !errors.As(err, &qe) || qe.Class != "CommandNotFound" {
		t.Errorf("err = %v", err)
	}
}

func TestBootErrorCarriesConsole(t *testing.T) {
	log := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(log, []byte("line1\n\nKernel panic - not syncing: VFS: Unable to mount root fs\n"), 0o644)
	vm := &VM{Config: Config{Name: "vnb-vm0", ConsoleLog: log}}
	err := vm.BootError("wait for agent", errors.New("timeout after 60s"))
	want := "boot vnb-vm0: wait for agent: timeout after 60s (last console lines: line1 | Kernel panic - not syncing: VFS: Unable to mount root fs)"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

// A real QEMU without a kernel sits in the firmware: enough to test
// Launch, QMP vCPU thread ids, thread names and Quit.
func TestLaunchRealQEMU(t *testing.T) {
	testenv.NeedCommand(t, DefaultBinary, "qemu-system-x86")
	dir := t.TempDir()
	c := Config{Name: "vnb-test", CPUs: 2, MemoryMiB: 64, QMPSocket: filepath.Join(dir, "qmp.sock"),
		ConsoleLog: filepath.Join(dir, "console.log")}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	vm, err := Launch(ctx, proc.Real{}, c, "")
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Kill()
	tids, err := vm.VCPUThreads(ctx)
	if err != nil || len(tids) != 2 {
		t.Fatalf("vcpu tids %v, %v", tids, err)
	}
	ts, err := Threads(vm.Pid())
	if err != nil {
		t.Fatal(err)
	}
	names := map[int]string{}
	for _, th := range ts {
		names[th.TID] = th.Name
	}
	if names[tids[0]] != "CPU 0/TCG" || names[tids[1]] != "CPU 1/TCG" {
		t.Errorf("thread names %v for vcpu tids %v", names, tids)
	}
	// A real QEMU's query-kvm under TCG: the run's accelerator check passes,
	// and would fail had the VM been taken for KVM.
	if st, err := vm.QMP().KVM(ctx); err != nil || st.Enabled {
		t.Errorf("query-kvm = %+v, %v", st, err)
	}
	if err := vm.CheckAccel(ctx); err != nil {
		t.Errorf("CheckAccel under TCG: %v", err)
	}
	vm.Accel = KVM
	if err := vm.CheckAccel(ctx); err == nil {
		t.Error("CheckAccel: a TCG QEMU passed as KVM")
	}
	vm.Accel = TCG
	if err := vm.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-vm.Done():
	default:
		t.Fatal("qemu still running after Quit")
	}
	if _, err := os.Stat(c.QMPSocket); !os.IsNotExist(err) {
		t.Errorf("qmp socket left behind: %v", err)
	}
}

func TestLaunchQEMUFailsEarly(t *testing.T) {
	testenv.NeedCommand(t, DefaultBinary, "qemu-system-x86")
	dir := t.TempDir()
	c := Config{Name: "vnb-test", QMPSocket: filepath.Join(dir, "qmp.sock"), Kernel: filepath.Join(dir, "no-such-kernel")}
	_, err := Launch(t.Context(), proc.Real{}, c, "")
	var be *BootError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "no-such-kernel") {
		t.Errorf("err = %v", err)
	}
}

// findFirmware names the firmware only where a directory holds it as a
// file, so a QEMU without qboot boots SeaBIOS instead of failing to start.
func TestFindFirmware(t *testing.T) {
	with, without := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(with, Qboot), []byte("rom"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(without, Qboot), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := findFirmware(Qboot, []string{without, with}), filepath.Join(with, Qboot); got != want {
		t.Errorf("with qboot: got %q, want %q", got, want)
	}
	if got := findFirmware(Qboot, []string{without}); got != "" {
		t.Errorf("without qboot (a directory by that name): got %q, want \"\"", got)
	}
}
