package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/xsk"

	"github.com/vnetbench/vnetbench/internal/testenv"
)

// Bad input of the AF_XDP experiment: one line, exit 2, nothing created.
func TestAFXDPBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ yaml, want string }{
		"frame below the headers": {"generator: {afxdp: {pkt_size: [64, 40]}}\n",
			"generator.afxdp.pkt_size: 40 bytes is below the Ethernet (14) + IPv4 (20) + UDP (8) headers; use 42 or more"},
		"testpmd frame below the headers": {"generator: {testpmd: {pkt_size: 41}}\n",
			"generator.testpmd.pkt_size: 41 bytes is below the Ethernet (14) + IPv4 (20) + UDP (8) headers; use 42 or more"},
		"queue the tap does not have": {"queues: 2\ngenerator: {afxdp: {first_queue: 2}}\n",
			"generator.afxdp.first_queue: threads 1 from first_queue 2 send on tap queue 2, but queues is 2 (the tap has queues 0-1; one AF_XDP socket per queue); set queues: 3 or queues: auto"},
	} {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(f, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"validate", "run"} {
			var out, errb bytes.Buffer
			runDir := filepath.Join(dir, "run-"+cmd)
			args := []string{cmd, f}
			if cmd == "run" {
				args = append(args, "-o", runDir)
			}
			err := run(t.Context(), args, &out, &errb)
			if got := exitCode(err); got != exitBadInput || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %s: exit %d, %v; want 2 and one line with %q", name, cmd, got, err, c.want)
			}
			if _, serr := os.Stat(runDir); serr == nil {
				t.Errorf("%s: run directory created", name)
			}
		}
	}
}

// A testpmd scenario on a host without dpdk-testpmd: preflight says what
// to install, exit 2, before anything is created.
func TestTestpmdMissing(t *testing.T) {
	testenv.NeedRoot(t, "without it the error is 'needs root'")
	testenv.NeedFile(t, "/dev/net/tun", "preflight checks tun before the tools")
	t.Setenv("PATH", t.TempDir()) // nothing on it
	dir := filepath.Join(t.TempDir(), "run")
	f := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(f, []byte("generator: {testpmd: {duration: 1s}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"run", f, "-o", dir}, &out, &errb)
	const want = "dpdk-testpmd is not installed; install the Debian package dpdk-dev (make deps)"
	if exitCode(err) != exitBadInput || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v (exit %d), want %q", err, exitCode(err), want)
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Errorf("run directory created despite the missing tool")
	}
}

// The AF_XDP experiment at host level with both generators, in miniature
// (UDP 64 and 1024, copy and zero-copy, 1 s, one repetition): the
// series' table per generator, zero-copy n/a with the kernel's reason
// where the kernel refuses it, and per sample Transmitted, Lost over the
// generator's own run, the guest sink's Received and the sender's CPU
// per packet. Nothing is left behind.
func TestRunAFXDPE2E(t *testing.T) {
	needRunHost(t)
	testenv.NeedCommand(t, "dpdk-testpmd", "dpdk-dev")
	capab, err := xsk.HostCapability.Get()
	if err != nil {
		t.Fatal(err)
	}
	if !capab.Copy {
		testenv.Skipf(t, "this kernel has no AF_XDP Tx on a tap: %s", capab)
	}
	scen := filepath.Join(t.TempDir(), "afxdp-tun-e2e.yaml")
	if err := os.WriteFile(scen, []byte(`name: afxdp-tun-e2e
description: "afxdp-tun in miniature: UDP 64 and 1024, 1 s, one repetition"
backend: tap
guest: {vcpus: 1, memory: 512MiB, sink: xdp-drop}
generator:
  afxdp: {pkt_size: [64, 1024], mode: [copy, zerocopy], duration: 1s}
  testpmd: {pkt_size: [64, 1024], mode: [copy, zerocopy], duration: 1s}
perf:
  stat: {targets: [generator], events: [task-clock]}
repetitions: 1
timeouts: {boot: 3m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.CommandContext(t.Context(), vnetbenchBin(t), "run", scen, "-o", dir, "--seed", "3", "--lock-wait", "30m")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	checkRunLeftNothing(t, dir)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	s := string(out)
	for _, gen := range []string{"afxdp", "testpmd"} {
		want := []string{"| " + gen + " to VM", "|      copy | zero-copy | speedup |", "| UDP", "| Transmitted", "| Lost", "| Received", "| CPU/pkt " + gen}
		for _, w := range want {
			if !strings.Contains(s, w) {
				t.Errorf("%s table lacks %q", gen, w)
			}
		}
	}
	if !capab.ZeroCopy {
		flat := strings.Join(strings.Fields(s), " ") // footnotes wrap
		for _, w := range []string{"| n/a (1) | - |", "(1) n/a: unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)"} {
			if !strings.Contains(flat, w) {
				t.Errorf("output lacks the n/a zero-copy cell and its footnote %q", w)
			}
		}
	}
	samples := readResults(t, dir)
	if len(samples) != 8 {
		t.Fatalf("%d samples, want 8", len(samples))
	}
	for _, smp := range samples {
		axes := smp["axes"].(map[string]any)
		gen := axes["generator"].(string)
		mode := axes[fmt.Sprintf("generator.%s.mode", gen)]
		if mode == "zerocopy" && !capab.ZeroCopy {
			if why, _ := smp["unsupported"].(string); why != "unsupported (EOPNOTSUPP: this kernel's tun has no AF_XDP zero-copy)" {
				t.Errorf("%v: unsupported %q", smp["cell"], why)
			}
			continue
		}
		m := smp["metrics"].(map[string]any)
		tx, _ := m["tx_pps"].(float64)
		rx, _ := m["rx_pps"].(float64)
		cpu, _ := m["cpu_per_pkt."+gen].(float64)
		_, lost := m["lost_pps"]
		if tx <= 0 || rx <= 0 || cpu <= 0 || !lost {
			t.Errorf("%v: tx_pps %v, rx_pps %v, cpu_per_pkt.%s %v, lost_pps present %v", smp["cell"], tx, rx, gen, cpu, lost)
		}
	}
}
