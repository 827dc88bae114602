package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vishvananda/netlink"
	"github.com/vnetbench/vnetbench/internal/hostnet"
	"github.com/vnetbench/vnetbench/internal/ledger"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner"
	"github.com/vnetbench/vnetbench/runner/undo"
)

// inNamespacesEnv: this test process runs in the mount and network
// namespaces TestDoctorCleanOwnsOnly made (with /run and the temporary
// directory on tmpfs: nothing of the host's is seen or touched).
const inNamespacesEnv = "VNB_TEST_IN_NAMESPACES"

// holderEnv makes the test binary a vnetbench process that makes a run's
// resources through the real code (hostnet, ledger, runner.Pin), prints
// "ready" and waits to be killed. Its value names them.
const holderEnv = "VNB_TEST_LEDGER_HOLDER"

// holderMain is a holder process: a network namespace with a tap and a
// qdisc, a temporary directory, a process recorded as its VM (holding a
// queue of the tap and working in the directory), and the affinity of
// another process pinned to CPU 0. It prints the names.
func holderMain() int {
	name := os.Getenv(holderEnv)
	ledger.SetRun("holder-" + name)
	ns, err := hostnet.CreateNetns("vnb-" + strconv.Itoa(os.Getpid()) + "-" + name)
	if err == nil {
		err = ns.CreateTap(hostnet.Tap{Name: "vnbt0"})
	}
	if err == nil {
		err = ns.SetQdisc("vnbt0", "pfifo_fast")
	}
	var queue []*os.File
	if err == nil {
		queue, err = ns.AttachTap("vnbt0", 1)
	}
	dir, _, derr := ledger.MkdirTemp(fmt.Sprintf("vnb-%d", os.Getpid()))
	// It stands for QEMU: it outlives a killed owner and holds what QEMU
	// does, a queue of the tap and a file in the directory (its cwd).
	vm := exec.Command("sleep", "3600")
	vm.ExtraFiles, vm.Dir = queue, dir
	pinned := exec.Command("sleep", "3600")
	for _, c := range []*exec.Cmd{vm, pinned} {
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if serr := c.Start(); serr != nil {
			err = serr
		}
	}
	if err != nil || derr != nil {
		fmt.Println("error", err, derr)
		return 1
	}
	for _, q := range queue {
		q.Close() // the VM holds it
	}
	it, err := ledger.Record(ledger.Entry{Kind: ledger.VM, Name: "vnb-" + name})
	if err == nil {
		st, _ := ledger.StartTime(vm.Process.Pid)
		it.Made(func(e *ledger.Entry) { e.PID, e.Start = vm.Process.Pid, st })
		err = runner.Pin(undo.New(), "holder", []int{pinned.Process.Pid}, []int{0}, false)
	}
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("ready %s %s %d %d\n", ns.Name, dir, vm.Process.Pid, pinned.Process.Pid)
	// Wait to be killed. Not select {}: with no other goroutine the
	// runtime calls that a deadlock and exits.
	for {
		time.Sleep(time.Hour)
	}
}

// holder is a running holder process and what it made.
type holder struct {
	cmd              *exec.Cmd
	netns, dir       string
	vmPID, pinnedPID int
}

func startHolder(t *testing.T, name string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holderEnv+"="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "ready" {
		cmd.Process.Kill()
		t.Fatalf("holder %s: %q", name, line)
	}
	h := &holder{cmd: cmd, netns: f[1], dir: f[2]}
	h.vmPID, _ = strconv.Atoi(f[3])
	h.pinnedPID, _ = strconv.Atoi(f[4])
	t.Cleanup(func() {
		for _, pid := range []int{h.vmPID, h.pinnedPID} {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return h
}

// kill SIGKILLs the holder: its resources stay, its ledger too.
func (h *holder) kill(t *testing.T) {
	t.Helper()
	h.cmd.Process.Kill()
	h.cmd.Wait()
}

// doctor --clean removes exactly what the ledger of a killed run records
// and nothing in use, tested inside a mount and network namespace of the
// test's own: every look-alike the name-based clean removed (netns vnbox,
// tap vnbr0, $TMPDIR/vnb-results with a results.jsonl, a tap with a live
// tun reader, a netns held by a descriptor, names carrying a dead pid),
// a live run's resources, and a killed run's resources that processes
// use all stay; a SIGKILLed run's are all listed, then removed in one
// clean: the process recorded as its VM first, then its namespace, tap
// and qdisc and directory, which only that process held, and the affinity
// it changed is restored.
func TestDoctorCleanOwnsOnly(t *testing.T) {
	testenv.NeedRoot(t, "network and mount namespaces")
	testenv.NeedFile(t, "/dev/net/tun", "tun/tap")
	testenv.NeedCommand(t, "unshare", "util-linux")
	testenv.NeedCommand(t, "ip", "iproute2")
	if os.Getenv(inNamespacesEnv) == "" {
		bin := vnetbenchBin(t)
		cmd := exec.CommandContext(t.Context(), "unshare", "--mount", "--net", "--propagation", "private", "--",
			os.Args[0], "-test.run", "^TestDoctorCleanOwnsOnly$", "-test.v")
		cmd.Env = append(os.Environ(), inNamespacesEnv+"=1", "VNETBENCH_BIN="+bin)
		out, err := cmd.CombinedOutput()
		t.Logf("in its own namespaces:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestDoctorCleanOwnsOnly") {
			t.Fatalf("the test in its own namespaces: %v", err)
		}
		return
	}
	doctorCleanInNamespaces(t)
}

func doctorCleanInNamespaces(t *testing.T) {
	tmp := t.TempDir()
	for _, m := range []string{"/run", tmp} {
		if err := unix.Mount("tmpfs", m, "tmpfs", 0, "mode=0755"); err != nil {
			t.Fatalf("mount tmpfs on %s: %v", m, err)
		}
	}
	t.Cleanup(func() { unix.Unmount(tmp, unix.MNT_DETACH) })
	t.Setenv("TMPDIR", tmp)
	must := func(argv ...string) {
		t.Helper()
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
	}
	// Look-alikes.
	dead := exec.Command("true")
	dead.Run()
	deadPID := strconv.Itoa(dead.Process.Pid)
	must("ip", "netns", "add", "vnbox")
	must("ip", "netns", "add", "vnb-"+deadPID+"-deadbeef")
	must("ip", "netns", "add", "vnbheld")
	held, err := os.Open("/run/netns/vnbheld")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	must("ip", "tuntap", "add", "vnbr0", "mode", "tap")
	reader := openTun(t, "vnbq0") // a tap with a live reader
	defer reader.Close()
	os.MkdirAll(filepath.Join(tmp, "vnb-results"), 0o755)
	os.WriteFile(filepath.Join(tmp, "vnb-results", "results.jsonl"), []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(tmp, "vnb-"+deadPID+"-1"), 0o755)

	live := startHolder(t, "live")
	killed := startHolder(t, "killed")
	busy := startHolder(t, "busy")
	killed.kill(t)
	busy.kill(t)
	// The killed run's tap lost its mark (as if killed between making it
	// and setting its ifalias): doctor keeps it, but it goes with the
	// run's namespace, and its ledger line with it, in the same clean.
	must("ip", "-n", killed.netns, "link", "set", "vnbt0", "alias", "not-vnetbench")
	// The busy run's leftovers are in use, not by its VM (which doctor
	// ends) but by processes no ledger records: one inside its
	// namespace, a queue of its tap open, one working in its directory.
	endProcess(t, busy.vmPID)
	inside := exec.Command("ip", "netns", "exec", busy.netns, "sleep", "3600")
	cwd := exec.Command("sleep", "3600")
	cwd.Dir = busy.dir
	for _, c := range []*exec.Cmd{inside, cwd} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func(c *exec.Cmd) { c.Process.Kill(); c.Wait() }(c)
	}
	bns, err := hostnet.OpenNetns(busy.netns)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := bns.AttachTap("vnbt0", 1)
	bns.Close()
	if err != nil {
		t.Fatal(err)
	}
	waitNetnsUser(t, inside.Process.Pid)

	bin := vnetbenchBin(t)
	doctor := func(arg string) string {
		t.Helper()
		out, err := exec.Command(bin, "doctor", arg).CombinedOutput()
		t.Logf("vnetbench doctor %s:\n%s", arg, out)
		if err != nil {
			t.Fatalf("doctor %s: %v", arg, err)
		}
		return string(out)
	}
	list := doctor("--leftovers")
	for _, want := range []string{"netns " + killed.netns, "tap vnbt0 in netns " + killed.netns, "qdisc vnbt0 pfifo_fast in netns " + killed.netns,
		"dir " + killed.dir, fmt.Sprintf("pid %d", killed.vmPID), fmt.Sprintf("thread %d", killed.pinnedPID), "netns " + busy.netns} {
		if !strings.Contains(list, want) {
			t.Errorf("doctor does not list %s", want)
		}
	}
	for _, never := range []string{live.netns, live.dir, "vnbox", "vnbheld", "vnbr0", "vnbq0", "vnb-results", "deadbeef", "vnb-" + deadPID + "-1"} {
		if strings.Contains(list, never) {
			t.Errorf("doctor lists %s, which no killed run's ledger records", never)
		}
	}
	clean := doctor("--clean")
	if strings.Contains(clean, "kept tap vnbt0 in netns "+killed.netns) {
		t.Errorf("doctor --clean says it kept the killed run's tap, which went with its namespace")
	}
	if ledgers, _ := filepath.Glob(filepath.Join(ledger.Default, "*.jsonl")); len(ledgers) != 2 {
		t.Errorf("ledgers after the clean: %v, want the live and the busy run's (the killed run's is done)", ledgers)
	}
	for _, want := range []string{"kept netns " + busy.netns, "process " + strconv.Itoa(inside.Process.Pid), "kept tap vnbt0 in netns " + busy.netns, "kept dir " + busy.dir} {
		if !strings.Contains(clean, want) {
			t.Errorf("doctor --clean does not say %q", want)
		}
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	for _, p := range []string{"/run/netns/vnbox", "/run/netns/vnbheld", "/run/netns/vnb-" + deadPID + "-deadbeef", "/run/netns/" + live.netns, "/run/netns/" + busy.netns,
		filepath.Join(tmp, "vnb-results", "results.jsonl"), filepath.Join(tmp, "vnb-"+deadPID+"-1"), live.dir, busy.dir} {
		if !exists(p) {
			t.Errorf("doctor --clean removed %s", p)
		}
	}
	for _, tap := range []string{"vnbr0", "vnbq0"} {
		if _, err := netlink.LinkByName(tap); err != nil {
			t.Errorf("doctor --clean removed tap %s: %v", tap, err)
		}
	}
	for _, p := range []string{"/run/netns/" + killed.netns, killed.dir} {
		if exists(p) {
			t.Errorf("doctor --clean left %s of the killed run", p)
		}
	}
	if _, err := ledger.StartTime(killed.vmPID); err == nil { // ended (a zombie until reaped) or gone
		t.Errorf("the killed run's VM process %d still runs", killed.vmPID)
	}
	if cpus, _ := runner.Affinity(killed.pinnedPID); len(cpus) != len(allCPUs(t)) {
		t.Errorf("the thread the killed run pinned has CPUs %v, want them all back", cpus)
	}
	// Once nothing uses them, the busy run's go too, and its ledger.
	inside.Process.Kill()
	inside.Wait()
	cwd.Process.Kill()
	cwd.Wait()
	queue[0].Close()
	doctor("--clean")
	for _, p := range []string{"/run/netns/" + busy.netns, busy.dir} {
		if exists(p) {
			t.Errorf("doctor --clean left %s once unused", p)
		}
	}
	if list := doctor("--leftovers"); !strings.Contains(list, "nothing left behind") {
		t.Errorf("after the cleans doctor still lists leftovers")
	}
	if !exists("/run/netns/"+live.netns) || !exists(live.dir) {
		t.Errorf("the live run lost its resources")
	}
}

// endProcess kills process pid and waits until it is gone.
func endProcess(t *testing.T, pid int) {
	t.Helper()
	syscall.Kill(pid, syscall.SIGKILL)
	for range 600 {
		if _, err := ledger.StartTime(pid); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("process %d did not end after SIGKILL", pid)
}

// openTun creates a tap named name held by an open queue (a live reader).
func openTun(t *testing.T, name string) *os.File {
	t.Helper()
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ifr, _ := unix.NewIfreq(name)
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		t.Fatalf("TUNSETIFF %s: %v", name, err)
	}
	return os.NewFile(uintptr(fd), "tun")
}

// waitNetnsUser waits until process pid has left the test's namespace
// (ip netns exec has entered the run's).
func waitNetnsUser(t *testing.T, pid int) {
	self, _ := os.Readlink("/proc/self/ns/net")
	for range 100 {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && l != self {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("process %d never entered the namespace", pid)
}

func allCPUs(t *testing.T) []int {
	cpus, err := runner.Affinity(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return cpus
}
