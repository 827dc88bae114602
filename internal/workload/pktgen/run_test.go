package pktgen

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/metric"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/internal/workload"
	pg "github.com/vnetbench/vnetbench/internal/workload/pktgen/driver"
)

const (
	guestIP  = "10.0.0.2"
	guestMAC = "52:54:00:12:34:56"
)

// threadFiles writes kpktgend_0..n-1 in procDir as the kernel shows a
// thread with no device, and returns an InNetns that, after each write,
// makes a thread file answer like the kernel: a written "add_device DEV"
// lists DEV, a written "rem_device_all" lists nothing. devs are the
// devices each thread starts with (what a sample script leaves).
func threadFiles(t *testing.T, procDir string, devs ...string) func(fn func() error) error {
	t.Helper()
	show := func(n int, dev string) {
		if dev != "" {
			dev += " " // pktgen_thread_show prints "%s " per device
		}
		if err := os.WriteFile(filepath.Join(procDir, "kpktgend_"+strconv.Itoa(n)), []byte("Running: \nStopped: "+dev+"\nResult: NA\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for n, d := range devs {
		show(n, d)
	}
	return func(fn func() error) error {
		err := fn()
		for n := range devs {
			b, _ := os.ReadFile(filepath.Join(procDir, "kpktgend_"+strconv.Itoa(n)))
			// A write does not truncate: the command is the first line.
			switch cmd, _, _ := strings.Cut(string(b), "\n"); {
			case strings.HasPrefix(cmd, "add_device "):
				show(n, strings.TrimPrefix(cmd, "add_device "))
			case cmd == "rem_device_all":
				show(n, "")
			}
		}
		return err
	}
}

// The pktgen generator against a fake /proc/net/pktgen: the plan's writes
// land in the files, every write goes through InNetns, the Result is parsed.
func TestPktgenGeneratorFakeProc(t *testing.T) {
	dir := t.TempDir()
	// A fake /proc/PID of a process in the tap's namespace.
	nsProc := filepath.Join(dir, "proc", "4242")
	procDir, sysNet := filepath.Join(nsProc, "net", "pktgen"), filepath.Join(nsProc, "root", "sys", "class", "net")
	os.MkdirAll(procDir, 0o755)
	os.MkdirAll(filepath.Join(sysNet, "vnbt0"), 0o755)
	for _, f := range []string{"pgctrl", "vnbt0"} {
		os.WriteFile(filepath.Join(procDir, f), nil, 0o644)
	}
	kernel := threadFiles(t, procDir, "")
	os.WriteFile(filepath.Join(sysNet, "vnbt0", "carrier"), []byte("1\n"), 0o644)
	var inNS []string
	var notes []string
	w := &workload.Window{NetnsProc: nsProc, Dev: "vnbt0", Dst: guestIP, DstMAC: guestMAC, Artifacts: dir, RelDir: "artifacts/c/host/0",
		InNetns: func(fn func() error) error { inNS = append(inNS, "write"); return kernel(fn) },
		Note:    func(l string) { notes = append(notes, l) }}
	g := &Generator{cfg: Config{Mode: "simple", Threads: 1, Count: 100000, PktSize: 60}}
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	fixture, _ := os.ReadFile("testdata/pktgen-tap0-L1-drain-ok.txt")
	os.WriteFile(filepath.Join(procDir, "vnbt0"), fixture, 0o644)
	time.Sleep(50 * time.Millisecond)
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// tx_pps: the packets over pktgen's own run time (642086 usec);
	// per thread, pktgen's own (integer) pps.
	if !near(res.Metrics["tx_pps"], 100000/0.642086) || res.Metrics["tx_run_s"] != 0.642086 || res.Packets != 100000 ||
		res.Metrics["pktgen_errors"] != 0 || len(res.Threads) != 1 || res.Threads[0].TxPPS != 155742 {
		t.Errorf("result %+v", res)
	}
	// Every write from inside the netns (pgctrl acts on the writer's
	// namespace): the plan's setup, start, and clearing the thread.
	if want := len(g.sess.Plan().Setup) + 2; len(inNS) != want {
		t.Errorf("writes through InNetns: %d, want %d", len(inNS), want)
	}
	if got, _ := os.ReadFile(filepath.Join(procDir, "pgctrl")); strings.TrimSpace(string(got)) != "start" {
		t.Errorf("pgctrl last write %q, want start (no reset)", got)
	}
	if got, _ := os.ReadFile(filepath.Join(procDir, "kpktgend_0")); !strings.Contains(string(got), "Stopped: \n") {
		t.Errorf("kpktgend_0 not cleared after the run:\n%s", got)
	}
	if len(notes) == 0 || !strings.Contains(notes[len(notes)-1], `echo start > `+procDir+"/pgctrl") {
		t.Errorf("notes %v", notes)
	}
	// NO-CARRIER is refused before any write.
	os.WriteFile(filepath.Join(sysNet, "vnbt0", "carrier"), []byte("0\n"), 0o644)
	g = &Generator{cfg: Config{Mode: "simple", Threads: 1, Count: 10}}
	err = g.Start(t.Context(), w)
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "NO-CARRIER") {
		t.Errorf("no carrier: %v", err)
	}
}

// Script mode runs the kernel's sample script from script_dir (here a
// stand-in that records its argv and, like sample02, prints the Results
// when interrupted), SIGINTs it at the window's end, takes the printed
// Result of one device and reads the other from the proc directory, keeps
// the script's output as an artifact and resets pktgen.
func TestPktgenGeneratorScriptMode(t *testing.T) {
	testenv.NeedCommand(t, "bash", "bash")
	dir := t.TempDir()
	// A fake /proc/PID of a process in the tap's namespace.
	nsProc := filepath.Join(dir, "proc", "4242")
	procDir, sysNet := filepath.Join(nsProc, "net", "pktgen"), filepath.Join(nsProc, "root", "sys", "class", "net")
	tree := filepath.Join(dir, "linux")
	samples := filepath.Join(tree, "samples", "pktgen")
	for _, d := range []string{procDir, filepath.Join(sysNet, "vnbt0"), samples} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(sysNet, "vnbt0", "carrier"), []byte("1\n"), 0o644)
	fixture, err := os.ReadFile("testdata/pktgen-tap0-L1-drain-ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(procDir, "pgctrl"), nil, 0o644)
	os.WriteFile(filepath.Join(procDir, "vnbt0@0"), fixture, 0o644)
	// The threads as the script leaves them: one device each.
	kernel := threadFiles(t, procDir, "vnbt0@0", "vnbt0@1")
	os.WriteFile(filepath.Join(samples, "result"), fixture, 0o644)
	script := `#!/bin/bash
echo "$@" > "$(dirname "$0")/args"
trap 'echo "Device: vnbt0@1"; cat "$(dirname "$0")/result"; exit 0' INT
echo "Running... ctrl^C to stop" >&2
sleep 30
`
	os.WriteFile(filepath.Join(samples, "pktgen_sample02_multiqueue.sh"), []byte(script), 0o755)
	w := &workload.Window{Exec: proc.Real{}, NetnsProc: nsProc, Dev: "vnbt0", Dst: guestIP, DstMAC: guestMAC, Artifacts: dir, RelDir: "artifacts/c/host/0",
		InNetns: kernel, Duration: time.Second} // bash must reach its trap before the SIGINT, also on a loaded machine
	g := &Generator{cfg: Config{Mode: "script", ScriptDir: tree, Script: "pktgen_sample02_multiqueue.sh",
		Threads: 2, Count: 100000, PktSize: 60}}
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Threads) != 2 || !near(res.Metrics["tx_pps"], 200000/0.642086) || res.Threads[1].I != 1 {
		t.Errorf("result %+v", res)
	}
	// Each thread's loss is its errors per second of its own run time.
	for _, th := range res.Threads {
		if th.LostPPS == nil {
			t.Errorf("thread %d: no lost_pps", th.I)
		}
	}
	args, _ := os.ReadFile(filepath.Join(samples, "args"))
	if want := "-i vnbt0 -m " + guestMAC + " -d " + guestIP + " -n 0 -t 2 -b 0 -s 60"; strings.TrimSpace(string(args)) != want {
		t.Errorf("script argv %q, want %q", args, want)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "pktgen-script.log"))
	if !strings.Contains(string(log), "Device: vnbt0@1") || !strings.Contains(string(log), "Running... ctrl^C") {
		t.Errorf("pktgen-script.log:\n%s", log)
	}
	for _, th := range []string{"kpktgend_0", "kpktgend_1"} {
		if got, _ := os.ReadFile(filepath.Join(procDir, th)); !strings.Contains(string(got), "Stopped: \n") {
			t.Errorf("%s not cleared after the script:\n%s", th, got)
		}
	}
	// A missing script is input to fix, refused before anything runs.
	g = &Generator{cfg: Config{Mode: "script", ScriptDir: dir, Script: "pktgen_sample02_multiqueue.sh", Threads: 2}}
	err = g.Start(t.Context(), w)
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing script: %v", err)
	}
}

// burst: 0 reaches pktgen as "burst 0" (and as -b 0 in script mode);
// burst: default writes nothing, in both.
func TestBurstWrittenAsGiven(t *testing.T) {
	env := workload.PlanEnv{Netns: "vnb-1", Dev: "vnbt0", Dst: guestIP, DstMAC: guestMAC}
	for _, c := range []struct {
		cfg  Config
		want string // "" = no burst at all
	}{
		{Config{Mode: ModeMultiqueue, Threads: 4, Count: 10, PktSize: 60, Burst: 0}, `echo 'burst 0' > /proc/net/pktgen/vnbt0@3`},
		{Config{Mode: ModeSimple, Threads: 1, Count: 10, PktSize: 60, Burst: 1}, `echo 'burst 1' > /proc/net/pktgen/vnbt0`},
		{Config{Mode: ModeSimple, Threads: 1, Count: 10, PktSize: 60, Burst: -1}, ""},
		{Config{Mode: ModeScript, ScriptDir: "/src/linux", Script: DefaultScript, Threads: 1, Count: 10, PktSize: 60, Burst: 0}, " -b 0 "},
		{Config{Mode: ModeScript, ScriptDir: "/src/linux", Script: DefaultScript, Threads: 1, Count: 10, PktSize: 60, Burst: -1}, ""},
	} {
		all := strings.Join(c.cfg.Commands(env), "\n")
		if c.want == "" {
			if strings.Contains(all, "burst") || strings.Contains(all, " -b ") {
				t.Errorf("burst %d (default) is written:\n%s", c.cfg.Burst, all)
			}
			continue
		}
		if !strings.Contains(all, c.want) {
			t.Errorf("burst %d: want %q in\n%s", c.cfg.Burst, c.want, all)
		}
	}
}

// One clock for Transmitted and Lost (the lab case of the netdev thread
// review): pktgen sent 5000 packets in 1.176148 s (4251 pps by its own
// count) while the tap dropped 261164; both rates are over pktgen's run
// time, so Lost is 222 kpps, not the 97.7 kpps a 2.7 s harness window
// made of it. Per thread: pktgen's own pps and errors over its own time.
func TestAddResultOneClock(t *testing.T) {
	th := func(i int, usec, pkts, errs uint64) pg.ThreadResult {
		return pg.ThreadResult{Thread: i, OK: true, Usec: usec, Packets: pkts, PPS: float64(pkts * 1000000 / usec), Errors: errs}
	}
	r := &workload.Result{}
	addResult(r, &pg.Result{Threads: []pg.ThreadResult{th(0, 1176148, 5000, 261164)}, Elapsed: 2700 * time.Millisecond,
		TxDropped: 261164, TxDroppedOK: true})
	if got, want := r.Metrics["lost_pps"], 261164/1.176148; !near(got, want) {
		t.Errorf("lost_pps %.0f, want %.0f (tap drops over pktgen's run time)", got, want)
	}
	if got, want := r.Metrics["tx_pps"], 5000/1.176148; !near(got, want) || r.Metrics["tx_run_s"] != 1.176148 {
		t.Errorf("tx_pps %.1f over %vs, want %.1f", got, r.Metrics["tx_run_s"], want)
	}
	// Four threads on one queue end at different times: the totals are
	// all packets (and all drops) over the longest thread's run; per
	// thread, each over its own.
	r = &workload.Result{}
	addResult(r, &pg.Result{Threads: []pg.ThreadResult{th(0, 2000000, 1000, 40), th(1, 1000000, 1000, 20), th(2, 1500000, 1000, 0), th(3, 2000000, 1000, 10)},
		TxDropped: 70, TxDroppedOK: true})
	if r.Metrics["tx_pps"] != 2000 || r.Metrics["lost_pps"] != 35 || r.Packets != 4000 {
		t.Errorf("totals: tx %v lost %v packets %d, want 2000, 35, 4000", r.Metrics["tx_pps"], r.Metrics["lost_pps"], r.Packets)
	}
	if r.Threads[1].TxPPS != 1000 || *r.Threads[1].LostPPS != 20 || *r.Threads[0].LostPPS != 20 {
		t.Errorf("thread 1: %v pps, lost %v; thread 0 lost %v", r.Threads[1].TxPPS, *r.Threads[1].LostPPS, *r.Threads[0].LostPPS)
	}
	// Without the tap's drops the runner's (window) Lost stays: no
	// lost_pps from the workload.
	r = &workload.Result{}
	addResult(r, &pg.Result{Threads: []pg.ThreadResult{th(0, 1000000, 10, 0)}})
	if _, ok := r.Metrics["lost_pps"]; ok {
		t.Errorf("lost_pps without tx_dropped: %v", r.Metrics)
	}
}

// Threads that sent nothing (a kpktgend starved behind a vhost worker
// pinned to its CPU) are one warning per run naming them all: the report
// counts warnings per run ("1 of 1 runs", not "3 of 1").
func TestSilentThreadsOneWarning(t *testing.T) {
	th := func(i int, pkts uint64) pg.ThreadResult {
		return pg.ThreadResult{Thread: i, OK: true, Usec: 3000000, Packets: pkts, PPS: float64(pkts) / 3}
	}
	r := &workload.Result{}
	addResult(r, &pg.Result{Threads: []pg.ThreadResult{th(0, 0), th(1, 900), th(2, 0), th(3, 0)}})
	if want := []string{"pktgen threads 0, 2, 3 sent no packets"}; !slices.Equal(r.Warnings, want) {
		t.Errorf("warnings %q, want %q", r.Warnings, want)
	}
	r = &workload.Result{}
	addResult(r, &pg.Result{Threads: []pg.ThreadResult{th(0, 10), th(1, 0)}})
	if want := []string{"pktgen thread 1 sent no packets"}; !slices.Equal(r.Warnings, want) {
		t.Errorf("warnings %q, want %q", r.Warnings, want)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }

// kpktgend_0 exists once per network namespace: the generator takes the
// run's namespace's thread (Window.KernelThreads) for perf and the busy
// share. Counting init_net's idle kpktgend_0 too would halve the share
// and warn "~50% busy" falsely.
func TestPktgenThreadsOfTheRunNamespace(t *testing.T) {
	dir := t.TempDir()
	nsProc := filepath.Join(dir, "proc", "4242")
	procDir, sysNet := filepath.Join(nsProc, "net", "pktgen"), filepath.Join(nsProc, "root", "sys", "class", "net")
	os.MkdirAll(procDir, 0o755)
	os.MkdirAll(filepath.Join(sysNet, "vnbt0"), 0o755)
	for _, f := range []string{"pgctrl", "vnbt0"} {
		os.WriteFile(filepath.Join(procDir, f), nil, 0o644)
	}
	kernel := threadFiles(t, procDir, "")
	os.WriteFile(filepath.Join(sysNet, "vnbt0", "carrier"), []byte("1\n"), 0o644)
	fp := proc.NewFakeProc(filepath.Join(dir, "host-proc"))
	os.MkdirAll(fp.Root, 0o755)
	fp.KernelThread(60, "kpktgend_0", 100, 5)   // init_net's
	fp.KernelThread(900, "kpktgend_0", 5000, 0) // the run's namespace's
	var asked []string
	w := &workload.Window{NetnsProc: nsProc, Dev: "vnbt0", Dst: guestIP, DstMAC: guestMAC, Artifacts: dir, RelDir: "a",
		InNetns: kernel, Proc: fp.FS(),
		KernelThreads: func(name string) ([]int, string) { asked = append(asked, name); return []int{900}, "" }}
	g := &Generator{cfg: Config{Mode: "simple", Threads: 1, Count: 100000, PktSize: 60}}
	if err := g.Prepare(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if tids, _ := g.Threads(); !slices.Equal(tids, []int{900}) || !slices.Equal(asked, []string{"kpktgend_0"}) {
		t.Fatalf("threads %v (asked %v), want [900] for kpktgend_0", tids, asked)
	}
	if err := g.Start(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	fixture, _ := os.ReadFile("testdata/pktgen-tap0-L1-drain-ok.txt")
	os.WriteFile(filepath.Join(procDir, "vnbt0"), fixture, 0o644)
	fp.KernelThread(900, "kpktgend_0", 5000, 64) // 0.64 s of CPU
	if err := fp.Err(); err != nil {
		t.Fatal(err)
	}
	res, err := g.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The CPU time is read from the injected /proc, thread 900 only, over
	// the session's wall time (at least pktgen's 0.642 s in a real run;
	// well under it here, where nothing sends).
	if res.BusyFrac <= 0 {
		t.Errorf("busy share %v: thread 900's 64 ticks were not read from the injected /proc", res.BusyFrac)
	}
}

// A count-bound run that pktgen finished in milliseconds (KVM speed) is
// warned about, with the fix; a long one, or one bounded by time, is not.
func TestShortRunWarning(t *testing.T) {
	res := func(run float64) *workload.Result {
		return &workload.Result{Metrics: map[metric.Key]float64{"tx_run_s": run}}
	}
	if w := shortRunWarning(Config{Count: 20000}, res(0.023)); !strings.Contains(w, "20000 packets per thread) in 23 ms") || !strings.Contains(w, "duration: 5s") {
		t.Errorf("23 ms run: %q", w)
	}
	for _, tc := range []struct {
		cfg Config
		run float64
	}{{Config{Count: 20000}, 4.2}, {Config{Duration: 3 * time.Second}, 0.2}, {Config{Count: 10}, 0}} {
		if w := shortRunWarning(tc.cfg, res(tc.run)); w != "" {
			t.Errorf("%+v over %v s: %q", tc.cfg, tc.run, w)
		}
	}
}
