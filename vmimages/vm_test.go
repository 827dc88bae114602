package vmimages

// Helpers that boot a real guest under QEMU for the end-to-end tests and
// BenchmarkBoot. QEMU is started with a minimal exec here on purpose: the
// production launcher lives in runner/qemu, which vmimages must not import.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

const (
	testGuestIP  = "10.0.0.2"
	testHostIP   = "10.0.0.1"
	testGuestMAC = "52:54:00:12:34:56"
	// The second NIC (vnb.nic) of TestBootTraffic's guest, on tap vnbt1.
	testGuest2IP  = "10.0.1.2"
	testHost2IP   = "10.0.1.1"
	testGuest2MAC = "52:54:00:12:34:57"
)

// TestMain removes the agent built for the tests and fails the run if a
// test left a child process (QEMU) or one of its network namespaces behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if agentPath != "" {
		os.RemoveAll(filepath.Dir(agentPath))
	}
	if kids := children(); len(kids) > 0 {
		fmt.Fprintf(os.Stderr, "leaked child processes: %v\n", kids)
		code = 1
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		prefix := fmt.Sprintf("vnb-img%d-", os.Getpid())
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, prefix) {
				fmt.Fprintf(os.Stderr, "leaked network namespace: %s\n", l)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// children lists the pids whose parent is this process.
func children() []string {
	var kids []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == fmt.Sprint(os.Getpid()) {
				kids = append(kids, s[:i+1])
			}
		}
	}
	return kids
}

var (
	agentOnce sync.Once
	agentPath string
	agentErr  error
)

// testAgent returns a static vnetbench binary: $VNETBENCH_BIN (set by the
// Makefile) or one built once per test process.
func testAgent(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("VNETBENCH_BIN"); p != "" {
		return p
	}
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vnb-agent-")
		if err != nil {
			agentErr = err
			return
		}
		agentPath = filepath.Join(dir, "vnetbench")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", agentPath, "../cmd/vnetbench")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("build ../cmd/vnetbench: %v\n%s", err, out)
		}
	})
	if agentErr != nil {
		tb.Fatal(agentErr)
	}
	return agentPath
}

var (
	kernelOnce sync.Once
	kernel     *Kernel
	kernelErr  error
)

// testKernel fetches (once, into the shared cache) Debian's default kernel.
func testKernel(tb testing.TB) *Kernel {
	tb.Helper()
	kernelOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		kernel, kernelErr = FetchDebianKernel(ctx, os.Getenv("VNETBENCH_TEST_KERNEL"), "")
	})
	testenv.SkipUnavailable(tb, kernelErr, "fetch a guest kernel")
	return kernel
}

func needQEMU(tb testing.TB) {
	tb.Helper()
	testenv.NeedCommand(tb, "qemu-system-x86_64", "qemu-system-x86")
}

func needNetns(tb testing.TB) {
	tb.Helper()
	testenv.NeedRoot(tb, "network namespaces and tap devices")
	testenv.NeedCommand(tb, "ip", "iproute2")
	testenv.NeedFile(tb, "/dev/net/tun", "tap devices")
}

func sh(tb testing.TB, argv ...string) string {
	tb.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// testNetns creates netns vnb-<unique> with taps vnbt0 (10.0.0.1/24) and
// vnbt1 (10.0.1.1/24, for a guest's second NIC) and deletes it (and with
// it the taps) in Cleanup.
func testNetns(tb testing.TB) string {
	tb.Helper()
	ns := fmt.Sprintf("vnb-img%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	sh(tb, "ip", "netns", "add", ns)
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			tb.Errorf("delete netns %s: %v %s", ns, err, out)
		}
	})
	sh(tb, "ip", "-n", ns, "link", "set", "lo", "up")
	sh(tb, "ip", "-n", ns, "tuntap", "add", "dev", "vnbt0", "mode", "tap")
	sh(tb, "ip", "-n", ns, "addr", "add", testHostIP+"/24", "dev", "vnbt0")
	sh(tb, "ip", "-n", ns, "link", "set", "vnbt0", "up")
	sh(tb, "ip", "-n", ns, "tuntap", "add", "dev", "vnbt1", "mode", "tap")
	sh(tb, "ip", "-n", ns, "addr", "add", testHost2IP+"/24", "dev", "vnbt1")
	sh(tb, "ip", "-n", ns, "link", "set", "vnbt1", "up")
	return ns
}

type testVM struct {
	cmd     *exec.Cmd
	client  *Client
	console string
	start   time.Time
	exited  chan struct{} // closed when QEMU has exited
	waitErr error         // valid after exited
}

// bootVM starts QEMU (TCG) on img, inside netns ns with the tap when ns
// is not empty, connects the agent client and registers the kill in
// Cleanup. guest's parameters go on GuestCmdline(TCGCmdline).
func bootVM(tb testing.TB, img *Image, ns string, guest GuestConfig) *testVM {
	return bootVMWith(tb, img, ns, guest.Cmdline(TCGCmdline), false)
}

// bootVMWith is bootVM; with serialOnly the VM has no virtio-serial port and
// the client talks over the serial console (the agent's fallback).
func bootVMWith(tb testing.TB, img *Image, ns, cmdline string, serialOnly bool) *testVM {
	tb.Helper()
	dir := tb.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	console := filepath.Join(dir, "console.log")
	argv := []string{"qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
		"-machine", "q35,accel=tcg", "-cpu", "max", "-m", "512", "-smp", "1",
		"-kernel", img.Kernel, "-initrd", img.Initramfs, "-append", cmdline,
		"-no-reboot",
	}
	if serialOnly {
		argv = append(argv, "-chardev", "socket,path="+sock+",server=on,wait=off,id=con,logfile="+console, "-serial", "chardev:con")
	} else {
		argv = append(argv, "-serial", "file:"+console,
			"-device", "virtio-serial-pci",
			"-chardev", "socket,path="+sock+",server=on,wait=off,id=agent",
			"-device", "virtserialport,chardev=agent,name="+AgentPortName)
	}
	if ns != "" {
		argv = append(argv,
			"-netdev", "tap,id=n0,ifname=vnbt0,script=no,downscript=no,vhost=off",
			"-device", "virtio-net-pci,netdev=n0,mac="+testGuestMAC)
		if strings.Contains(cmdline, "vnb.nic=") {
			argv = append(argv,
				"-netdev", "tap,id=n1,ifname=vnbt1,script=no,downscript=no,vhost=off",
				"-device", "virtio-net-pci,netdev=n1,mac="+testGuest2MAC)
		}
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	vm := &testVM{console: console, start: time.Now(), exited: make(chan struct{})}
	vm.cmd = exec.Command(argv[0], argv[1:]...)
	// If the test binary dies (timeout panic), the kernel kills QEMU.
	vm.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	vm.cmd.Stderr = &stderr
	if err := vm.cmd.Start(); err != nil {
		tb.Fatalf("start qemu: %v", err)
	}
	go func() { vm.waitErr = vm.cmd.Wait(); close(vm.exited) }()
	tb.Cleanup(func() {
		if vm.client != nil {
			vm.client.Close()
		}
		select {
		case <-vm.exited:
		case <-time.After(2 * time.Second):
			_ = vm.cmd.Process.Kill() // by pid: ip netns exec execs qemu in place
			<-vm.exited
		}
		if tb.Failed() {
			b, _ := os.ReadFile(console)
			tb.Logf("qemu stderr: %s\nconsole:\n%s", stderr.String(), b)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := dialAgent(ctx, sock)
	if err != nil {
		tb.Fatalf("dial agent: %v (qemu stderr: %s)", err, stderr.String())
	}
	vm.client = c
	return vm
}

func (vm *testVM) consoleText() string {
	b, _ := os.ReadFile(vm.console)
	return string(b)
}

// tapStats returns the tap's counters in the netns (ip -s -j link).
func tapStats(tb testing.TB, ns string) (txPackets, txBytes uint64) {
	tb.Helper()
	return tapStatsOf(tb, ns, "vnbt0")
}

func tapStatsOf(tb testing.TB, ns, tap string) (txPackets, txBytes uint64) {
	tb.Helper()
	out := sh(tb, "ip", "-n", ns, "-s", "-j", "link", "show", tap)
	var v []struct {
		Stats64 struct {
			TX struct {
				Packets uint64 `json:"packets"`
				Bytes   uint64 `json:"bytes"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v) != 1 {
		tb.Fatalf("parse ip -s -j link: %v: %s", err, out)
	}
	return v[0].Stats64.TX.Packets, v[0].Stats64.TX.Bytes
}

// dialAgent connects to the agent's unix socket of a QEMU these tests
// started, retrying until ctx ends: QEMU creates the socket a moment
// after it starts. (The harness reaches an agent through qemu.VM.Agent.)
func dialAgent(ctx context.Context, socketPath string) (*Client, error) {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "unix", socketPath)
		if err == nil {
			return NewClient(conn), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to agent socket %s: %w (last error: %v)", socketPath, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
