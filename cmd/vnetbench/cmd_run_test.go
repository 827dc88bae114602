package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/vmimages"
)

// End-to-end tests of `vnetbench run` with the real binary: a TCG guest
// built by vmimages, a tap in the run's netns, iperf3 and trafgen, perf
// stat on QEMU. They need root, /dev/net/tun, qemu, iperf3, trafgen, perf
// and a guest kernel (the vmimages cache or a download).

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// vnetbenchBin is $VNETBENCH_BIN, or the CLI built once (static, so it can
// be the guest's /init).
func vnetbenchBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VNETBENCH_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vnb-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "vnetbench")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			t.Logf("%s", out)
		}
	})
	if binErr != nil {
		t.Fatalf("build vnetbench: %v", binErr)
	}
	return binPath
}

var (
	installOnce sync.Once
	installPath string
	installErr  error
)

// goInstallBin is what a user gets from go install ./cmd/vnetbench in a
// clone, built once: the go command's defaults (cgo on where a C compiler
// is, so dynamically linked), not the Makefile's static build.
func goInstallBin(t *testing.T) string {
	t.Helper()
	gobin := testenv.NeedCommand(t, "go", "")
	installOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vnb-install-")
		if err != nil {
			installErr = err
			return
		}
		installPath = filepath.Join(dir, "vnetbench")
		cmd := exec.Command(gobin, "install", "./cmd/vnetbench")
		cmd.Dir = filepath.Join("..", "..")
		// make exports CGO_ENABLED=0 for its own build; a user's go
		// install does not have it.
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
			return strings.HasPrefix(e, "CGO_ENABLED=") || strings.HasPrefix(e, "GOBIN=")
		}), "GOBIN="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = fmt.Errorf("go install ./cmd/vnetbench: %v\n%s", err, out)
		}
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	return installPath
}

func needRunHost(t *testing.T) {
	t.Helper()
	testenv.SkipIfShort(t, "e2e run test")
	testenv.NeedRoot(t, "network namespaces, tap")
	testenv.NeedFile(t, "/dev/net/tun", "tap devices")
	for _, tool := range []string{"qemu-system-x86_64", "iperf3", "trafgen", "perf", "ip"} {
		testenv.NeedCommand(t, tool, "")
	}
}

var netnsLine = regexp.MustCompile(`(?m)^ip netns add (vnb-\S+)$`)

// checkRunLeftNothing checks that no process mentions the run directory
// and that the run's netns (from reproduce.sh) is gone.
func checkRunLeftNothing(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "reproduce.sh"))
	if err != nil {
		t.Errorf("no reproduce.sh: %v", err)
	}
	if m := netnsLine.FindSubmatch(b); m != nil {
		if _, err := os.Stat(filepath.Join("/run/netns", string(m[1]))); err == nil {
			t.Errorf("netns %s left behind", m[1])
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesMentioning(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left behind: %v", left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func processesMentioning(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

func readResults(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("results.jsonl line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// README's first run: go install ./cmd/vnetbench, then vnetbench run
// quickstart: a TCG guest, iperf3 and trafgen, perf stat on QEMU, 4
// samples, nothing left behind. The windows are 1 s instead of 5 s: the
// test checks that every sample measured, not what (make demo, in
// .ci/run, runs README's command with its 5 s windows).
func TestRunQuickstartE2E(t *testing.T) {
	needRunHost(t)
	// The binary of the README's go install path: with a C compiler on
	// the host (make deps installs gcc) it is dynamically linked, and its
	// libraries must go into the guest image.
	bin := goInstallBin(t)
	if _, err := exec.LookPath("gcc"); err == nil {
		if libs, err := vmimages.SharedLibs(bin); err != nil || len(libs) == 0 {
			t.Errorf("go install with gcc present made a static binary (%v): this test no longer covers the dynamic one", err)
		}
	}
	// -o relative to a working directory of the user's, as make demo
	// gives it: trafgen runs in a temporary directory and must still
	// find its config in the run directory.
	wd := t.TempDir()
	dir := filepath.Join(wd, "run")
	cmd := exec.CommandContext(t.Context(), bin, "run", "quickstart", "-o", "run", "--seed", "7", "--lock-wait", "30m",
		"--set", "generator.iperf3.duration=1s", "--set", "generator.trafgen.duration=1s")
	cmd.Dir = wd
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	checkRunLeftNothing(t, dir)
	if err != nil {
		t.Fatalf("run quickstart: %v", err)
	}
	if !strings.Contains(string(out), "seed 7") || !strings.Contains(string(out), "throughput_bps") {
		t.Errorf("output lacks the seed or the table")
	}
	samples := readResults(t, dir)
	if len(samples) != 4 {
		t.Fatalf("%d samples, want 4", len(samples))
	}
	for _, s := range samples {
		m := s["metrics"].(map[string]any)
		tp, _ := m["throughput_bps"].(float64)
		pps, _ := m["tx_pps"].(float64)
		rx, _ := m["rx_pps"].(float64)
		if tp <= 0 && pps <= 0 {
			t.Errorf("%v rep %v: no throughput: %v", s["cell"], s["rep"], m)
		}
		if rx <= 0 {
			t.Errorf("%v: guest received nothing: %v", s["cell"], m)
		}
		if _, ok := m["perf.task-clock"]; !ok {
			t.Errorf("%v: no perf stat on qemu: %v", s["cell"], m)
		}
		if s["emulated"] != true {
			t.Errorf("%v: TCG sample not marked emulated", s["cell"])
		}
	}
	for _, f := range []string{"env.json", "reproduce.sh"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// SIGINT during boot, traffic and perf: the run stops, tears down, and
// keeps what finished.
func TestRunSIGINTE2E(t *testing.T) {
	needRunHost(t)
	bin := vnetbenchBin(t)
	for _, tc := range []struct {
		name string
		// ready reports when to send SIGINT.
		ready func(dir string, since time.Duration) bool
	}{
		{"boot", func(dir string, since time.Duration) bool {
			_, err := os.Stat(filepath.Join(dir, "artifacts", "console-0.log"))
			return err == nil && since > 1500*time.Millisecond
		}},
		{"traffic", func(dir string, _ time.Duration) bool { return globAny(dir, "artifacts/*/*/0/warmup/*") }},
		{"perf", func(dir string, _ time.Duration) bool { return globAny(dir, "artifacts/*/*/0/perf-stat-*.csv") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			var out bytes.Buffer
			cmd := exec.Command(bin, "run", "quickstart", "-o", dir, "--seed", "3", "--lock-wait", "30m")
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			if ended, err := waitPhase(dir, done, tc.ready, 3*time.Minute); err != nil {
				if !ended {
					cmd.Process.Kill()
					<-done
				}
				t.Fatalf("phase %s: %v:\n%s", tc.name, err, out.String())
			}
			cmd.Process.Signal(syscall.SIGINT)
			select {
			case err := <-done:
				if code := cmd.ProcessState.ExitCode(); code != 130 {
					t.Errorf("run exited %d (%v) after SIGINT, want 130", code, err)
				}
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("run did not stop within 60s of SIGINT:\n%s", out.String())
			}
			t.Logf("%s", out.String())
			if !strings.Contains(out.String(), "interrupted") {
				t.Errorf("no 'interrupted' message")
			}
			checkRunLeftNothing(t, dir)
			readResults(t, dir) // every line still parses
		})
	}
}

// waitPhase waits until ready(dir, time in the run) holds. The time
// counts from when the run's directory appears: the run writes it once it
// holds the host lock, which another run may hold for minutes first
// (make test's test-gitlab lane measures quickstart beside this package;
// --lock-wait waits for it). It fails once the run ends first (ended) or
// has run limit without reaching the phase.
func waitPhase(dir string, done <-chan error, ready func(dir string, since time.Duration) bool, limit time.Duration) (ended bool, err error) {
	var start time.Time // when dir appeared
	for start.IsZero() || !ready(dir, time.Since(start)) {
		select {
		case err := <-done:
			return true, fmt.Errorf("the run ended (%v) before the phase", err)
		case <-time.After(50 * time.Millisecond):
		}
		if start.IsZero() {
			if _, err := os.Stat(dir); err == nil {
				start = time.Now()
			}
		} else if time.Since(start) > limit {
			return false, fmt.Errorf("not reached %v into the run", limit)
		}
	}
	return false, nil
}

// waitPhase counts the run's time from its directory, not from its
// start: a run that waits a second for the host lock (its directory
// absent) and reaches the phase 100 ms into the run is in time for a
// 700 ms limit; one that never reaches it fails at the limit; one that
// ends first is reported ended.
func TestWaitPhaseCountsFromTheRun(t *testing.T) {
	ready := func(dir string, _ time.Duration) bool {
		_, err := os.Stat(filepath.Join(dir, "phase"))
		return err == nil
	}
	run := func(phase bool) string {
		dir := filepath.Join(t.TempDir(), "run")
		go func() {
			time.Sleep(time.Second) // the host lock, held by another run
			os.Mkdir(dir, 0o755)
			time.Sleep(100 * time.Millisecond)
			if phase {
				os.WriteFile(filepath.Join(dir, "phase"), nil, 0o644)
			}
		}()
		return dir
	}
	if ended, err := waitPhase(run(true), make(chan error), ready, 700*time.Millisecond); ended || err != nil {
		t.Errorf("a run that waited for the lock: ended %v, %v", ended, err)
	}
	if ended, err := waitPhase(run(false), make(chan error), ready, 300*time.Millisecond); ended || err == nil || !strings.Contains(err.Error(), "not reached 300ms into the run") {
		t.Errorf("a run that never reaches the phase: ended %v, %v", ended, err)
	}
	done := make(chan error, 1)
	done <- errors.New("exit status 2")
	if ended, err := waitPhase(filepath.Join(t.TempDir(), "run"), done, ready, time.Minute); !ended || err == nil || !strings.Contains(err.Error(), "exit status 2") {
		t.Errorf("a run that ended: ended %v, %v", ended, err)
	}
}

func globAny(dir, pattern string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	return len(m) > 0
}
