package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
	"github.com/vnetbench/vnetbench/internal/proc"
	"github.com/vnetbench/vnetbench/internal/testenv"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var planCases = []struct {
	name string
	cfg  Config
}{
	{"simple", Config{Mode: ModeSimple, Dev: "vnbt0", Count: 100000, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"}},
	{"simple-t2-queue-xmit", Config{Mode: ModeSimple, Dev: "vnbt0", Threads: 2, Count: 50000, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56", XmitMode: "queue_xmit", Delay: 1500 * time.Nanosecond}},
	{"multiqueue-t4", Config{Mode: ModeMultiqueue, Dev: "vnbt0", Threads: 4, Dst: "198.18.0.0/30", DstMAC: "52:54:00:12:34:56", UDPDstMin: 9, UDPDstMax: 9}},
	{"burst-single-flow", Config{Mode: ModeBurstSingleFlow, Dev: "vnbt0", Threads: 2, FirstThread: 1, Burst: 32, Duration: 10 * time.Second, DstMAC: "52:54:00:12:34:56"}},
	{"multiqueue-ipv6", Config{Mode: ModeMultiqueue, Dev: "vnbt0", Count: 10, Dst: "fd00::1"}},
	// burst: 0 in a scenario is written as "burst 0" (the kernel takes it
	// as its minimum, 1); unset, burst is not written at all.
	{"multiqueue-t4-burst0", Config{Mode: ModeMultiqueue, Dev: "vnbt0", Threads: 4, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56", BurstSet: true}},
}

func TestPlanGolden(t *testing.T) {
	for _, c := range planCases {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewPlan(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, w := range p.Writes() {
				fmt.Fprintf(&b, "%s: %s\n", w.File, w.Cmd)
			}
			golden.Check(t, "plan-"+c.name+".golden", b.String())
		})
	}
}

func TestPlanErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: "turbo", Dev: "t"}, "unknown mode"},
		{Config{Mode: ModeSimple}, "no output device"},
		{Config{Mode: ModeSimple, Dev: "t"}, "needs dst_mac"},
		{Config{Mode: ModeSimple, Dev: "t", DstMAC: "52:54:00:12:34"}, "invalid dst_mac"},
		{Config{Mode: ModeSimple, Dev: "t", DstMAC: "52:54:00:12:34:56", Dst: "10.0.0.0/24"}, "single dst"},
		{Config{Mode: ModeMultiqueue, Dev: "t", Dst: "10.0.0.300"}, "invalid dst"},
		{Config{Mode: ModeBurstSingleFlow, Dev: "t"}, "set a duration"},
		{Config{Mode: ModeMultiqueue, Dev: "t", UDPSrcMin: 100, UDPSrcMax: 9}, "invalid UDP port range"},
		{Config{Mode: ModeMultiqueue, Dev: "t", XmitMode: "fast"}, "unknown xmit_mode"},
		{Config{Mode: ModeMultiqueue, Dev: "../x"}, "invalid device name"},
	} {
		_, err := NewPlan(c.cfg)
		if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "pktgen: ") {
			t.Errorf("%+v: got %v, want bad pktgen input with %q", c.cfg, err, c.want)
		}
	}
}

// fakePktgen simulates /proc/net/pktgen on a temp directory like the
// kernel's pktgen.c: add_device puts a device on a thread (its file lists
// it) and creates the device file, start fills each device's Result
// (blocking until stop when block is set), and every write is recorded.
// rem_device_all (and pgctrl reset, on every thread) only flags the
// thread; the thread acts on the flag lag later, or at the next start,
// after running its devices (pktgen_thread_worker handles T_RUN before
// T_REMDEVALL). lag 0 removes at once.
type fakePktgen struct {
	dir, sys string
	result   string
	block    bool
	// loseEarlyStop drops a stop written before the start, as a kpktgend
	// that takes both in one pass does (T_STOP before T_RUN).
	loseEarlyStop bool
	startLag      time.Duration
	// lateRun: the start write returns at once, as the kernel's does when
	// no thread has taken T_RUN within its 125 ms, and the threads start
	// their devices (Result: Starting) this much later, then run to their
	// end (until stop when block is set).
	lateRun time.Duration
	running bool
	failOn  string // command prefix that fails with errno 524
	lag     time.Duration

	mu      sync.Mutex
	log     []string
	stopped chan struct{}
	threads [5][]string // devices per kpktgend_N
	pending [5]bool     // T_REMDEVALL set, not yet acted on
	// dropsDuringRun is added to the tap's tx_dropped by the start write.
	dropsDuringRun uint64
}

func newFake(t *testing.T, carrier string) *fakePktgen {
	f := &fakePktgen{dir: t.TempDir(), sys: t.TempDir(), stopped: make(chan struct{})}
	os.WriteFile(filepath.Join(f.dir, "pgctrl"), nil, 0o644)
	for n := range f.threads {
		f.render(n)
	}
	os.MkdirAll(filepath.Join(f.sys, "vnbt0"), 0o755)
	os.WriteFile(filepath.Join(f.sys, "vnbt0", "carrier"), []byte(carrier+"\n"), 0o644)
	return f
}

func (f *fakePktgen) driver() *Driver {
	return &Driver{ProcDir: f.dir, SysNet: f.sys, Writer: f}
}

// render writes kpktgend_n as pktgen_thread_show prints it. Called with
// mu held (or before the fake is shared).
func (f *fakePktgen) render(n int) {
	var b strings.Builder
	b.WriteString("Running: \nStopped: ")
	for _, d := range f.threads[n] {
		b.WriteString(d + " ")
	}
	b.WriteString("\nResult: NA\n")
	// Whole or not at all, as the kernel's seq_file reads: the Driver
	// polls the file while the fake's "thread" rewrites it.
	writeWhole(filepath.Join(f.dir, "kpktgend_"+strconv.Itoa(n)), b.String())
}

// devs is every device on every thread.
func (f *fakePktgen) devs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ds := range f.threads {
		out = append(out, ds...)
	}
	return out
}

// flag sets T_REMDEVALL on thread n (mu held).
func (f *fakePktgen) flag(n int) {
	if f.lag == 0 {
		f.remAll(n)
		return
	}
	f.pending[n] = true
	time.AfterFunc(f.lag, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.pending[n] {
			f.remAll(n)
		}
	})
}

// remAll is pktgen_rem_all_ifs and the flag's clearing (mu held).
func (f *fakePktgen) remAll(n int) {
	for _, d := range f.threads[n] {
		os.Remove(filepath.Join(f.dir, d))
	}
	f.threads[n], f.pending[n] = nil, false
	f.render(n)
}

func (f *fakePktgen) WriteProc(path string, data []byte) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	file, cmd := filepath.Base(path), strings.TrimSuffix(string(data), "\n")
	f.mu.Lock()
	f.log = append(f.log, file+": "+cmd)
	if f.failOn != "" && strings.HasPrefix(cmd, f.failOn) {
		f.mu.Unlock()
		return errnoENOTSUPP
	}
	thread, isThread := strings.CutPrefix(file, "kpktgend_")
	n, _ := strconv.Atoi(thread)
	switch {
	case isThread && strings.HasPrefix(cmd, "add_device "):
		defer f.mu.Unlock()
		dev := strings.TrimPrefix(cmd, "add_device ")
		for _, ds := range f.threads {
			if slices.Contains(ds, dev) {
				return syscall.EBUSY // "interface already used"
			}
		}
		f.threads[n] = append(f.threads[n], dev)
		f.render(n)
		return os.WriteFile(filepath.Join(f.dir, dev), []byte("Result: Idle\n"), 0o644)
	case isThread && cmd == "rem_device_all":
		f.flag(n)
	case file == "pgctrl" && cmd == "reset":
		for n := range f.threads {
			f.flag(n)
		}
	case file == "pgctrl" && cmd == "start":
		if f.dropsDuringRun > 0 {
			// The tap drops while pktgen runs: tx_dropped grows between
			// the start write and its return.
			p := filepath.Join(f.sys, "vnbt0", "statistics", "tx_dropped")
			b, _ := os.ReadFile(p)
			n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			os.WriteFile(p, []byte(strconv.FormatUint(n+f.dropsDuringRun, 10)+"\n"), 0o644)
		}
		// T_RUN, then a T_REMDEVALL still pending: the devices go.
		for n := range f.threads {
			if f.pending[n] {
				f.remAll(n)
			}
		}
		if f.lateRun > 0 {
			f.mu.Unlock()
			go f.runLate()
			return nil
		}
		if f.startLag > 0 {
			// The threads take T_RUN this much later.
			f.mu.Unlock()
			time.Sleep(f.startLag)
			f.mu.Lock()
		}
		f.running = true
		f.mu.Unlock()
		if f.block {
			<-f.stopped
		}
		f.mu.Lock()
		for _, ds := range f.threads {
			for _, d := range ds {
				os.WriteFile(filepath.Join(f.dir, d), []byte(f.result), 0o644)
			}
		}
	case file == "pgctrl" && cmd == "stop":
		if f.loseEarlyStop && !f.running {
			break
		}
		select {
		case <-f.stopped:
		default:
			close(f.stopped)
		}
	}
	f.mu.Unlock()
	return nil
}

// runLate is the threads of a start whose write returned before they ran
// (lateRun).
func (f *fakePktgen) runLate() {
	time.Sleep(f.lateRun)
	f.mu.Lock()
	f.running = true
	for _, ds := range f.threads {
		for _, d := range ds {
			writeWhole(filepath.Join(f.dir, d), "Params: count 0\nResult: Starting\n")
		}
	}
	f.mu.Unlock()
	if f.block {
		<-f.stopped
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ds := range f.threads {
		for _, d := range ds {
			writeWhole(filepath.Join(f.dir, d), f.result)
		}
	}
}

// writeWhole replaces path's content in one step, as a seq_file read
// sees it: the Driver polls the files the fake's threads rewrite.
func writeWhole(path, text string) {
	os.WriteFile(path+".new", []byte(text), 0o644)
	os.Rename(path+".new", path)
}

// A start write that returns before the threads ran (their kpktgend took
// T_RUN after pktgen's 125 ms) is not the run's end: the Driver waits
// until no device is Idle or Starting, for a count-bounded run until the
// count is reached, for a timed one until the window's stop ended it. The
// 10th of a loop of lab e2e runs read "Result: Starting" 0.4 s into a 3 s
// window and reported a thread that sent no packets.
func TestStartReturnsBeforeThreadsRun(t *testing.T) {
	cfg := Config{Mode: ModeSimple, Dev: "vnbt0", Count: 100000, DstMAC: "52:54:00:12:34:56"}
	f := newFake(t, "1")
	f.lateRun = 300 * time.Millisecond
	f.result = fixture(t, "pktgen-tap0-L1-drain-ok.txt")
	res, err := f.driver().Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Threads) != 1 || !res.Threads[0].OK || res.Threads[0].Packets != 100000 || res.Stopped {
		t.Fatalf("count-bounded late run: %+v", res)
	}
	f = newFake(t, "1")
	f.lateRun, f.block, f.loseEarlyStop = 300*time.Millisecond, true, true
	f.result = fixture(t, "pktgen-tap0-L1-with-L2-vhost-off.txt")
	cfg.Count, cfg.Duration = 0, time.Second
	start := time.Now()
	res, err = f.driver().Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Threads) != 1 || !res.Threads[0].OK || !res.Stopped || res.Threads[0].Errors != 2537342 {
		t.Fatalf("timed late run: %+v", res)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the timed run returned after %v, before its 1 s window", d)
	}
	log := strings.Join(f.log, "\n")
	if !strings.Contains(log, "pgctrl: start\npgctrl: stop") {
		t.Errorf("want the window's stop after the start:\n%s", log)
	}
}

func TestRunFakeMultiqueue(t *testing.T) {
	f := newFake(t, "1")
	f.result = fixture(t, "pktgen-tap0-L1-drain-ok.txt")
	res, err := f.driver().Run(t.Context(), Config{Mode: ModeMultiqueue, Dev: "vnbt0", Threads: 2, Count: 100000, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped || len(res.Threads) != 2 {
		t.Fatalf("result %+v", res)
	}
	if res.Threads[1].Device != "vnbt0@1" || res.Threads[1].Thread != 1 || res.Threads[1].PPS != 155742 || res.Threads[1].Packets != 100000 {
		t.Errorf("thread 1: %+v", res.Threads[1])
	}
	if res.PPS() != 2*155742 || res.Packets() != 200000 || res.Errors() != 0 {
		t.Errorf("totals pps %v packets %v errors %v", res.PPS(), res.Packets(), res.Errors())
	}
	golden.Check(t, "run-multiqueue-t2.golden", strings.Join(f.log, "\n")+"\n")
	if d := f.devs(); len(d) != 0 {
		t.Errorf("devices left after the run: %v", d)
	}
}

func TestRunDeadlineStopsAndKeepsResult(t *testing.T) {
	f := newFake(t, "1")
	f.block = true
	f.result = fixture(t, "pktgen-tap0-L1-with-L2-vhost-off.txt")
	res, err := f.driver().Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", Count: 100000000, Duration: time.Millisecond, DstMAC: "52:54:00:12:34:56"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || len(res.Threads) != 1 || res.Threads[0].Errors != 2537342 || res.Threads[0].PPS != 7598 {
		t.Fatalf("result %+v", res)
	}
	log := strings.Join(f.log, "\n")
	if !strings.HasSuffix(log, "pgctrl: stop\nkpktgend_0: rem_device_all") {
		t.Errorf("want stop then the thread cleared at the end, got:\n%s", log)
	}
}

func TestRunContextCancelKeepsResult(t *testing.T) {
	f := newFake(t, "1")
	f.block = true
	f.result = fixture(t, "pktgen-tap0-L1-drain-ok.txt")
	d := f.driver()
	ctx, cancel := context.WithCancel(t.Context())
	s, err := d.Start(ctx, Config{Mode: ModeSimple, Dev: "vnbt0", DstMAC: "52:54:00:12:34:56"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, err := s.Wait(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if res == nil || len(res.Threads) != 1 || res.Threads[0].Packets != 100000 {
		t.Fatalf("result %+v", res)
	}
}

func TestRefuseNoCarrier(t *testing.T) {
	f := newFake(t, "0")
	_, err := f.driver().Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", DstMAC: "52:54:00:12:34:56"})
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "NO-CARRIER") {
		t.Fatalf("err = %v, want NO-CARRIER, a missing capability", err)
	}
	if len(f.log) != 0 {
		t.Errorf("wrote to pktgen despite no carrier: %v", f.log)
	}
	_, err = f.driver().Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt9", DstMAC: "52:54:00:12:34:56"})
	if !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing device: err = %v", err)
	}
	d := &Driver{ProcDir: filepath.Join(t.TempDir(), "none"), SysNet: f.sys}
	if err := d.Check("vnbt0"); !errors.Is(err, fault.ErrCapability) || !strings.Contains(err.Error(), "modprobe pktgen") {
		t.Fatalf("missing pktgen: err = %v", err)
	}
}

func TestBurstENOTSUPP(t *testing.T) {
	f := newFake(t, "1")
	f.failOn = "burst"
	_, err := f.driver().Run(t.Context(), Config{Mode: ModeBurstSingleFlow, Dev: "vnbt0", Burst: 32, Count: 10})
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "use burst: 0") {
		t.Fatalf("err = %v, want bad input suggesting burst: 0", err)
	}
	if got := f.log[len(f.log)-1]; got != "kpktgend_0: rem_device_all" {
		t.Errorf("last write %q, want the thread cleared", got)
	}
	if d := f.devs(); len(d) != 0 {
		t.Errorf("devices left after the failed setup: %v", d)
	}
	f = newFake(t, "1")
	f.failOn = "clone_skb"
	_, err = f.driver().Run(t.Context(), Config{Mode: ModeMultiqueue, Dev: "vnbt0", CloneSkb: 10})
	if !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "clone_skb: 0") {
		t.Fatalf("err = %v, want bad input suggesting clone_skb: 0", err)
	}
}

func TestRealWriteError(t *testing.T) {
	// writeProc on a missing file reports the path.
	d := &Driver{ProcDir: t.TempDir()}
	err := d.write("kpktgend_0", "add_device x")
	if err == nil || !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "kpktgend_0") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseResult(t *testing.T) {
	for _, c := range []struct {
		file                  string
		pps, packets, errs, u uint64
	}{
		{"pktgen-tap0-L1-drain-ok.txt", 155742, 100000, 0, 642086},
		{"pktgen-tap0-L1-nocarrier.txt", 0, 0, 0, 143},
		{"pktgen-tap0-L1-with-L2-vhost-off.txt", 7598, 100000, 2537342, 13160661},
	} {
		tr, err := ParseResult(fixture(t, c.file))
		if err != nil {
			t.Fatal(c.file, err)
		}
		if !tr.OK || tr.PPS != float64(c.pps) || tr.Packets != c.packets || tr.Errors != c.errs || tr.Usec != c.u {
			t.Errorf("%s: %+v", c.file, tr)
		}
	}
	tr, err := ParseResult("Params: count 1\nResult: Idle\n")
	if err != nil || tr.OK || tr.Msg != "Idle" {
		t.Errorf("idle: %+v %v", tr, err)
	}
	if _, err := ParseResult("nothing"); err == nil {
		t.Error("want error without Result line")
	}
}

func TestScriptCmdGolden(t *testing.T) {
	var b strings.Builder
	for _, c := range []ScriptConfig{
		// burst: 0 is passed as -b 0; burst unset passes no -b (the
		// scripts then leave burst unwritten, or use their own default).
		{Config: Config{Dev: "vnbt0", Count: 100000, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56", BurstSet: true}, KernelTree: "/src/linux"},
		{Config: Config{Dev: "vnbt0", Threads: 4, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"}, KernelTree: "/src/linux", Sample: ModeMultiqueue},
		{Config: Config{Dev: "vnbt0", Threads: 2, Duration: time.Second, Dst: "10.0.0.2; rm -rf /", DstMAC: "52:54:00:12:34:56"}, KernelTree: "/src/linux", Sample: ModeBurstSingleFlow},
		{Config: Config{Dev: "vnbt0", CountSet: true, Duration: time.Second, Dst: "198.18.0.0/24", UDPDstMin: 9, UDPDstMax: 10, Delay: time.Microsecond, FirstThread: 1}, KernelTree: "/src/linux", Sample: ModeBurstSingleFlow},
		// By file name, in the run's namespace; sample05 names devices DEV@N.
		{Config: Config{Dev: "vnbt0", Threads: 2, CountSet: true, Duration: time.Second, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"}, KernelTree: "/src/linux", Script: "pktgen_sample05_flow_per_thread.sh", Netns: "vnb-1"},
		// sample01 ignores -t and -f: refuse rather than measure one thread.
		{Config: Config{Dev: "vnbt0", Threads: 2, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"}, KernelTree: "/src/linux", Script: "pktgen_sample01_simple.sh"},
		// The scripts choose xmit mode and source ports themselves.
		{Config: Config{Dev: "vnbt0", XmitMode: "queue_xmit", Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"}, KernelTree: "/src/linux", Script: "pktgen_sample02_multiqueue.sh"},
		{Config: Config{Dev: "vnbt0", Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"}, KernelTree: "/src/linux", Script: "../../bin/evil.sh"},
	} {
		cmd, _, err := ScriptCmd(c)
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			continue
		}
		fmt.Fprintf(&b, "%s (in %s)\n", proc.Quote(cmd.FullArgv()), cmd.Dir)
	}
	golden.Check(t, "script-argv.golden", b.String())
}

// standInSample02 returns a kernel tree whose samples/pktgen holds a
// stand-in for pktgen_sample02_multiqueue.sh: a bash script that runs
// before, then prints the Results of devices vnbt0@0 and vnbt0@1 as the
// real one does (a real capture's Result lines).
func standInSample02(t *testing.T, before string) string {
	t.Helper()
	tree := t.TempDir()
	dir := filepath.Join(tree, "samples", "pktgen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res := fixture(t, "pktgen-tap0-L1-drain-ok.txt")
	tail := res[strings.Index(res, "Result:"):]
	script := "#!/bin/bash\n" + before + "for t in 0 1; do echo \"Device: vnbt0@$t\"; printf '%s' '" + tail + "'; done\n"
	if err := os.WriteFile(filepath.Join(dir, "pktgen_sample02_multiqueue.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return tree
}

func TestScriptRunsSampleAndParses(t *testing.T) {
	testenv.NeedFile(t, "/bin/bash", "the sample script's interpreter")
	f := newFake(t, "1")
	// A stand-in for sample02: prints what the real one prints (Device:
	// lines and grep -A2 "Result:" of each device file) and echoes its argv.
	tree := standInSample02(t, "echo \"args: $*\" >&2\n")
	// The devices the real script configures (the stand-in writes no
	// pktgen file), left on their threads like a script's exit leaves them.
	for n := range 2 {
		if err := f.WriteProc(filepath.Join(f.dir, fmt.Sprintf("kpktgend_%d", n)), fmt.Appendf(nil, "add_device vnbt0@%d\n", n)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := f.driver().Script(t.Context(), proc.Real{}, ScriptConfig{
		Config:     Config{Dev: "vnbt0", Threads: 2, Count: 100000, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"},
		KernelTree: tree, Sample: ModeMultiqueue})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Threads) != 2 || r.PPS() != 2*155742 || r.Threads[1].Device != "vnbt0@1" {
		t.Fatalf("result %+v", r)
	}
	if got := strings.Join(f.log[len(f.log)-2:], "\n"); got != "kpktgend_0: rem_device_all\nkpktgend_1: rem_device_all" {
		t.Errorf("last writes %q, want both threads cleared", got)
	}
	if d := f.devs(); len(d) != 0 {
		t.Errorf("devices left after the script: %v", d)
	}
}

// A sample script whose start returned before a thread ran prints that
// device's Result as Idle (or Starting): the run is void, an error naming
// the device, not a thread that sent no packets.
func TestScriptUnfinishedResultIsVoid(t *testing.T) {
	testenv.NeedFile(t, "/bin/bash", "the sample script's interpreter")
	f := newFake(t, "1")
	tree := standInSample02(t, "")
	p := filepath.Join(tree, "samples", "pktgen", "pktgen_sample02_multiqueue.sh")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Thread 1's device had not run: its Result reads Idle.
	script := strings.Replace(string(b), "for t in 0 1;", "for t in 0;", 1) + "echo 'Device: vnbt0@1'; echo 'Result: Idle'\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := f.driver().Script(t.Context(), proc.Real{}, ScriptConfig{
		Config:     Config{Dev: "vnbt0", Threads: 2, Count: 100000, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"},
		KernelTree: tree, Sample: ModeMultiqueue})
	if err == nil || !errors.Is(err, fault.ErrVoid) || !strings.Contains(err.Error(), `vnbt0@1: the script printed "Result: Idle"`) || !strings.Contains(err.Error(), "the run is void") || strings.Contains(err.Error(), "vnbt0@0") {
		t.Fatalf("err = %v, want the run void for vnbt0@1 alone", err)
	}
	if r == nil || len(r.Threads) != 2 || !r.Threads[0].OK {
		t.Errorf("result %+v: want both threads, thread 0's finished", r)
	}
}

// A script's window opens when it starts pktgen (the samples print
// StartMarker right before pgctrl start), not when the script starts: a
// SIGINT during its setup, before it traps SIGINT, would kill it with no
// result. The stand-in spends 1.5 s in "setup", longer than its 1 s
// duration, then blocks like pgctrl start until interrupted, and prints
// its Results after the SIGINT as the samples do.
func TestScriptWindowOpensAtStart(t *testing.T) {
	testenv.NeedFile(t, "/bin/bash", "the sample script's interpreter")
	f := newFake(t, "1")
	tree := standInSample02(t, "sleep 1.5\ntrap true SIGINT\necho '"+StartMarker+"' >&2\nsleep 60 >/dev/null 2>&1 & pid=$!; wait $pid; kill $pid\n")
	start := time.Now()
	r, err := f.driver().Script(t.Context(), proc.Real{}, ScriptConfig{
		Config:     Config{Dev: "vnbt0", Threads: 2, CountSet: true, Duration: time.Second, Dst: "10.0.0.2", DstMAC: "52:54:00:12:34:56"},
		KernelTree: tree, Sample: ModeMultiqueue})
	if err != nil {
		t.Fatalf("err = %v after %s (a SIGINT during the script's setup leaves no result)", err, time.Since(start).Round(time.Millisecond))
	}
	if !r.Stopped || len(r.Threads) != 2 || r.PPS() != 2*155742 {
		t.Fatalf("result %+v", r)
	}
	if el := time.Since(start); el < 2500*time.Millisecond {
		t.Errorf("the script was stopped %s after its start: before its 1.5 s setup plus the 1 s window", el.Round(time.Millisecond))
	}
}

func TestMarkerWriterSplit(t *testing.T) {
	w := &markerWriter{marker: []byte(StartMarker), seen: make(chan struct{})}
	for _, part := range []string{"Running sample: pktgen\n", "Runn", "ing... ctrl", "^C to stop\n"} {
		w.Write([]byte(part))
	}
	select {
	case <-w.seen:
	default:
		t.Fatal("marker split across writes not seen")
	}
	w2 := &markerWriter{marker: []byte(StartMarker), seen: make(chan struct{})}
	w2.Write([]byte("Running... ctrl^C to sto"))
	select {
	case <-w2.seen:
		t.Fatal("a partial marker was taken for the marker")
	default:
	}
}

func TestParseScriptOutputSample01(t *testing.T) {
	out := "Result device: vnbt0\n" + fixture(t, "pktgen-tap0-L1-drain-ok.txt")
	m := ParseScriptOutput(out)
	if tr, ok := m["vnbt0"]; !ok || tr.PPS != 155742 {
		t.Fatalf("got %+v", m)
	}
}

// Every write (pgctrl and device files, the blocking start and the
// deadline's stop included) goes through InNetns: pgctrl acts on the
// writing task's namespace, so a Driver for another netns must write from
// inside it. The write sequence is the same as without the hook.
func TestInNetnsWrapsEveryWrite(t *testing.T) {
	f := newFake(t, "1")
	f.block = true
	f.result = fixture(t, "pktgen-tap0-L1-with-L2-vhost-off.txt")
	var calls atomic.Int64
	d := f.driver()
	d.InNetns = func(fn func() error) error {
		calls.Add(1)
		return fn()
	}
	res, err := d.Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", Count: 100000000, Duration: time.Millisecond, DstMAC: "52:54:00:12:34:56"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || len(res.Threads) != 1 {
		t.Errorf("result %+v", res)
	}
	f.mu.Lock()
	log := slices.Clone(f.log)
	f.mu.Unlock()
	if int(calls.Load()) != len(log) {
		t.Errorf("%d InNetns calls for %d writes:\n%s", calls.Load(), len(log), strings.Join(log, "\n"))
	}
	for _, want := range []string{"kpktgend_0: rem_device_all", "pgctrl: start", "pgctrl: stop", "vnbt0: count 100000000", "kpktgend_0: add_device vnbt0"} {
		if !slices.Contains(log, want) {
			t.Errorf("no %q write:\n%s", want, strings.Join(log, "\n"))
		}
	}
}

// The tap's drops are read right before the start write and right after
// it returns, so Lost covers pktgen's run and nothing else (not the setup
// writes, not the Result reads); RunTime is pktgen's own clock of the run.
func TestRunTxDroppedBracket(t *testing.T) {
	f := newFake(t, "1")
	f.result = fixture(t, "pktgen-tap0-L1-with-L2-vhost-off.txt")
	f.dropsDuringRun = 2537342
	os.MkdirAll(filepath.Join(f.sys, "vnbt0", "statistics"), 0o755)
	os.WriteFile(filepath.Join(f.sys, "vnbt0", "statistics", "tx_dropped"), []byte("1000\n"), 0o644)
	res, err := f.driver().Run(t.Context(), Config{Mode: ModeMultiqueue, Dev: "vnbt0", Threads: 2, Count: 100000, DstMAC: "52:54:00:12:34:56"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TxDroppedOK || res.TxDropped != 2537342 {
		t.Errorf("tx_dropped over the run: %d (ok %v), want 2537342", res.TxDropped, res.TxDroppedOK)
	}
	if rt := res.RunTime(); rt != 13160661*time.Microsecond {
		t.Errorf("run time %v, want pktgen's 13.160661s", rt)
	}
	// No statistics (a device without them): not ok, not zero.
	g := newFake(t, "1")
	g.result = f.result
	res, err = g.driver().Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", Count: 100000, DstMAC: "52:54:00:12:34:56"})
	if err != nil || res.TxDroppedOK {
		t.Errorf("no statistics: ok %v, err %v", res.TxDroppedOK, err)
	}
}

// pktgen acts on rem_device_all and pgctrl reset when its thread next
// runs, and handles a start before a removal: a run configured while a
// removal is pending is void (the lab e2e's "open .../vnbt1: no such file
// or directory", kpktgend_0 starved under TCG). The fake reproduces that
// with the kernel's own sequence, and the Driver, which flags only the
// threads that list a device and waits for them, runs through it.
func TestLateRemovalDoesNotVoidRun(t *testing.T) {
	const lag = 300 * time.Millisecond
	// The kernel's samples' sequence: reset, add, start within the lag.
	k := newFake(t, "1")
	k.lag = lag
	for _, w := range [][2]string{{"pgctrl", "reset"}, {"kpktgend_0", "add_device vnbt0"}, {"pgctrl", "start"}} {
		if err := k.WriteProc(filepath.Join(k.dir, w[0]), []byte(w[1]+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(k.dir, "vnbt0")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("fake: a start before the pending removal kept the device (%v); it must model pktgen_thread_worker", err)
	}

	f := newFake(t, "1")
	f.lag = lag
	f.result = fixture(t, "pktgen-tap0-L1-drain-ok.txt")
	// A previous run's device left on thread 3.
	if err := f.WriteProc(filepath.Join(f.dir, "kpktgend_3"), []byte("add_device vnbt0@3\n")); err != nil {
		t.Fatal(err)
	}
	f.log = nil
	begin := time.Now()
	res, err := f.driver().Run(t.Context(), Config{Mode: ModeMultiqueue, Dev: "vnbt0", Threads: 2, Count: 100000, DstMAC: "52:54:00:12:34:56"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Threads) != 2 || res.Packets() != 200000 {
		t.Fatalf("result %+v", res)
	}
	if took := time.Since(begin); took < 2*lag {
		t.Errorf("run took %v: it cannot have waited for both removals (%v each)", took, lag)
	}
	f.mu.Lock()
	log := slices.Clone(f.log)
	f.mu.Unlock()
	if log[0] != "kpktgend_3: rem_device_all" || slices.Contains(log, "pgctrl: reset") || slices.Index(log, "kpktgend_0: rem_device_all") < slices.Index(log, "pgctrl: start") {
		t.Errorf("want the leftover's thread cleared first, no reset, the run's threads cleared only at the end:\n%s", strings.Join(log, "\n"))
	}
	if d := f.devs(); len(d) != 0 {
		t.Errorf("devices left after the run: %v", d)
	}
}

// A removal someone else asked for (a sample script's reset, an echo by
// hand) that the thread has not acted on voids the run: the error says
// so instead of only "no such file or directory".
func TestVoidRunSaysWhy(t *testing.T) {
	f := newFake(t, "1")
	f.lag = time.Hour
	f.result = fixture(t, "pktgen-tap0-L1-drain-ok.txt")
	if err := f.WriteProc(filepath.Join(f.dir, "pgctrl"), []byte("reset\n")); err != nil {
		t.Fatal(err)
	}
	_, err := f.driver().Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", Count: 1000, DstMAC: "52:54:00:12:34:56"})
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, fault.ErrVoid) || !strings.Contains(err.Error(), "kpktgend_0 removed the device before it ran") {
		t.Fatalf("err = %v, want the void run explained", err)
	}
}

// A thread that never acts on rem_device_all: Clear gives up after
// ClearTimeout with the thread and its devices named, and nothing is
// configured on top of them.
func TestClearTimeout(t *testing.T) {
	f := newFake(t, "1")
	f.lag = time.Hour
	if err := f.WriteProc(filepath.Join(f.dir, "kpktgend_2"), []byte("add_device vnbt0@2\n")); err != nil {
		t.Fatal(err)
	}
	f.log = nil
	d := f.driver()
	d.ClearTimeout = 200 * time.Millisecond
	_, err := d.Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", Count: 1000, DstMAC: "52:54:00:12:34:56"})
	if err == nil || !strings.Contains(err.Error(), "kpktgend_2 still lists vnbt0@2 200ms after rem_device_all") {
		t.Fatalf("err = %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.log, []string{"kpktgend_2: rem_device_all"}) {
		t.Errorf("want only the stuck thread's rem_device_all, got %q", f.log)
	}
}

// A stop that reaches pktgen before the start is lost (the thread takes
// T_STOP before T_RUN): the Driver writes its stop only after issuing the
// start, and again every second until the start returns, so a 1 ms
// window still ends in about a second instead of at the stop grace.
func TestStopBeforeStartIsRepeated(t *testing.T) {
	for range 2 {
		f := newFake(t, "1")
		f.block, f.loseEarlyStop, f.startLag = true, true, 100*time.Millisecond
		f.result = fixture(t, "pktgen-tap0-L1-drain-ok.txt")
		d := f.driver()
		d.StopGrace = 10 * time.Second
		begin := time.Now()
		res, err := d.Run(t.Context(), Config{Mode: ModeSimple, Dev: "vnbt0", Count: 0, Duration: time.Millisecond, DstMAC: "52:54:00:12:34:56"})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(begin); !res.Stopped || took > 3*time.Second {
			t.Fatalf("stopped %v after %v, want a stop within ~1 s", res.Stopped, took)
		}
		f.mu.Lock()
		log := slices.Clone(f.log)
		f.mu.Unlock()
		if stops := slices.DeleteFunc(log, func(w string) bool { return w != "pgctrl: stop" }); len(stops) < 2 {
			t.Fatalf("%d stop writes, want the lost one repeated", len(stops))
		}
	}
}
