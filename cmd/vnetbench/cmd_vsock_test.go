package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/qemu"
	"github.com/vnetbench/vnetbench/scenarios"
)

// writeScenario writes src as a scenario file and returns its path.
func writeScenario(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runBadInput runs `vnetbench run FILE` in-process and expects exit 2 with
// a one-line message containing want, and no run directory.
func runBadInput(t *testing.T, file, want string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"run", file, "-o", dir}, &out, &errb)
	if exitCode(err) != exitBadInput || err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v (exit %d), want one line with %q, exit 2", err, exitCode(err), want)
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Errorf("run directory created despite the bad input")
	}
}

// The socat redirector copies socat from this host into the guest image:
// without it the run stops before anything is set up, on this host and
// for a lab kernel alike (the lab VM sees this host's programs).
func TestRunVsockMissingSocat(t *testing.T) {
	testenv.NeedRoot(t, "without it the error is 'needs root'")
	testenv.NeedFile(t, "/dev/net/tun", "without it the error is about tun")
	q := testenv.NeedCommand(t, qemu.DefaultBinary, "qemu-system-x86")
	bin := t.TempDir()
	if err := os.Symlink(q, filepath.Join(bin, qemu.DefaultBinary)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin) // QEMU, no socat
	if _, err := exec.LookPath("socat"); err == nil {
		t.Fatal("socat still found")
	}
	const want = "socat is not installed: the guest image copies it from this host; install the Debian package socat (apt-get install socat)"
	gen := "generator: {vsock: {transport: loopback, redirector: [socat, sockmap], duration: 1s}}\nrepetitions: 1\n"
	runBadInput(t, writeScenario(t, gen), want)
	runBadInput(t, writeScenario(t, "kernels: [{label: new, debian: \"6.12\"}]\n"+gen), want)
}

// A virtio cell on a host without vhost-vsock is a missing capability
// (exit 2) naming the module and lab mode, found before anything is set
// up.
func TestRunVsockNoVhostVsock(t *testing.T) {
	testenv.NeedRoot(t, "without it the error is 'needs root'")
	testenv.NeedFile(t, "/dev/net/tun", "without it the error is about tun")
	testenv.NeedCommand(t, qemu.DefaultBinary, "qemu-system-x86")
	testenv.NeedCommand(t, "socat", "socat")
	if _, err := os.Stat(qemu.VhostVsockPath); err == nil {
		testenv.NotApplicable(t, "this host has vhost-vsock (the test checks the error without it)")
	}
	runBadInput(t, writeScenario(t, "generator: {vsock: {transport: virtio, redirector: socat, duration: 1s}}\nrepetitions: 1\n"),
		"vsock to the guest needs /dev/vhost-vsock")
}

// A guest CID another VM holds is bad input (exit 2), found before
// anything is set up. It needs /dev/vhost-vsock (a lab VM has it; the CI
// host's kernel has no vhost_vsock).
func TestRunVsockCIDInUse(t *testing.T) {
	testenv.NeedRoot(t, "without it the error is 'needs root'")
	testenv.NeedFile(t, "/dev/net/tun", "without it the error is about tun")
	testenv.NeedCommand(t, qemu.DefaultBinary, "qemu-system-x86")
	testenv.NeedCommand(t, "socat", "socat")
	fd, err := unix.Open(qemu.VhostVsockPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		testenv.NotApplicable(t, fmt.Sprintf("needs %s (module vhost_vsock): %v", qemu.VhostVsockPath, err))
	}
	defer unix.Close(fd)
	const held = 0x7eae
	v := uint64(held)
	// VHOST_VSOCK_SET_GUEST_CID, as a running VM holds its CID.
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), 0x4008AF60, uintptr(unsafe.Pointer(&v))); errno != 0 {
		t.Fatalf("hold CID %d: %v", held, errno)
	}
	runBadInput(t, writeScenario(t, fmt.Sprintf("generator: {vsock: {transport: virtio, cid: %d, duration: 1s}}\nrepetitions: 1\n", held)),
		fmt.Sprintf("vsock guest CID %d is already in use on this host", held))
}

// Bad keys are one line at their file:line:col and exit 2 before the
// host is touched: a payload over the unix datagram limit, a reserved CID.
func TestRunVsockBadKeys(t *testing.T) {
	for src, want := range map[string]string{
		"generator: {vsock: {payload: 300000}}\n": "s.yaml:1:30: generator.vsock.payload: 300000 is above the maximum 212960",
		"generator: {vsock: {cid: 2}}\n":          "s.yaml:1:26: generator.vsock.cid: 2 is below the minimum 3",
	} {
		runBadInput(t, writeScenario(t, src), want)
	}
}

// builtinVariant returns the YAML of built-in name with each of the
// replacements (old, new pairs) made, failing when one does not apply.
func builtinVariant(t *testing.T, name string, repl ...string) string {
	t.Helper()
	b, ok := scenarios.BuiltinData(name)
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	s := string(b)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("built-in %s has no %q", name, repl[i])
		}
		s = strings.Replace(s, repl[i], repl[i+1], 1)
	}
	return s
}

// runVsockE2E runs the scenario file with the binary and returns its
// output, checking that nothing is left behind.
func runVsockE2E(t *testing.T, file string) (string, string) {
	t.Helper()
	bin := vnetbenchBin(t)
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.CommandContext(t.Context(), bin, "run", file, "-o", dir, "--seed", "1", "--lock-wait", "30m")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	checkRunLeftNothing(t, dir)
	if err != nil {
		if b, rerr := os.ReadFile(filepath.Join(dir, "artifacts", "console-0.log")); rerr == nil {
			t.Logf("guest console tail:\n%s", lastLinesOf(string(b), 30))
		}
		t.Fatalf("run: %v", err)
	}
	return string(out), dir
}

func lastLinesOf(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// The built-in vsock-sockmap-loopback in miniature (one repetition, 3 s):
// a Debian 6.12 guest at host level, sender, socat or sockmap, and the
// server all inside it over vsock_loopback. `vnetbench run` prints the
// table: socat and sockmap side by side in MB/s with the change; both
// cells moved data and measured the redirector's CPU.
func TestRunVsockLoopbackE2E(t *testing.T) {
	needRunHost(t)
	testenv.NeedCommand(t, "socat", "socat")
	file := writeScenario(t, builtinVariant(t, "vsock-sockmap-loopback", "repetitions: 3", "repetitions: 1", "duration: 10s", "duration: 3s"))
	out, dir := runVsockE2E(t, file)
	for _, want := range []string{"socat |", "sockmap |", " change", "| 64 ", "| KiB ", " MB/s ", "Redirector CPU"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	// The header cell wraps over lines: read it without the borders.
	if flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "|", " ")), " "); !strings.Contains(flat, "1 thread, loopback transport") ||
		!strings.Contains(flat, "+deb12-cloud-amd64") {
		t.Errorf("the table's header lacks the loopback transport or the 6.12 guest kernel")
	}
	samples := readResults(t, dir)
	if len(samples) != 2 {
		t.Fatalf("%d samples, want 2", len(samples))
	}
	for _, s := range samples {
		m := s["metrics"].(map[string]any)
		tp, _ := m["throughput_bps"].(float64)
		cpu, _ := m["redirector_cpu_frac"].(float64)
		sent, _ := m["vsock_sent_bps"].(float64)
		if tp <= 0 || cpu <= 0 || sent <= 0 || s["unsupported"] != nil {
			t.Errorf("%v: %v (unsupported: %v)", s["cell"], m, s["unsupported"])
		}
		if w, _ := json.Marshal(s["warnings"]); strings.Contains(string(w), "lost or truncated") {
			t.Errorf("%v: %s", s["cell"], w)
		}
	}
}

// On Debian's 6.1 guest kernel (no vsock sockmap) the sockmap cell is n/a
// with the reason (the guest's refusal, a real 6.1 boot), the run warns
// before it starts, goes on and exits 0. The guest boots in about 3 s.
func TestRunVsockSockmapNAE2E(t *testing.T) {
	needRunHost(t)
	file := writeScenario(t, builtinVariant(t, "vsock-sockmap-loopback", "repetitions: 3", "repetitions: 1", "duration: 10s", "duration: 1s",
		`debian: "6.12"`, `debian: "6.1"`, "redirector: [socat, sockmap]", "redirector: sockmap"))
	out, dir := runVsockE2E(t, file)
	const why = "this kernel has no vsock sockmap support (Linux 6.4+)"
	// The table's notes wrap over lines: read them without the borders.
	flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "|", " ")), " ")
	if !strings.Contains(flat, "n/a: "+why) {
		t.Errorf("the table lacks the n/a reason %q", why)
	}
	if !strings.Contains(out, "vnetbench: warning: tap/vsock-t1 reads n/a: guest kernel Debian 6.1 has no vsock sockmap") {
		t.Errorf("no warning before the run")
	}
	samples := readResults(t, dir)
	if len(samples) != 1 || samples[0]["unsupported"] != why {
		t.Errorf("samples %v, want one n/a sample", samples)
	}
}
