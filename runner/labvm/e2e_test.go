package labvm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/vmimages"
)

// Kernels of the lab e2e tests: Debian's 6.1 generic flavour as the kernel
// under test (it has the 9p stack), the cloud flavour (LZ4, no 9p) as the
// nested guest, which boots faster.
const (
	e2eLabKernel   = "6.1.0-47-amd64"
	e2eGuestKernel = "6.1.0-47-cloud-amd64"
)

func needLab(t *testing.T) {
	t.Helper()
	testenv.SkipIfShort(t, "lab VM e2e test")
	testenv.NeedRoot(t, "lab mode: 9p export of /, taps inside")
	testenv.NeedCommand(t, "qemu-system-x86_64", "qemu-system-x86")
	if runtime.GOARCH != "amd64" {
		testenv.NotApplicable(t, "the lab e2e tests boot Debian amd64 kernels")
	}
}

// needLabBuilds is needLab for a test whose kernels are built from
// source: it skips (fails under CI) without kbuild's tools.
func needLabBuilds(t *testing.T) {
	t.Helper()
	needLab(t)
	if err := kbuild.CheckDeps(); err != nil {
		testenv.Skipf(t, "%v", err)
	}
}

// debianSource61 is Debian's linux-source-6.1 tree in the cache, the one a
// scenario's `source: debian:6.1` fetches, for the tests that build or
// patch from it themselves; it skips (fails under CI) when it cannot be
// fetched here.
func debianSource61(t *testing.T) string {
	t.Helper()
	src, err := kbuild.DebianSource(t.Context(), filepath.Join(vmimages.CacheDir(), "src"), "6.1", testLog{t})
	if errors.Is(err, fault.ErrCapability) {
		testenv.Skipf(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// runVnetbench runs argv (a vnetbench command over whole labs: minutes),
// logs how long it took and the last lines of its output, and returns
// the output (stdout and stderr as they came) and the command's error.
func runVnetbench(t *testing.T, what string, lines int, argv ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("vnetbench %s: %.0fs\n%s", what, time.Since(start).Seconds(), tail(out.String(), lines))
	return out.String(), err
}

// vnetbenchBinary returns $VNETBENCH_BIN or a static build of
// ./cmd/vnetbench (a lab VM's /init).
func vnetbenchBinary(t *testing.T) string {
	t.Helper()
	return testenv.VnetbenchBinary(t, "../../cmd/vnetbench")
}

func fetchKernel(t *testing.T, version string) *vmimages.Kernel {
	t.Helper()
	k, err := vmimages.FetchDebianKernel(t.Context(), version, "")
	testenv.SkipUnavailable(t, err, "fetch Debian kernel "+version)
	return k
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestLabBoot boots Debian's 6.1 kernel as a lab VM, loads its modules,
// mounts the host root over 9p and runs `vnetbench version` inside, which
// writes into the shared run directory.
func TestLabBoot(t *testing.T) {
	needLab(t)
	bin := vnetbenchBinary(t)
	fetchKernel(t, e2eLabKernel)
	run := t.TempDir()
	res, err := Run(t.Context(), Config{
		Label: "stock", Kernel: Kernel{Debian: e2eLabKernel}, RunDir: run, Binary: bin,
		Args:     []string{"lab-selftest", "-h"},
		Output:   testLog{t},
		Timeouts: Timeouts{Boot: 120 * time.Second, Setup: 120 * time.Second, Run: 60 * time.Second},
	})
	if res != nil {
		t.Logf("lab boot %.1fs (to /init), setup %.1fs (modules %d ms), run %.1fs, total %.1fs, accel %s, missing %v",
			res.BootSeconds, res.SetupSeconds, res.ModulesMs, res.RunSeconds, res.TotalSeconds, res.Accel, res.Missing)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Missing) != 0 {
		t.Errorf("modules missing: %v", res.Missing)
	}
	con, _ := os.ReadFile(res.Console)
	if !strings.Contains(string(con), "usage: vnetbench lab-selftest") {
		t.Errorf("inner command output not on the console:\n%s", con)
	}
}

// TestLabPktgenSelfTest boots the lab VM and, inside it, a nested guest on
// a tap with vhost=on (vhost_net loaded from the lab kernel's modules),
// then runs pktgen (sample01, one thread, 20000 packets) into it; the
// results stream into the host's run directory. One backend only: each
// nested boot costs minutes under TCG in TCG (TestLabPktgenE2E covers both).
// Opt-in (VNETBENCH_LAB_SELFTEST=1): it is a subset of TestLabPktgenE2E,
// and a second nested boot per CI run risks its deadline on a loaded
// machine. Run it with
//
//	VNETBENCH_LAB_SELFTEST=1 go test -run TestLabPktgenSelfTest -timeout 30m -v ./runner/labvm
func TestLabPktgenSelfTest(t *testing.T) {
	testenv.OptIn(t, "VNETBENCH_LAB_SELFTEST", "TestLabPktgenE2E covers this in CI; run it with VNETBENCH_LAB_SELFTEST=1 go test -run TestLabPktgenSelfTest -timeout 30m ./runner/labvm")
	needLab(t)
	bin := vnetbenchBinary(t)
	fetchKernel(t, e2eLabKernel)
	g := fetchKernel(t, e2eGuestKernel)
	run := t.TempDir()
	out := filepath.Join(run, "lab", "stock", "selftest")
	res, err := Run(t.Context(), Config{
		Label: "stock", Kernel: Kernel{Debian: e2eLabKernel}, RunDir: run, Binary: bin,
		Args: []string{"lab-selftest", "--guest-kernel", g.Image, "--guest-modules", g.Modules,
			"--backends", "tap+vhost", "--count", "20000", "--duration", "60s", "-o", out},
		Output:   testLog{t},
		Timeouts: Timeouts{Run: 20 * time.Minute},
	})
	if res != nil {
		t.Logf("lab boot %.1fs, setup %.1fs (modules %d ms), run %.1fs, total %.1fs", res.BootSeconds, res.SetupSeconds, res.ModulesMs, res.RunSeconds, res.TotalSeconds)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "selftest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st SelfTestResult
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("selftest: %s", b)
	if len(st.Backends) != 1 || st.Backends[0].Backend != "tap+vhost" {
		t.Fatalf("want the tap+vhost backend, got %+v", st)
	}
	for _, be := range st.Backends {
		if be.Packets == 0 || be.PPS <= 0 || be.TapTx == 0 {
			t.Errorf("%s: no traffic: %+v", be.Backend, be)
		}
	}
}

// TestLabDeadlines: a boot deadline too short for the kernel fails in the
// boot phase with the console named, and the inner command's exit status
// 2 (bad input inside) comes back as exit code 2; the VM is gone after both.
func TestLabDeadlines(t *testing.T) {
	needLab(t)
	bin := vnetbenchBinary(t)
	fetchKernel(t, e2eLabKernel)
	run := t.TempDir()
	_, err := Run(t.Context(), Config{Label: "deadline", Kernel: Kernel{Debian: e2eLabKernel}, RunDir: run, Binary: bin,
		Args: []string{"version"}, Timeouts: Timeouts{Boot: time.Second}})
	var le *Error
	if !errors.As(err, &le) || le.Phase != "boot" || !strings.Contains(err.Error(), "timeout after 1s") || !strings.Contains(err.Error(), "console.log") {
		t.Fatalf("err = %v, want a boot-phase timeout naming the console", err)
	}
	_, err = Run(t.Context(), Config{Label: "deadline", Kernel: Kernel{Debian: e2eLabKernel}, RunDir: run, Binary: bin,
		Args: []string{"no-such-subcommand"}})
	var ie *InnerError
	if !errors.As(err, &ie) || ie.Code != 2 || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "unknown subcommand") {
		t.Fatalf("err = %v, want the inner exit status 2 with the console tail", err)
	}
	if left := ownProcesses("/proc", os.Getpid(), "vnb-lab-deadline"); len(left) > 0 {
		t.Errorf("lab QEMU still running: %s", strings.Join(left, "; "))
	}
}

// ownProcesses lists the descendants of process self (found by parent
// pid in the /proc tree at root) whose command line contains s, as "PID:
// ARGV": a check for what a test left behind must not count another
// developer's concurrent run of the same test, as pgrep -f would.
func ownProcesses(root string, self int, s string) []string {
	ents, _ := os.ReadDir(root)
	kids := map[int][]int{}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if st, ok := (proc.FS{Root: root}).Stat(pid); ok {
				kids[st.PPID] = append(kids[st.PPID], pid)
			}
		}
	}
	var out []string
	for todo := kids[self]; len(todo) > 0; todo = todo[1:] {
		pid := todo[0]
		todo = append(todo, kids[pid]...)
		b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "cmdline"))
		if argv := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "); err == nil && strings.Contains(argv, s) {
			out = append(out, strconv.Itoa(pid)+": "+argv)
		}
	}
	return out
}

// ownProcesses finds, in a /proc tree, the test's QEMU and one started
// a level further down, and neither a process of the same name that is
// not the test's (another developer's run) nor the test's other children.
func TestOwnProcesses(t *testing.T) {
	root := t.TempDir()
	for _, p := range []struct {
		pid, ppid int
		argv      string
	}{
		{100, 1, "go test -run TestLabDeadlines"},
		{101, 100, "qemu-system-x86_64 -name vnb-lab-deadline,debug-threads=on"},
		{102, 100, "sh -c true"},
		{103, 102, "qemu-system-x86_64 -name vnb-lab-deadline,debug-threads=on -m 2048"},
		{200, 1, "qemu-system-x86_64 -name vnb-lab-deadline,debug-threads=on"},
	} {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		stat := fmt.Sprintf("%d (x) S %d%s\n", p.pid, p.ppid, strings.Repeat(" 0", 49))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string]string{"stat": stat, "cmdline": strings.ReplaceAll(p.argv, " ", "\x00") + "\x00"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := ownProcesses(root, 100, "vnb-lab-deadline")
	want := []string{"101: qemu-system-x86_64 -name vnb-lab-deadline,debug-threads=on", "103: qemu-system-x86_64 -name vnb-lab-deadline,debug-threads=on -m 2048"}
	if !slices.Equal(got, want) {
		t.Errorf("ownProcesses = %q, want %q", got, want)
	}
	// The host's /proc: a child of this test is found.
	name := filepath.Join(t.TempDir(), "vnb-own-probe")
	if err := os.Symlink(testenv.NeedCommand(t, "sleep", "coreutils"), name); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(name, "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	if got, want := ownProcesses("/proc", os.Getpid(), "vnb-own-probe"), fmt.Sprintf("%d: %s 60", child.Process.Pid, name); len(got) != 1 || got[0] != want {
		t.Errorf("ownProcesses on /proc = %q, want [%q]", got, want)
	}
}
